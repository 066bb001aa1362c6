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
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// EventFilter selects archive rows. Zero fields match everything.
type EventFilter struct {
	Provider string
	Type     string
	// EventID selects the deliveries of one event id (exact match); with
	// Status SKIPPED its duplicates, by default its first delivery.
	EventID string
	// Entity selects the events about one entity id (exact,
	// case-sensitive, any kind), through the entity index.
	Entity string
	Status hub.Status // empty: every status but SKIPPED (first deliveries)
	Since  time.Time
	Until  time.Time
	// Before continues a listing: the cursor of the last row of the
	// previous page (EventRow.Cursor); empty for the first page.
	Before string
	Limit  int // 1..MaxListLimit (DefaultListLimit is a good value)

	// Where are payload conditions, all of which an event meets
	// (payload.go); they need Since within MaxPayloadFilterRange of Until
	// (or now), and are listed by ListEventPage.
	Where []PayloadMatch
	// Now is the time Since and Until were read against when they were
	// given relative ("7d": ParseWindow's now), and the end of a payload
	// filter's range when Until is not set; zero is Ops's clock when the
	// listing runs. Taken once, so that "7d" is exactly
	// MaxPayloadFilterRange.
	Now time.Time
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
	if err := checkText("entity", f.Entity, hub.MaxEntityIDLen); err != nil {
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
	// Entities are the business objects the event is about.
	Entities []hub.Entity `json:"entities,omitempty"`
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
		Provider: f.Provider, EventType: f.Type, EventID: f.EventID, Entity: f.Entity, Status: f.Status, Since: f.Since, Until: f.Until,
		Before: before, Limit: f.Limit, CountDeliveries: true,
	}
}

func eventRows(ds []hub.ArchivedDelivery) []EventRow {
	out := make([]EventRow, len(ds))
	for i, d := range ds {
		out[i] = EventRow{ArchiveID: d.ArchiveID.String(), Provider: d.Provider, EventID: d.EventID, EventType: d.EventType,
			Status: string(d.Status), Error: d.Error, ReceivedAt: d.ReceivedAt, StreamSeq: d.StreamSeq,
			Deliveries: d.Deliveries, Entities: d.Entities, Cursor: FormatCursor(d.Cursor())}
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
	// OutcomeWaiting: a destination parked the event for a later retry
	// (or behind such an event, ordered): recorded as processed by the
	// subscriber library, it is not delivered yet (subscribers/destination,
	// waiting events).
	OutcomeWaiting = "waiting"
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
	HTTPAttempts []deststate.Attempt `json:"http_attempts,omitempty"`
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
	Origin string `json:"origin,omitempty"`
	// Entities are the business objects the event is about (the first
	// delivery's); none once the archive is purged.
	Entities   []hub.Entity `json:"entities,omitempty"`
	Deliveries []Delivery   `json:"deliveries"`
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
		for i, dl := range d.Deliveries {
			if dl.Status != string(hub.Skipped) {
				d.Status, d.Origin, d.Entities = dl.Status, dl.Origin, ds[i].Entities
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
	outs, err := o.outcomes(ctx, []outcomeEvent{{Provider: d.Provider, EventID: d.EventID, Subject: d.Subject, Published: d.Published}}, false)
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// outcomeEvent is an event whose subscriber outcomes are read.
type outcomeEvent struct {
	Provider, EventID, Subject string
	Published                  bool
}

// outcomes reads what each subscriber did with each of events (as
// subscriberOutcomes does for one) in a bounded number of queries: per
// subscriber one for its processed records, one for its dead letters and,
// for a destination, one for its attempts, whatever the number of events;
// and one consumer look-up per subscriber on the stream. With lastOnly, a
// destination's HTTPAttempts hold only its last attempt of each event (one
// index descent per event); otherwise its last MaxShownAttempts of the one
// event per query.
func (o *Ops) outcomes(ctx context.Context, events []outcomeEvent, lastOnly bool) ([][]SubscriberOutcome, error) {
	subs, dests, err := o.subscribersAndDestinations(ctx)
	if err != nil {
		return nil, err
	}
	keys := make([]subscriber.EventKey, len(events))
	index := make(map[subscriber.EventKey]int, len(events))
	for i, e := range events {
		keys[i] = subscriber.EventKey{Provider: e.Provider, EventID: e.EventID}
		index[keys[i]] = i
	}
	out := make([][]SubscriberOutcome, len(events))
	for i := range out {
		out[i] = make([]SubscriberOutcome, 0, len(subs))
	}
	streamDown := o.js == nil // once a look-up fails, the others are not tried
	for _, sub := range subs {
		sos := make([]SubscriberOutcome, len(events))
		for i := range sos {
			sos[i].Subscriber = sub
		}
		if slices.Contains(dests, sub) {
			if err := o.httpAttempts(ctx, sub, events, keys, index, sos, lastOnly); err != nil {
				return nil, err
			}
		}
		processed, err := subscriber.ProcessedMessages(ctx, o.subs, sub, keys)
		if err != nil {
			return nil, subscriberErr(err)
		}
		isProcessed := make([]bool, len(events))
		for _, p := range processed {
			if i, ok := index[p.EventKey]; ok {
				isProcessed[i] = true
				sos[i].Outcome, sos[i].At, sos[i].StreamSeq = p.Outcome, p.ProcessedAt, p.StreamSeq
			}
		}
		if err := o.markWaiting(ctx, sub, dests, keys, index, isProcessed, sos); err != nil {
			return nil, err
		}
		dead, err := subscriber.DeadLettersOf(ctx, o.subs, sub, keys, 0)
		if err != nil {
			return nil, subscriberErr(err)
		}
		lastDead := make(map[int]subscriber.DeadLetterState, len(dead))
		for _, dl := range dead { // oldest first: the last one wins
			if i, ok := index[dl.EventKey]; ok {
				lastDead[i] = dl
			}
		}
		for i, last := range lastDead {
			so := &sos[i]
			so.DeadLetter, so.Error, so.Attempts = last.ID, last.Error, last.Attempts
			switch {
			case !isProcessed[i]:
				so.Outcome, so.At = OutcomeDeadLettered, last.CreatedAt
			case last.RedrivenAt != nil:
				so.Outcome = OutcomeProcessedAfterRedrive
			default:
				so.Outcome = OutcomeProcessed // dead-lettered once, processed by a later replay
			}
		}
		var filters []string
		var known string
		filtersRead := false
		for i := range sos {
			so := sos[i]
			switch {
			case so.Outcome == "" && len(so.HTTPAttempts) > 0:
				// A destination retrying the event: not settled yet.
				so.Outcome = OutcomeNone
			case so.Outcome == "":
				// No record: does the subscriber take the subject at all?
				if events[i].Subject == "" {
					continue // no subject: no consumer can ever receive it
				}
				if !filtersRead {
					filters, known = o.consumerFilters(ctx, sub, &streamDown)
					filtersRead = true
				}
				if filters != nil && !slices.ContainsFunc(filters, func(f string) bool {
					return f == ">" || schema.MatchSubject(f, events[i].Subject)
				}) {
					continue
				}
				so.Outcome = known
				if !events[i].Published {
					so.Outcome = OutcomeNotPublished
				}
			}
			out[i] = append(out[i], so)
		}
	}
	return out, nil
}

// markWaiting sets OutcomeWaiting on the events of sos that sub, when it
// is one of dests (a destination), recorded as processed but parked for a
// later retry.
func (o *Ops) markWaiting(ctx context.Context, sub string, dests []string, keys []subscriber.EventKey, index map[subscriber.EventKey]int,
	isProcessed []bool, sos []SubscriberOutcome) error {
	if !slices.Contains(dests, sub) {
		return nil
	}
	parked, err := deststate.ParkedOf(ctx, o.subs, sub, keys)
	if err != nil && !errors.Is(err, deststate.ErrUnknownDestination) {
		return err
	}
	for k := range parked {
		if i, ok := index[k]; ok && isProcessed[i] {
			sos[i].Outcome = OutcomeWaiting
		}
	}
	return nil
}

// httpAttempts fills the HTTP attempts of destination dest on sos.
func (o *Ops) httpAttempts(ctx context.Context, dest string, events []outcomeEvent, keys []subscriber.EventKey,
	index map[subscriber.EventKey]int, sos []SubscriberOutcome, lastOnly bool) error {
	if lastOnly {
		last, err := deststate.LastAttempts(ctx, o.subs, dest, keys)
		if errors.Is(err, deststate.ErrUnknownDestination) {
			return nil // dropped meanwhile
		}
		if err != nil {
			return err
		}
		for i := range sos {
			sos[i].Destination = true
		}
		for _, a := range last {
			if i, ok := index[subscriber.EventKey{Provider: a.Provider, EventID: a.EventID}]; ok {
				sos[i].HTTPAttempts = []deststate.Attempt{a}
			}
		}
		return nil
	}
	for i, e := range events {
		attempts, err := deststate.AttemptsFor(ctx, o.subs, dest, e.Provider, e.EventID, MaxShownAttempts+1)
		switch {
		case errors.Is(err, deststate.ErrUnknownDestination): // dropped meanwhile
			return nil
		case err != nil:
			return err
		}
		sos[i].Destination = true
		if len(attempts) > MaxShownAttempts {
			attempts, sos[i].HTTPAttemptsTruncated = attempts[len(attempts)-MaxShownAttempts:], true
		}
		sos[i].HTTPAttempts = attempts
	}
	return nil
}

// consumerFilters returns the subjects subscriber sub's consumer takes
// (its replay subjects aside; []string{">"} when it has no filter), or nil
// when that is unknown: no consumer (the second result OutcomeNoConsumer)
// or the stream could not be read (OutcomeUnknown, and *down is set; a
// later call with *down set answers so at once).
func (o *Ops) consumerFilters(ctx context.Context, sub string, down *bool) ([]string, string) {
	if *down {
		return nil, OutcomeUnknown
	}
	cons, err := o.js.Consumer(ctx, o.stream, sub)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, OutcomeNoConsumer
	}
	if err != nil {
		*down = true
		return nil, OutcomeUnknown
	}
	cfg := cons.CachedInfo().Config
	if unfiltered(cfg) {
		return []string{">"}, OutcomeNone
	}
	return append([]string{}, ConsumerFilters(cfg)...), OutcomeNone
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
