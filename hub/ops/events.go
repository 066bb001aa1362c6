package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/schema"
)

// EventFilter selects archive rows. Zero fields match everything.
type EventFilter struct {
	Provider string
	Type     string
	Status   hub.Status // empty: every status but SKIPPED (first deliveries)
	Since    time.Time
	Until    time.Time
	Limit    int // 1..MaxListLimit (DefaultListLimit is a good value)
}

// check refuses filters no archive row can match and limits out of range.
func (f EventFilter) check() error {
	if err := checkProvider("provider", f.Provider); err != nil {
		return err
	}
	if err := checkText("type", f.Type, maxEventTypeLen); err != nil {
		return err
	}
	if !f.Until.IsZero() && !f.Since.IsZero() && !f.Until.After(f.Since) {
		return inputErr("until", "must be after since")
	}
	return checkLimit(f.Limit)
}

// EventRow is one archive row in a listing.
type EventRow struct {
	ArchiveID  string    `json:"archive_id"`
	Provider   string    `json:"provider"`
	EventID    string    `json:"event_id"`
	EventType  string    `json:"event_type"`
	Status     string    `json:"status"`
	Error      string    `json:"error,omitempty"`
	ReceivedAt time.Time `json:"received_at"`
	StreamSeq  uint64    `json:"stream_seq,omitempty"`
	Deliveries int       `json:"deliveries"` // archive rows of this event: 1 + duplicates
}

// ListEvents lists archive rows, newest first, each with the number of
// deliveries of its event.
func (o *Ops) ListEvents(ctx context.Context, f EventFilter) ([]EventRow, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	var status *string
	if f.Status != "" {
		s := string(f.Status)
		status = &s
	}
	rows, err := o.pool.Query(ctx, `
		SELECT w.id::text, w.provider, w.event_id, w.event_type, w.processing_status,
		       COALESCE(w.error_message, ''), w.created_at, COALESCE(w.stream_seq, 0),
		       (SELECT count(*) FROM webhook_events d WHERE d.provider = w.provider AND d.event_id = w.event_id)
		FROM webhook_events w
		WHERE ($1 = '' OR w.provider = $1) AND ($2 = '' OR w.event_type = $2)
		  AND (CASE WHEN $3::text IS NULL THEN w.processing_status <> 'SKIPPED' ELSE w.processing_status = $3 END)
		  AND ($4::timestamptz IS NULL OR w.created_at >= $4) AND ($5::timestamptz IS NULL OR w.created_at < $5)
		ORDER BY w.created_at DESC, w.id DESC
		LIMIT $6`, f.Provider, f.Type, status, optTime(f.Since), optTime(f.Until), f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (EventRow, error) {
		var e EventRow
		err := r.Scan(&e.ArchiveID, &e.Provider, &e.EventID, &e.EventType, &e.Status, &e.Error, &e.ReceivedAt, &e.StreamSeq, &e.Deliveries)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}

// Delivery is one archived delivery of an event.
type Delivery struct {
	ArchiveID  string     `json:"archive_id"`
	ReceivedAt time.Time  `json:"received_at"`
	Status     string     `json:"status"`
	Error      string     `json:"error,omitempty"`
	Signature  string     `json:"signature,omitempty"`
	SignedAt   *time.Time `json:"signed_at,omitempty"`
	StreamSeq  uint64     `json:"stream_seq,omitempty"`
	Attempts   int        `json:"publish_attempts"`
}

// SubscriberOutcome is what one subscriber did with an event.
type SubscriberOutcome struct {
	Subscriber string    `json:"subscriber"`
	Outcome    string    `json:"outcome"` // processed, skipped_stale, dead_lettered, redriven, none
	At         time.Time `json:"at,omitzero"`
	StreamSeq  uint64    `json:"stream_seq,omitempty"`
	Error      string    `json:"error,omitempty"`
	Attempts   int       `json:"attempts,omitempty"`
	DeadLetter int64     `json:"dead_letter_id,omitempty"`
}

// EventDetail is everything known about one event.
type EventDetail struct {
	Provider    string              `json:"provider"`
	EventID     string              `json:"event_id"`
	EventType   string              `json:"event_type"`
	Subject     string              `json:"subject,omitempty"`
	FirstSeen   time.Time           `json:"first_seen"`
	Status      string              `json:"status"` // of the first delivery
	Deliveries  []Delivery          `json:"deliveries"`
	Payload     json.RawMessage     `json:"payload,omitempty"` // the first delivery's exact body, when it is JSON
	Body        string              `json:"body,omitempty"`    // the exact body otherwise
	Subscribers []SubscriberOutcome `json:"subscribers"`
	Purged      bool                `json:"archive_purged,omitempty"` // dedup row only: the archive rows were purged
}

// ShowEvent finds an event by archive id (any of its deliveries) or by
// "<provider>:<event_id>" and returns every delivery, the body, and each
// subscriber's outcome.
func (o *Ops) ShowEvent(ctx context.Context, ref string) (EventDetail, error) {
	provider, eventID, err := o.resolve(ctx, ref)
	if err != nil {
		return EventDetail{}, err
	}
	d := EventDetail{Provider: provider, EventID: eventID}
	err = o.pool.QueryRow(ctx, `SELECT event_type, processed_at FROM processed_webhook_events WHERE provider = $1 AND event_id = $2`,
		provider, eventID).Scan(&d.EventType, &d.FirstSeen)
	if errors.Is(err, pgx.ErrNoRows) {
		return EventDetail{}, fmt.Errorf("%w: no event %s", ErrNotFound, schema.MsgID(provider, eventID))
	}
	if err != nil {
		return EventDetail{}, fmt.Errorf("show event: %w", err)
	}
	if s, err := schema.Subject(provider, d.EventType); err == nil {
		d.Subject = s
	}
	rows, err := o.pool.Query(ctx, `
		SELECT id::text, created_at, processing_status, COALESCE(error_message, ''), COALESCE(signature, ''),
		       signed_at, COALESCE(stream_seq, 0), publish_attempts, body
		FROM webhook_events WHERE provider = $1 AND event_id = $2 ORDER BY created_at, id`, provider, eventID)
	if err != nil {
		return EventDetail{}, fmt.Errorf("show event: %w", err)
	}
	var body []byte
	d.Deliveries, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Delivery, error) {
		var dl Delivery
		var b []byte
		err := r.Scan(&dl.ArchiveID, &dl.ReceivedAt, &dl.Status, &dl.Error, &dl.Signature, &dl.SignedAt, &dl.StreamSeq, &dl.Attempts, &b)
		if b != nil && body == nil {
			body = b
		}
		return dl, err
	})
	if err != nil {
		return EventDetail{}, fmt.Errorf("show event: %w", err)
	}
	if len(d.Deliveries) == 0 {
		d.Purged = true
	} else {
		d.Status = d.Deliveries[0].Status
		for _, dl := range d.Deliveries {
			if dl.Status != string(hub.Skipped) {
				d.Status = dl.Status
				break
			}
		}
	}
	if json.Valid(body) {
		d.Payload = body
	} else if body != nil {
		d.Body = string(body)
	}
	d.Subscribers, err = o.subscriberOutcomes(ctx, provider, eventID)
	if err != nil {
		return EventDetail{}, err
	}
	return d, nil
}

// resolve turns an archive id or "<provider>:<event_id>" into the event's key.
func (o *Ops) resolve(ctx context.Context, ref string) (string, string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", "", inputErr("ref", "required: an archive id (UUID) or provider:event_id")
	}
	if id, err := uuid.Parse(ref); err == nil {
		var provider, eventID string
		err := o.pool.QueryRow(ctx, `SELECT provider, event_id FROM webhook_events WHERE id = $1`, id).Scan(&provider, &eventID)
		if errors.Is(err, pgx.ErrNoRows) {
			// The dedup row's id is the first delivery's archive id: it
			// outlives a purge.
			err = o.pool.QueryRow(ctx, `SELECT provider, event_id FROM processed_webhook_events WHERE id = $1`, id).Scan(&provider, &eventID)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return "", "", fmt.Errorf("%w: no delivery with archive id %s", ErrNotFound, id)
		}
		if err != nil {
			return "", "", fmt.Errorf("look up archive id: %w", err)
		}
		return provider, eventID, nil
	}
	if _, _, ok := schema.SplitEventRef(ref); !ok {
		return "", "", inputErr("ref", "%s is neither an archive id (UUID) nor provider:event_id", quote(ref))
	}
	return checkEventRef("ref", ref)
}

// subscriberOutcomes reads each subscriber's processed and dead-letter rows
// for one event.
func (o *Ops) subscriberOutcomes(ctx context.Context, provider, eventID string) ([]SubscriberOutcome, error) {
	subs, err := o.Subscribers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]SubscriberOutcome, 0, len(subs))
	for _, sub := range subs {
		so := SubscriberOutcome{Subscriber: sub, Outcome: "none"}
		q := pgx.Identifier{sub}.Sanitize()
		var seq *int64
		err := o.pool.QueryRow(ctx, `SELECT outcome, processed_at, stream_seq FROM `+q+`.processed_messages
			WHERE subscriber = $1 AND provider = $2 AND event_id = $3`, sub, provider, eventID).Scan(&so.Outcome, &so.At, &seq)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("subscriber %s: %w", sub, err)
		}
		if seq != nil {
			so.StreamSeq = uint64(*seq)
		}
		processed := err == nil
		var redriven *time.Time
		var at time.Time
		err = o.pool.QueryRow(ctx, `SELECT id, error, attempts, created_at, redriven_at FROM `+q+`.dead_letters
			WHERE subscriber = $1 AND provider = $2 AND event_id = $3 ORDER BY id DESC LIMIT 1`, sub, provider, eventID).
			Scan(&so.DeadLetter, &so.Error, &so.Attempts, &at, &redriven)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return nil, fmt.Errorf("subscriber %s dead letters: %w", sub, err)
		case !processed:
			so.Outcome, so.At = "dead_lettered", at
		default:
			so.Outcome = "processed_after_redrive"
			if redriven == nil {
				so.Outcome = "processed" // dead-lettered once, processed by a later replay
			}
		}
		out = append(out, so)
	}
	return out, nil
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
