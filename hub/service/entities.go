package service

import (
	"context"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/server"
)

// withoutEntities commits deliveries without their entities
// (HUB_ENTITIES=false): it clears them in ds itself before committing, so
// that neither the archive row nor the message the relay publishes from
// the same deliveries (hub.Ingest) carries any. Webhooks and backfills
// alike commit through it.
type withoutEntities struct{ next server.Ingester }

// Ingest clears each delivery's entities and commits ds through next.
func (w withoutEntities) Ingest(ctx context.Context, ds []hub.Delivery) ([]hub.Outcome, error) {
	for i := range ds {
		ds[i].Entities = nil
	}
	return w.next.Ingest(ctx, ds)
}
