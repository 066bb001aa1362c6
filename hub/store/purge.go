package store

import (
	"context"
	"fmt"
	"time"

	"github.com/hookhub/hookhub/hub"
)

// Retention: archive rows are deleted by age, never the dedup rows
// (DESIGN invariant 5), and never the archive row of an event still
// waiting for JetStream: a first delivery whose dedup row is in the outbox
// (next_attempt_at set). FAILED first deliveries (never published: the
// archive is their only copy) are deleted only when asked to.

// purgeCountsSQL counts without reading the old rows themselves: the total
// from ix_webhook_events_created_at (an index-only scan once the archive,
// which is append-only, is vacuumed), and the kept rows from the small
// partial indexes (the outbox, FAILED, the events a relay gave up on).
const purgeCountsSQL = `
SELECT (SELECT count(*) FROM webhook_events WHERE created_at < $1),
       (SELECT count(*) FROM processed_webhook_events p JOIN webhook_events a ON a.id = p.id
        WHERE p.next_attempt_at IS NOT NULL AND a.processing_status IS NULL AND a.created_at < $1),
       (SELECT count(*) FROM webhook_events WHERE processing_status = 'FAILED' AND created_at < $1)
     + (SELECT count(*) FROM processed_webhook_events p JOIN webhook_events a ON a.id = p.id
        WHERE p.next_attempt_at IS NULL AND p.stream_seq IS NULL AND p.publish_error IS NOT NULL
          AND a.processing_status IS NULL AND a.created_at < $1)`

// PurgeCounts counts the archive rows received before cutoff, and those of
// them a purge keeps.
//
// A first delivery whose dedup row is neither in the outbox, nor
// published, nor given up cannot be produced by the hub; were one there, a purge would keep it without counting it as kept.
func (s *Store) PurgeCounts(ctx context.Context, cutoff time.Time) (hub.PurgeCounts, error) {
	var c hub.PurgeCounts
	if err := s.pool.QueryRow(ctx, purgeCountsSQL, cutoff).Scan(&c.Archived, &c.Pending, &c.Failed); err != nil {
		return c, fmt.Errorf("count purgeable rows: %w", err)
	}
	return c, nil
}

// purgeSQL deletes one batch: up to $2 archive rows received before $1,
// oldest first, that are SKIPPED or published (FAILED too when $3), and
// returns how many rows it examined and how many it deleted. The entity
// index's rows of the deleted rows go with them.
//
// A published first delivery has its state on the dedup row, which a
// stream restore (Requeue) may put back into the outbox at any moment. Its dedup row is locked (FOR SHARE) and re-checked on its
// latest version before the archive row goes: a Requeue that committed
// meanwhile keeps the row, one that comes later waits for this delete.
// SKIPPED and FAILED rows have their state on the archive row itself,
// written once.
const purgeSQL = `
WITH candidates AS (
    SELECT a.id, a.processing_status IS NOT NULL AS stored
    FROM webhook_events a
    LEFT JOIN processed_webhook_events p ON p.id = a.id AND a.processing_status IS NULL
    WHERE a.created_at < $1
      AND (a.processing_status = 'SKIPPED'
           OR ($3 AND a.processing_status = 'FAILED')
           OR (a.processing_status IS NULL AND p.next_attempt_at IS NULL
               AND (p.stream_seq IS NOT NULL OR ($3 AND p.publish_error IS NOT NULL))))
    ORDER BY a.created_at
    LIMIT $2
), published AS (
    SELECT p.id FROM processed_webhook_events p
    WHERE p.id IN (SELECT id FROM candidates WHERE NOT stored)
      AND p.next_attempt_at IS NULL AND (p.stream_seq IS NOT NULL OR ($3 AND p.publish_error IS NOT NULL))
    FOR SHARE
), doomed AS (
    SELECT id, true AS stored FROM candidates WHERE stored
    UNION ALL
    SELECT id, false FROM published
), deleted AS (
    DELETE FROM webhook_events a USING doomed d
    WHERE a.id = d.id
      AND CASE WHEN d.stored THEN a.processing_status = 'SKIPPED' OR ($3 AND a.processing_status = 'FAILED')
               ELSE a.processing_status IS NULL END
    RETURNING a.id, a.created_at, a.entities, a.processing_status
), unindexed AS (
    -- The entity index's rows of the deleted first deliveries (SKIPPED
    -- rows were never indexed), each looked up by its exact key on the
    -- primary key: LIMIT 1 keeps the look-up a subquery run per key, so
    -- no estimate turns it into a scan of the whole table (a hash join
    -- reads every row of a table that rolling upgrades filled).
    DELETE FROM webhook_event_entities x
    WHERE x.ctid = ANY (ARRAY(
        SELECT k.ctid
        FROM deleted d CROSS JOIN unnest(d.entities) AS e
        CROSS JOIN LATERAL (SELECT y.ctid FROM webhook_event_entities y
                            WHERE y.entity_id = substr(e, strpos(e, ':') + 1)
                              AND y.created_at = d.created_at AND y.archive_id = d.id
                            LIMIT 1) k
        WHERE d.entities IS NOT NULL AND d.processing_status IS DISTINCT FROM 'SKIPPED'))
)
SELECT (SELECT count(*) FROM candidates), (SELECT count(*) FROM deleted)`

// PurgeArchive deletes one batch of up to limit archive rows received
// before cutoff, oldest first, in one short transaction: SKIPPED rows and
// published first deliveries, and FAILED ones when includeFailed. It
// returns how many rows the batch examined and how many it deleted; call
// it again while examined equals limit. Dedup rows are never deleted.
func (s *Store) PurgeArchive(ctx context.Context, cutoff time.Time, limit int, includeFailed bool) (examined, deleted int64, err error) {
	if limit < 1 {
		return 0, 0, fmt.Errorf("purge archive: batch of %d rows", limit)
	}
	if err := s.pool.QueryRow(ctx, purgeSQL, cutoff, limit, includeFailed).Scan(&examined, &deleted); err != nil {
		return 0, 0, fmt.Errorf("purge archive: %w", err)
	}
	return examined, deleted, nil
}
