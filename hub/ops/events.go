package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// EventFilter selects archive rows. Zero fields match everything.
type EventFilter struct {
	Provider string
	Type     string
	// EventID selects the deliveries of one event id (exact match); with
	// Status SKIPPED its duplicates, by default its first delivery.
	EventID string
	Status  hub.Status // empty: every status but SKIPPED (first deliveries)
	Since   time.Time
	Until   time.Time
	// Before continues a listing: the cursor of the last row of the
	// previous page (EventRow.Cursor); empty for the first page.
	Before string
	Limit  int // 1..MaxListLimit (DefaultListLimit is a good value)
}

// check refuses filters no archive row can match and limits out of range,
// and reads the cursor.
func (f EventFilter) check() (hub.ArchiveCursor, error) {
	if err := checkProvider("provider", f.Provider); err != nil {
		return hub.ArchiveCursor{}, err
	}
	if err := checkText("type", f.Type, maxEventTypeLen); err != nil {
		return hub.ArchiveCursor{}, err
	}
	if err := checkText("event_id", f.EventID, maxEventIDLen); err != nil {
		return hub.ArchiveCursor{}, err
	}
	if !f.Until.IsZero() && !f.Since.IsZero() && !f.Until.After(f.Since) {
		return hub.ArchiveCursor{}, inputErr("until", "must be after since")
	}
	if err := checkLimit(f.Limit); err != nil {
		return hub.ArchiveCursor{}, err
	}
	if f.Before == "" {
		return hub.ArchiveCursor{}, nil
	}
	return ParseCursor("before", f.Before)
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
	// Cursor is this row's position: pass the last row's as before for
	// the next page.
	Cursor string `json:"cursor"`
}

// ListEvents lists archive rows, newest first, each with the number of
// deliveries of its event. A full page (Limit rows) may have a next one:
// list again with Before set to its last row's Cursor.
func (o *Ops) ListEvents(ctx context.Context, f EventFilter) ([]EventRow, error) {
	before, err := f.check()
	if err != nil {
		return nil, err
	}
	ds, err := o.archive.ListArchive(ctx, hub.ArchiveFilter{
		Provider: f.Provider, EventType: f.Type, EventID: f.EventID, Status: f.Status, Since: f.Since, Until: f.Until,
		Before: before, Limit: f.Limit, CountDeliveries: true,
	})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out := make([]EventRow, len(ds))
	for i, d := range ds {
		out[i] = EventRow{ArchiveID: d.ArchiveID.String(), Provider: d.Provider, EventID: d.EventID, EventType: d.EventType,
			Status: string(d.Status), Error: d.Error, ReceivedAt: d.ReceivedAt, StreamSeq: d.StreamSeq,
			Deliveries: d.Deliveries, Cursor: FormatCursor(d.Cursor())}
	}
	return out, nil
}

// MaxShownDeliveries bounds the deliveries `hub events show` lists: a
// provider (or a replayed signed request) can deliver one event any
// number of times.
const MaxShownDeliveries = 1000

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
	Outcome    string    `json:"outcome"` // processed, skipped_stale, dead_lettered, processed_after_redrive, none
	At         time.Time `json:"at,omitzero"`
	StreamSeq  uint64    `json:"stream_seq,omitempty"`
	Error      string    `json:"error,omitempty"`
	Attempts   int       `json:"attempts,omitempty"`
	DeadLetter int64     `json:"dead_letter_id,omitempty"`
}

// EventDetail is everything known about one event.
type EventDetail struct {
	Provider   string     `json:"provider"`
	EventID    string     `json:"event_id"`
	EventType  string     `json:"event_type"`
	Subject    string     `json:"subject,omitempty"`
	FirstSeen  time.Time  `json:"first_seen"`
	Status     string     `json:"status"` // of the first delivery
	Deliveries []Delivery `json:"deliveries"`
	// DeliveriesTruncated: the event has more than MaxShownDeliveries
	// archived deliveries; the first ones are listed.
	DeliveriesTruncated bool                `json:"deliveries_truncated,omitempty"`
	Payload             json.RawMessage     `json:"payload,omitempty"` // the first delivery's exact body, when it is JSON
	Body                string              `json:"body,omitempty"`    // the exact body otherwise
	Subscribers         []SubscriberOutcome `json:"subscribers"`
	Purged              bool                `json:"archive_purged,omitempty"` // dedup row only: the archive rows were purged
}

// ShowEvent finds an event by archive id (any of its deliveries) or by
// "<provider>:<event_id>" and returns every delivery, the body, and each
// subscriber's outcome.
func (o *Ops) ShowEvent(ctx context.Context, ref string) (EventDetail, error) {
	provider, eventID, err := o.resolve(ctx, ref)
	if err != nil {
		return EventDetail{}, err
	}
	ev, found, err := o.archive.Event(ctx, provider, eventID)
	if err != nil {
		return EventDetail{}, fmt.Errorf("show event: %w", err)
	}
	if !found {
		return EventDetail{}, fmt.Errorf("%w: no event %s", ErrNotFound, schema.MsgID(provider, eventID))
	}
	d := EventDetail{Provider: provider, EventID: eventID, EventType: ev.EventType, FirstSeen: ev.FirstSeen}
	if s, err := schema.Subject(provider, d.EventType); err == nil {
		d.Subject = s
	}
	ds, err := o.archive.Deliveries(ctx, provider, eventID, MaxShownDeliveries+1)
	if err != nil {
		return EventDetail{}, fmt.Errorf("show event: %w", err)
	}
	if len(ds) > MaxShownDeliveries {
		ds, d.DeliveriesTruncated = ds[:MaxShownDeliveries], true
	}
	var body []byte
	d.Deliveries = make([]Delivery, len(ds))
	for i, a := range ds {
		dl := Delivery{ArchiveID: a.ArchiveID.String(), ReceivedAt: a.ReceivedAt, Status: string(a.Status), Error: a.Error,
			Signature: a.Signature, StreamSeq: a.StreamSeq, Attempts: a.Attempts}
		if !a.SignedAt.IsZero() {
			dl.SignedAt = &a.SignedAt
		}
		if a.Body != nil && body == nil {
			body = a.Body
		}
		d.Deliveries[i] = dl
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
		provider, eventID, found, err := o.archive.FindEvent(ctx, id)
		if err != nil {
			return "", "", fmt.Errorf("look up archive id: %w", err)
		}
		if !found {
			return "", "", fmt.Errorf("%w: no delivery with archive id %s", ErrNotFound, id)
		}
		return provider, eventID, nil
	}
	if _, _, ok := schema.SplitEventRef(ref); !ok {
		return "", "", inputErr("ref", "%s is neither an archive id (UUID) nor provider:event_id", quote(ref))
	}
	return checkEventRef("ref", ref)
}

// subscriberOutcomes reads what each subscriber did with one event,
// through the subscriber library (its processed and dead-letter records).
func (o *Ops) subscriberOutcomes(ctx context.Context, provider, eventID string) ([]SubscriberOutcome, error) {
	subs, err := o.Subscribers(ctx)
	if err != nil {
		return nil, err
	}
	key := []subscriber.EventKey{{Provider: provider, EventID: eventID}}
	out := make([]SubscriberOutcome, 0, len(subs))
	for _, sub := range subs {
		so := SubscriberOutcome{Subscriber: sub, Outcome: "none"}
		processed, err := subscriber.ProcessedMessages(ctx, o.subs, sub, key)
		if err != nil {
			return nil, err
		}
		if len(processed) > 0 {
			p := processed[0]
			so.Outcome, so.At, so.StreamSeq = p.Outcome, p.ProcessedAt, p.StreamSeq
		}
		dead, err := subscriber.DeadLettersOf(ctx, o.subs, sub, key, 0)
		if err != nil {
			return nil, err
		}
		if len(dead) > 0 {
			last := dead[len(dead)-1]
			so.DeadLetter, so.Error, so.Attempts = last.ID, last.Error, last.Attempts
			switch {
			case len(processed) == 0:
				so.Outcome, so.At = "dead_lettered", last.CreatedAt
			case last.RedrivenAt != nil:
				so.Outcome = "processed_after_redrive"
			default:
				so.Outcome = "processed" // dead-lettered once, processed by a later replay
			}
		}
		out = append(out, so)
	}
	return out, nil
}
