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
	HeaderOccurredAt = "Hub-Occurred-At"  // RFC 3339, when the provider says the event happened; absent if unknown
	HeaderRepublish  = "Hub-Republish-Of" // set by operator re-publishes: the original Nats-Msg-Id
)

// ErrMissingHeader reports a message without a header the hub always sets.
var ErrMissingHeader = errors.New("missing hub header")

// Metadata is what the hub's headers say about a message.
type Metadata struct {
	MsgID      string
	EventID    string
	Provider   string
	EventType  string
	ArchiveID  string
	ReceivedAt time.Time
	OccurredAt time.Time // zero when the provider gives no time
}

// Header renders m as NATS message headers.
func (m Metadata) Header() nats.Header {
	h := nats.Header{}
	h.Set(HeaderMsgID, m.MsgID)
	h.Set(HeaderEventID, m.EventID)
	h.Set(HeaderProvider, m.Provider)
	h.Set(HeaderEventType, m.EventType)
	h.Set(HeaderArchiveID, m.ArchiveID)
	h.Set(HeaderReceivedAt, m.ReceivedAt.UTC().Format(time.RFC3339Nano))
	if !m.OccurredAt.IsZero() {
		h.Set(HeaderOccurredAt, m.OccurredAt.UTC().Format(time.RFC3339Nano))
	}
	return h
}

// ParseMetadata reads the hub's headers from a message. The event id,
// provider and event type are required; times must be RFC 3339 when present.
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
	if m.OccurredAt, err = parseTime(h, HeaderOccurredAt); err != nil {
		return Metadata{}, err
	}
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
