package schema

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// Header names the hub sets on every message it publishes. Nats-Msg-Id is
// JetStream's own deduplication header; the Hub-* headers are the hub's.
const (
	HeaderMsgID      = "Nats-Msg-Id"      // "<provider>:<event_id>"
	HeaderEventID    = "Hub-Event-Id"     // the provider's event id
	HeaderProvider   = "Hub-Provider"     // e.g. "paddle"
	HeaderEventType  = "Hub-Event-Type"   // e.g. "subscription.created"
	HeaderArchiveID  = "Hub-Archive-Id"   // webhook_events.id of the first delivery
	HeaderReceivedAt = "Hub-Received-At"  // RFC 3339, when the hub received the first delivery
	HeaderOccurredAt = "Hub-Occurred-At"  // RFC 3339, when the provider says the event happened; absent if unknown or implausible
	HeaderRepublish  = "Hub-Republish-Of" // set by operator re-publishes: the original Nats-Msg-Id
	// HeaderEntity ("Hookhub-Entity", entity.go) carries the event's
	// entities, one "<kind>:<id>" value each.
)

// ErrMissingHeader reports a message without a header the hub always sets.
var ErrMissingHeader = errors.New("missing hub header")

// OccurredAtMaxAhead is how far past its receipt an event may say it
// occurred (see PlausibleOccurredAt).
const OccurredAtMaxAhead = 24 * time.Hour

// occurredAtFloor is the earliest plausible occurred-at time.
var occurredAtFloor = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// The first and last instants RFC 3339 can write: time.Format writes years
// before 0000 and after 9999 in forms time.Parse refuses.
var (
	firstFormattable = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	lastFormattable  = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// PlausibleOccurredAt reports whether occurred, a provider's claim of when
// an event happened, is plausible for an event the hub received at
// received: not before 2000-01-01 and not more than
// OccurredAtMaxAhead (a day) after received. A zero received (unknown)
// bounds occurred by the last time RFC 3339 can write instead.
//
// The hub keeps a provider's time only when it is plausible, and otherwise
// publishes none (Hub-Occurred-At absent); the delivery is still accepted.
// Why these bounds:
//   - Every supported provider started sending webhooks after 2000. An
//     earlier time is a zero, a negative number, a year 1, or seconds read
//     as milliseconds (January 1970): a bug or a forgery, never a fact.
//   - A day ahead absorbs any clock skew between a provider and the hub
//     (seconds in practice; up to 14 hours if a sender writes local time
//     as UTC) and refuses the rest: milliseconds read as seconds, or
//     numbers such as 3e14 ms (year 11476), which subscribers cannot parse
//     and, further out, Postgres cannot store (the delivery would be
//     answered 503 forever). It also bounds the harm of an event dated in
//     the future: ordering by occurred-at (subscriber.ApplyIfNewer) would
//     hold every genuine later change of that entity as stale until then.
func PlausibleOccurredAt(occurred, received time.Time) bool {
	last := lastFormattable
	if !received.IsZero() {
		if limit := received.Add(OccurredAtMaxAhead); limit.Before(last) {
			last = limit
		}
	}
	return !occurred.Before(occurredAtFloor) && !occurred.After(last)
}

// Metadata is what the hub's headers say about a message.
type Metadata struct {
	MsgID      string
	EventID    string
	Provider   string
	EventType  string
	ArchiveID  string
	ReceivedAt time.Time // zero when the header is absent
	OccurredAt time.Time // zero when the provider gives no time, or an implausible or unreadable one
	// Entities are the business objects the event is about (Hookhub-Entity:
	// a Stripe customer, a GitHub pull request), at most MaxEntities; nil
	// when it names none.
	Entities []Entity
}

// Header renders m as NATS message headers. It never writes a time
// ParseMetadata could not read back: Hub-Received-At is left out when
// ReceivedAt's year is outside 0000-9999, and Hub-Occurred-At when
// OccurredAt is zero or not plausible (PlausibleOccurredAt) for
// ReceivedAt. Entities are written one Hookhub-Entity value each
// (AddEntities: only those that keep the rules, each once, at most
// MaxEntities).
func (m Metadata) Header() nats.Header {
	h := nats.Header{}
	h.Set(HeaderMsgID, m.MsgID)
	h.Set(HeaderEventID, m.EventID)
	h.Set(HeaderProvider, m.Provider)
	h.Set(HeaderEventType, m.EventType)
	h.Set(HeaderArchiveID, m.ArchiveID)
	if v, ok := formatTime(m.ReceivedAt); ok {
		h.Set(HeaderReceivedAt, v)
	}
	if !m.OccurredAt.IsZero() && PlausibleOccurredAt(m.OccurredAt, m.ReceivedAt) {
		if v, ok := formatTime(m.OccurredAt); ok {
			h.Set(HeaderOccurredAt, v)
		}
	}
	AddEntities(h, m.Entities)
	return h
}

// formatTime writes t as RFC 3339 in UTC, with nanoseconds when it has
// any, if time.Parse can read the result back.
func formatTime(t time.Time) (string, bool) {
	t = t.UTC()
	if t.Before(firstFormattable) || t.After(lastFormattable) {
		return "", false
	}
	return t.Format(time.RFC3339Nano), true
}

// ParseMetadata reads the hub's headers from a message. The event id,
// provider and event type are required, and Hub-Received-At must be RFC
// 3339 when present.
//
// Hub-Occurred-At is optional, and advisory: a Hub-Occurred-At that is
// not RFC 3339, or not plausible for Hub-Received-At (PlausibleOccurredAt),
// reads as absent (OccurredAt zero) rather than failing the message. An
// unreadable optional time carries no information, which is what absent
// means; failing would turn a genuine event into a poison message for
// every handler, including those that never look at the time, while a
// handler that needs one still fails visibly on the zero
// (subscriber.ApplyIfNewer reports ErrNoOccurredAt). Hookhub-Entity is
// advisory in the same way: values that do not parse are skipped
// (Entities).
func ParseMetadata(h nats.Header) (Metadata, error) {
	m := Metadata{
		MsgID:     h.Get(HeaderMsgID),
		EventID:   h.Get(HeaderEventID),
		Provider:  h.Get(HeaderProvider),
		EventType: h.Get(HeaderEventType),
		ArchiveID: h.Get(HeaderArchiveID),
	}
	for name, v := range map[string]string{HeaderEventID: m.EventID, HeaderProvider: m.Provider, HeaderEventType: m.EventType} {
		if v == "" {
			return Metadata{}, fmt.Errorf("%w: %s", ErrMissingHeader, name)
		}
	}
	var err error
	if m.ReceivedAt, err = parseTime(h, HeaderReceivedAt); err != nil {
		return Metadata{}, err
	}
	if occurred, err := parseTime(h, HeaderOccurredAt); err == nil && PlausibleOccurredAt(occurred, m.ReceivedAt) {
		m.OccurredAt = occurred
	}
	m.Entities = Entities(h)
	return m, nil
}

func parseTime(h nats.Header, name string) (time.Time, error) {
	v := h.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("header %s: %w", name, err)
	}
	return t, nil
}
