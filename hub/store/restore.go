package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hookhub/hookhub/hub"
	"github.com/jackc/pgx/v5"
)

// PublishedBetween lists PROCESSED first deliveries acknowledged by
// JetStream in [p.From, p.Until), of p.Providers, that still have their
// body (so they can be published again), in (created_at, id) order after
// p.After.
func (s *Store) PublishedBetween(ctx context.Context, p hub.PublishedPage) ([]hub.PublishedEvent, error) {
	providers := p.Providers
	if providers == nil {
		providers = []string{} // not NULL
	}
	afterAt, afterID := p.ReceivedSince, uuid.Nil
	if p.After.ArchiveID != uuid.Nil {
		afterAt, afterID = p.After.ReceivedAt, p.After.ArchiveID
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, provider, event_id, created_at FROM webhook_event_status
		WHERE created_at >= $1 AND (created_at, id) > ($2, $3::uuid)
		  AND processing_status = 'PROCESSED' AND published_at >= $4 AND published_at < $5
		  AND body IS NOT NULL AND (cardinality($7::text[]) = 0 OR provider = ANY($7))
		ORDER BY created_at, id
		LIMIT $6`, p.ReceivedSince, afterAt, [16]byte(afterID), p.From, p.Until, p.Limit, providers)
	if err != nil {
		return nil, fmt.Errorf("list published events: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.PublishedEvent, error) {
		var e hub.PublishedEvent
		err := r.Scan(&e.ArchiveID, &e.Provider, &e.EventID, &e.ReceivedAt)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("list published events: %w", err)
	}
	return out, nil
}

// requeueSQL puts published events back into the outbox, due now.
// first_attempt_at restarts too: the relay publishes them as new (no
// look-up in the stream until half the duplicate window has passed), under
// their original message id. FOR SHARE OF a: a purge deleting the archive
// row meanwhile makes the row drop out here, rather than leave an event in
// the outbox without its body.
const requeueSQL = `
WITH published AS (
    SELECT p.id FROM processed_webhook_events p JOIN webhook_events a ON a.id = p.id
    WHERE p.id = ANY($1) AND a.processing_status IS NULL AND a.body IS NOT NULL
      AND p.stream_seq IS NOT NULL AND p.published_at < $2
    FOR SHARE OF a
)
UPDATE processed_webhook_events p
SET next_attempt_at = now(), first_attempt_at = now(), published_at = NULL, stream_seq = NULL, publish_error = $3
WHERE p.id IN (SELECT id FROM published)`

// Requeue makes PROCESSED events PENDING again, for the relay to publish
// them once more under their original message ids: the events a lost
// stream held. Only rows still PROCESSED and acknowledged before
// publishedBefore change, so an event published again meanwhile (by this
// relay, or after another replica re-queued it) is left alone. reason
// becomes the rows' error_message until they are published. It returns
// how many rows it re-queued.
func (s *Store) Requeue(ctx context.Context, ids []uuid.UUID, publishedBefore time.Time, reason string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	raw := make([][16]byte, len(ids))
	for i, id := range ids {
		raw[i] = id
	}
	tag, err := s.pool.Exec(ctx, requeueSQL, raw, publishedBefore, cleanText(reason))
	if err != nil {
		return 0, fmt.Errorf("requeue events: %w", err)
	}
	return tag.RowsAffected(), nil
}
