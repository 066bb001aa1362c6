package hub

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/hookhub/hookhub/schema"
)

// The one ingest path. A verified event, a webhook's (hub/server) or one a
// backfill read from the provider's API (hub/backfill), becomes a Delivery
// with NewDelivery, and is committed through an Ingest, which hands each
// committed, publishable delivery to the relay (hub/relay), the one
// publisher.

// NewDelivery returns the Delivery of ev, an event of provider that came
// from origin (a verified webhook, or a provider's API) with body, as the
// hub received it at receivedAt: a new archive id (UUIDv7); ev's
// OccurredAt only when it is plausible for receivedAt
// (schema.PlausibleOccurredAt), zero otherwise; and, when its type cannot
// form a subject (schema.Subject), the Error mark that archives it FAILED
// instead of publishing it. ev's id and type have passed CheckEventID and
// CheckEventType, and its entities the rules on entities
// (provider.CleanEntities); they are the delivery's. The caller sets Payload and TraceParent when it has
// them.
func NewDelivery(origin Origin, provider string, ev Event, body []byte, receivedAt time.Time) (Delivery, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Delivery{}, fmt.Errorf("archive id: %w", err)
	}
	d := Delivery{
		ArchiveID:  id,
		Provider:   provider,
		EventID:    ev.ID,
		EventType:  ev.Type,
		Body:       body,
		Signature:  ev.Signature,
		SignedAt:   ev.SignedAt,
		OccurredAt: ev.OccurredAt,
		ReceivedAt: receivedAt,
		Entities:   ev.Entities,
		Origin:     origin,
	}
	if !d.OccurredAt.IsZero() && !schema.PlausibleOccurredAt(d.OccurredAt, receivedAt) {
		d.OccurredAt = time.Time{}
	}
	if _, err := schema.Subject(provider, ev.Type); err != nil {
		d.Error = "cannot publish: " + err.Error()
	}
	return d, nil
}

// Publishable reports whether the delivery of o is to be published: a
// first delivery committed PENDING (not a duplicate, not archived FAILED).
func (o Outcome) Publishable() bool { return !o.Duplicate && o.Status != Failed }

// Committer commits deliveries: hub/store's Store, or its group committer
// in front of it.
type Committer interface {
	Ingest(ctx context.Context, ds []Delivery) ([]Outcome, error)
}

// Enqueuer takes a committed delivery for publishing without waiting:
// hub/relay's Relay (its fast path; what it cannot take at once, its
// claiming loop publishes from the outbox).
type Enqueuer interface {
	Enqueue(d Delivery)
}

// EnqueueFunc adapts a func to Enqueuer.
type EnqueueFunc func(Delivery)

// Enqueue calls f(d).
func (f EnqueueFunc) Enqueue(d Delivery) { f(d) }

// Ingest is the owner of ingestion: it commits deliveries and hands each
// committed, publishable one (Outcome.Publishable) to the relay. The HTTP
// server and the backfill engine commit through it.
type Ingest struct {
	committer Committer
	relay     Enqueuer // nil: the relay's claiming loop publishes from the outbox
}

// NewIngest returns the Ingest that commits through c and hands
// publishable deliveries to relay. A nil relay leaves them to a claiming
// relay, which publishes the outbox's PENDING rows once they are due
// (`hub backfill`, whose store has no relay grace).
func NewIngest(c Committer, relay Enqueuer) *Ingest {
	return &Ingest{committer: c, relay: relay}
}

// Ingest commits ds through the Committer (an error, wrapping
// ErrUnavailable, when they may not have been committed) and returns each
// delivery's outcome, after handing the publishable ones to the relay.
func (in *Ingest) Ingest(ctx context.Context, ds []Delivery) ([]Outcome, error) {
	outs, err := in.committer.Ingest(ctx, ds)
	if err != nil {
		return nil, err
	}
	if in.relay != nil {
		for i, out := range outs {
			if out.Publishable() {
				in.relay.Enqueue(ds[i])
			}
		}
	}
	return outs, nil
}
