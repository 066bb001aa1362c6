package subscriber

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"

	"github.com/hookhub/hookhub/schema"
)

// HandlerFunc handles one event inside the transaction that also records it
// as processed. It must do its side effect through tx (and nothing outside
// the database that cannot be repeated), must not commit or roll tx back,
// and returns nil to commit, ErrStale to record a stale event, or an error
// to roll back and retry later (see Permanent).
type HandlerFunc func(ctx context.Context, tx pgx.Tx, ev Event) error

// Event is one message from the hub's stream.
type Event struct {
	// Metadata is what the hub's headers say: provider, event id and type,
	// archive id, received and occurred times.
	schema.Metadata
	// Subject is the message subject, "<provider>.<event_type>".
	Subject string
	// Data is the exact request body the provider sent.
	Data []byte
	// Header holds every message header.
	Header nats.Header
	// StreamSeq is the message's sequence in the stream.
	StreamSeq uint64
	// NumDelivered counts the deliveries of this message, this one
	// included (1 on the first attempt).
	NumDelivered uint64
	// DeadLetterID is the dead letter being redriven, or 0 for a message
	// delivered by the stream.
	DeadLetterID int64
	// Replayed says the message is a copy `hub replay` made for this
	// subscriber (on its private replay subject; Subject is the
	// original's). Such a copy of an event processed before reaches the
	// handler only with Config.ResendReplays.
	Replayed bool
}

// Decode unmarshals the body into v. A body that does not decode is a
// permanent error (wrapping ErrDecode): retrying cannot fix it.
func (e Event) Decode(v any) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return Permanent(fmt.Errorf("%w: %s %s: %w", ErrDecode, e.Provider, e.EventID, err))
	}
	return nil
}

// Paddle decodes the body as a Paddle notification envelope.
func (e Event) Paddle() (schema.PaddleEvent, error) {
	var pe schema.PaddleEvent
	err := e.Decode(&pe)
	return pe, err
}

// PaddleSubscription decodes the body as a Paddle subscription.* event and
// returns the envelope and its subscription.
func (e Event) PaddleSubscription() (schema.PaddleEvent, schema.PaddleSubscription, error) {
	var sub schema.PaddleSubscription
	pe, err := e.Paddle()
	if err != nil {
		return pe, sub, err
	}
	if err := decodeData(e, pe.Data, &sub); err != nil {
		return pe, sub, err
	}
	return pe, sub, nil
}

// Clerk decodes the body as a Clerk event envelope.
func (e Event) Clerk() (schema.ClerkEvent, error) {
	var ce schema.ClerkEvent
	err := e.Decode(&ce)
	return ce, err
}

// ClerkUser decodes the body as a Clerk user.* event and returns its user.
func (e Event) ClerkUser() (schema.ClerkUser, error) {
	var u schema.ClerkUser
	ce, err := e.Clerk()
	if err != nil {
		return u, err
	}
	return u, decodeData(e, ce.Data, &u)
}

func decodeData(e Event, data json.RawMessage, v any) error {
	if len(data) == 0 || string(data) == "null" {
		return Permanent(fmt.Errorf("%w: %s %s: no data", ErrDecode, e.Provider, e.EventID))
	}
	if err := json.Unmarshal(data, v); err != nil {
		return Permanent(fmt.Errorf("%w: %s %s: data: %w", ErrDecode, e.Provider, e.EventID, err))
	}
	return nil
}
