package ops

import (
	"context"
	"fmt"
	"time"
)

// PurgeResult reports a purge.
type PurgeResult struct {
	Cutoff  time.Time `json:"cutoff"`
	Rows    int64     `json:"rows"` // deleted, or that would be with DryRun
	Batches int       `json:"batches"`
	DryRun  bool      `json:"dry_run"`
}

// Purge deletes archive rows created before cutoff, in batches of
// batchSize rows (one short transaction each, so it never holds long locks
// or bloats one huge transaction). PENDING rows are never deleted: they
// are the outbox. processed_webhook_events is never touched, so a provider
// retry of a purged event is still answered as a duplicate.
//
// Why batches and not partitions: dropping monthly partitions would make
// a purge instant, but a partitioned archive needs created_at in its
// primary key and every unique index, and a partition created ahead of
// time for each period; at webhook volumes (millions of rows a month) a
// batched delete on the created_at index takes seconds to minutes, which
// does not justify that. Revisit if the archive reaches billions of rows.
func (o *Ops) Purge(ctx context.Context, cutoff time.Time, batchSize int, dryRun bool) (PurgeResult, error) {
	res := PurgeResult{Cutoff: cutoff, DryRun: dryRun}
	if batchSize <= 0 {
		batchSize = 5000
	}
	if dryRun {
		err := o.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_events WHERE created_at < $1 AND processing_status <> 'PENDING'`, cutoff).Scan(&res.Rows)
		if err != nil {
			return res, fmt.Errorf("purge: %w", err)
		}
		return res, nil
	}
	for {
		tag, err := o.pool.Exec(ctx, `
			DELETE FROM webhook_events WHERE id IN (
				SELECT id FROM webhook_events
				WHERE created_at < $1 AND processing_status <> 'PENDING'
				ORDER BY created_at LIMIT $2)`, cutoff, batchSize)
		if err != nil {
			return res, fmt.Errorf("purge (after %d rows): %w", res.Rows, err)
		}
		res.Batches++
		res.Rows += tag.RowsAffected()
		if tag.RowsAffected() < int64(batchSize) {
			return res, nil
		}
	}
}
