package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/destination"
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

	// Where are payload conditions, all of which an event meets
	// (payload.go); they need Since within MaxPayloadFilterRange of Until
	// (or now), and are listed by ListEventPage.
	Where []PayloadMatch
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
	if len(f.Where) > 0 {
		// A payload filter's page may end at its scan bound: only
		// ListEventPage can say so.
		return nil, inputErr("where", "payload filters are listed a page at a time (ListEventPage)")
	}
	p, err := o.ListEventPage(ctx, f)
	return p.Events, err
}

// archiveFilter is the store's filter for f (checked), before its cursor.
func (f EventFilter) archiveFilter(before hub.ArchiveCursor) hub.ArchiveFilter {
	return hub.ArchiveFilter{
		Provider: f.Provider, EventType: f.Type, EventID: f.EventID, Status: f.Status, Since: f.Since, Until: f.Until,
		Before: before, Limit: f.Limit, CountDeliveries: true,
	}
}

func eventRows(ds []hub.ArchivedDelivery) []EventRow {
	out := make([]EventRow, len(ds))
	for i, d := range ds {
		out[i] = EventRow{ArchiveID: d.ArchiveID.String(), Provider: d.Provider, EventID: d.EventID, EventType: d.EventType,
			Status: string(d.Status), Error: d.Error, ReceivedAt: d.ReceivedAt, StreamSeq: d.StreamSeq,
			Deliveries: d.Deliveries, Cursor: FormatCursor(d.Cursor())}
	}
	return out
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
	// Origin is where the delivery came from: webhook, or api (ingested by
	// a backfill from the provider's API, without a signature).
	Origin    string `json:"origin"`
	StreamSeq uint64 `json:"stream_seq,omitempty"`
	Attempts  int    `json:"publish_attempts"`
}

// Subscriber outcomes of an event (SubscriberOutcome.Outcome).
const (
	// OutcomeProcessed: the subscriber's handler processed the event
	// (OutcomeSkippedStale: it skipped it as older than what it has).
	OutcomeProcessed    = "processed"
	OutcomeSkippedStale = "skipped_stale"
	// OutcomeDeadLettered: its last attempt failed and the event waits
	// in its dead letters.
	OutcomeDeadLettered = "dead_lettered"
	// OutcomeProcessedAfterRedrive: dead-lettered, then redriven and
	// processed.
	OutcomeProcessedAfterRedrive = "processed_after_redrive"
	// OutcomeNone: the event is on the stream and the subscriber's
	// consumer takes its subject, but the subscriber has not settled it
	// yet (pending).
	OutcomeNone = "none"
	// OutcomeNotPublished: the event is not on the stream (FAILED: it
	// never will be; PENDING: it waits in the outbox), so no subscriber
	// has seen it.
	OutcomeNotPublished = "not_published"
	// OutcomeNoConsumer: the subscriber has tables but no consumer on the
	// stream (it has not run since the stream was made, or was removed):
	// whether it takes the subject is unknown.
	OutcomeNoConsumer = "no_consumer"
	// OutcomeUnknown: the stream could not be read (JetStream not
	// connected), so whether the subscriber takes the subject is unknown.
	OutcomeUnknown = "unknown"
)

// SubscriberOutcome is what one subscriber did with an event.
type SubscriberOutcome struct {
	Subscriber string    `json:"subscriber"`
	Outcome    string    `json:"outcome"` // one of the Outcome constants
	At         time.Time `json:"at,omitzero"`
	StreamSeq  uint64    `json:"stream_seq,omitempty"`
	Error      string    `json:"error,omitempty"`
	Attempts   int       `json:"attempts,omitempty"` // of its dead letter
	DeadLetter int64     `json:"dead_letter_id,omitempty"`
	// Destination: the subscriber is a destination (subscribers/
	// destination), which POSTs events to an HTTP endpoint and logs each
	// attempt.
	Destination bool `json:"destination,omitempty"`
	// HTTPAttempts are a destination's attempts to deliver the event, the
	// last MaxShownAttempts, oldest first: its delivery timeline.
	HTTPAttempts []destination.Attempt `json:"http_attempts,omitempty"`
	// HTTPAttemptsTruncated: there were more; the newest are listed.
	HTTPAttemptsTruncated bool `json:"http_attempts_truncated,omitempty"`
}

// MaxShownAttempts bounds the attempts of one destination an event's
// detail lists (SubscriberOutcome.HTTPAttempts): an endpoint down for days
// is retried hundreds of times.
const MaxShownAttempts = 50

// EventDetail is everything known about one event.
type EventDetail struct {
	Provider  string    `json:"provider"`
	EventID   string    `json:"event_id"`
	EventType string    `json:"event_type"`
	Subject   string    `json:"subject,omitempty"`
	FirstSeen time.Time `json:"first_seen"`
	Status    string    `json:"status"` // of the first delivery
	// Origin is the first delivery's: webhook, or api when a backfill
	// ingested the event from the provider's API (its webhook never
	// arrived, or arrived later as a duplicate); "" once the archive is
	// purged.
	Origin     string     `json:"origin,omitempty"`
	Deliveries []Delivery `json:"deliveries"`
	// DeliveriesTruncated: the event has more than MaxShownDeliveries
	// archived deliveries; the first ones are listed.
	DeliveriesTruncated bool            `json:"deliveries_truncated,omitempty"`
	Payload             json.RawMessage `json:"payload,omitempty"` // the first delivery's exact body, when it is JSON
	Body                string          `json:"body,omitempty"`    // the exact body otherwise
	// Published: the event's message is on the stream. False for a FAILED
	// event (never published) and a PENDING one (waiting in the outbox).
	Published bool `json:"published"`
	// Subscribers are the subscribers that take the event's subject (their
	// consumer's filter matches it) or have a record of it, each with its
	// outcome; a subscriber whose filter does not match is left out.
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
			Signature: a.Signature, StreamSeq: a.StreamSeq, Attempts: a.Attempts, Origin: string(a.Origin)}
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
		d.Status, d.Origin = d.Deliveries[0].Status, d.Deliveries[0].Origin
		for _, dl := range d.Deliveries {
			if dl.Status != string(hub.Skipped) {
				d.Status, d.Origin = dl.Status, dl.Origin
				break
			}
		}
	}
	if json.Valid(body) {
		d.Payload = body
	} else if body != nil {
		d.Body = string(body)
	}
	// A purged event was published unless its archive said otherwise (the
	// purge keeps FAILED rows unless asked, and never PENDING ones).
	d.Published = d.Status != string(hub.Pending) && d.Status != string(hub.Failed)
	for _, dl := range d.Deliveries {
		d.Published = d.Published || dl.StreamSeq != 0
	}
	d.Subscribers, err = o.subscriberOutcomes(ctx, d)
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
// A subscriber without a record of it is listed only if it could receive
// it: its consumer's filter matches the event's subject. Such a
// subscriber is pending (OutcomeNone) when the event is on the stream,
// OutcomeNotPublished when it is not. A destination (a subscriber with an
// attempt log, subscribers/destination) also gets its HTTP attempts of the
// event; one that attempted it without settling it is pending.
func (o *Ops) subscriberOutcomes(ctx context.Context, d EventDetail) ([]SubscriberOutcome, error) {
	subs, err := o.Subscribers(ctx)
	if err != nil {
		return nil, err
	}
	key := []subscriber.EventKey{{Provider: d.Provider, EventID: d.EventID}}
	out := make([]SubscriberOutcome, 0, len(subs))
	streamDown := o.js == nil // once a look-up fails, the others are not tried
	dests, err := destination.Names(ctx, o.subs)
	if err != nil {
		return nil, err
	}
	for _, sub := range subs {
		so := SubscriberOutcome{Subscriber: sub}
		if slices.Contains(dests, sub) {
			attempts, err := destination.AttemptsFor(ctx, o.subs, sub, d.Provider, d.EventID, MaxShownAttempts+1)
			switch {
			case errors.Is(err, destination.ErrUnknownDestination): // dropped meanwhile
			case err != nil:
				return nil, err
			default:
				so.Destination = true
				if len(attempts) > MaxShownAttempts {
					attempts, so.HTTPAttemptsTruncated = attempts[len(attempts)-MaxShownAttempts:], true
				}
				so.HTTPAttempts = attempts
			}
		}
		processed, err := subscriber.ProcessedMessages(ctx, o.subs, sub, key)
		if err != nil {
			return nil, subscriberErr(err)
		}
		if len(processed) > 0 {
			p := processed[0]
			so.Outcome, so.At, so.StreamSeq = p.Outcome, p.ProcessedAt, p.StreamSeq
		}
		dead, err := subscriber.DeadLettersOf(ctx, o.subs, sub, key, 0)
		if err != nil {
			return nil, subscriberErr(err)
		}
		if len(dead) > 0 {
			last := dead[len(dead)-1]
			so.DeadLetter, so.Error, so.Attempts = last.ID, last.Error, last.Attempts
			switch {
			case len(processed) == 0:
				so.Outcome, so.At = OutcomeDeadLettered, last.CreatedAt
			case last.RedrivenAt != nil:
				so.Outcome = OutcomeProcessedAfterRedrive
			default:
				so.Outcome = OutcomeProcessed // dead-lettered once, processed by a later replay
			}
		}
		switch {
		case so.Outcome == "" && len(so.HTTPAttempts) > 0:
			// A destination retrying the event: not settled yet.
			so.Outcome = OutcomeNone
		case so.Outcome == "":
			// No record: does the subscriber take the subject at all?
			if d.Subject == "" {
				continue // no subject: no consumer can ever receive it
			}
			takes, known := o.takesSubject(ctx, sub, d.Subject, &streamDown)
			if !takes {
				continue
			}
			so.Outcome = known
			if !d.Published {
				so.Outcome = OutcomeNotPublished
			}
		}
		out = append(out, so)
	}
	return out, nil
}

// takesSubject reports whether subscriber sub's consumer filters subject
// (its replay subjects aside). known is OutcomeNone when the consumer's
// filters were read, else OutcomeNoConsumer or OutcomeUnknown, and then
// takes is true (it might). A failed look-up sets *down, and a later call
// with *down set answers OutcomeUnknown at once.
func (o *Ops) takesSubject(ctx context.Context, sub, subject string, down *bool) (takes bool, known string) {
	if *down {
		return true, OutcomeUnknown
	}
	cons, err := o.js.Consumer(ctx, o.stream, sub)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return true, OutcomeNoConsumer
	}
	if err != nil {
		*down = true
		return true, OutcomeUnknown
	}
	cfg := cons.CachedInfo().Config
	return unfiltered(cfg) || slices.ContainsFunc(ConsumerFilters(cfg), func(f string) bool {
		return schema.MatchSubject(f, subject)
	}), OutcomeNone
}

// unfiltered reports whether a consumer has no filter at all: it takes
// every subject of the stream.
func unfiltered(cfg jetstream.ConsumerConfig) bool {
	return cfg.FilterSubject == "" && len(cfg.FilterSubjects) == 0
}

// ConsumerFilters are the subjects a subscriber's consumer takes from the
// stream: its filter subjects, without its private replay subjects
// (schema.ReplaySubject).
func ConsumerFilters(cfg jetstream.ConsumerConfig) []string {
	var filters []string
	for _, f := range cfg.FilterSubjects {
		if _, _, replay := schema.SplitReplaySubject(f); !replay {
			filters = append(filters, f)
		}
	}
	if f := cfg.FilterSubject; f != "" {
		if _, _, replay := schema.SplitReplaySubject(f); !replay {
			filters = append(filters, f)
		}
	}
	return filters
}
