package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/hookhub/hookhub/internal/backoff"
)

// PurgeRequest selects the archive rows a purge deletes.
type PurgeRequest struct {
	// OlderThan is the age of the youngest row to delete; at least
	// MinPurgeAge (or the stream's duplicate window, if longer).
	OlderThan time.Duration
	// BatchSize is the rows deleted per transaction, 1..MaxPurgeBatch
	// (DefaultPurgeBatch is a good value).
	BatchSize int
	// DryRun counts the rows without deleting them. The command line and
	// the admin API make it the default: deleting takes an explicit
	// --yes or "dry_run": false.
	DryRun bool
	// IncludeFailed deletes FAILED rows too. They are kept by default:
	// their bodies were never published, so the archive is their only copy.
	IncludeFailed bool
}

// PurgeResult reports a purge.
type PurgeResult struct {
	Cutoff    time.Time `json:"cutoff"`
	OlderThan string    `json:"older_than"`
	Rows      int64     `json:"rows"` // deleted, or that would be with DryRun
	Batches   int       `json:"batches"`
	DryRun    bool      `json:"dry_run"`
	// Kept older than the cutoff: PENDING rows (the outbox; never purged)
	// and FAILED rows (unless IncludeFailed).
	PendingKept int64 `json:"pending_kept"`
	FailedKept  int64 `json:"failed_kept"`
}

// Purge deletes archive rows created more than req.OlderThan ago, in
// batches of req.BatchSize rows (one short transaction each, so it never
// holds long locks or bloats one huge transaction). The rows of events
// still waiting for JetStream (PENDING: in the outbox) are never deleted.
// FAILED rows are deleted only with IncludeFailed: their bodies never
// reached the stream, so the archive is the only copy. The dedup rows are
// never touched, so a provider retry of a purged event is still answered
// as a duplicate.
//
// Why a minimum age (MinPurgeAge, 24 hours, or the stream's duplicate
// window if that is longer): the archive is the repair source of the
// stream. A single-node stream loses its un-fsynced tail to a power failure
// and a stream can be deleted by mistake; `hub reconcile --republish`
// rebuilds either from the archive, and only while the rows are there. A
// day is the time it takes to notice such an incident, and keeps the
// forensics of "what failed in the last day" answerable. It is never
// shorter than the stream's duplicate window, the horizon within which the
// hub may still be publishing an event (relay retries) and the stream
// deduplicating it: no row is purged while the stream may still act on it.
//
// Why batches and not partitions: dropping monthly partitions would make
// a purge instant, but a partitioned archive needs created_at in its
// primary key and every unique index, and a partition created ahead of
// time for each period; at webhook volumes (millions of rows a month) a
// batched delete on the created_at index takes seconds to minutes, which
// does not justify that. Revisit if the archive reaches billions of rows.
//
// A purge is recorded in the audit trail (action "purge"); a dry run,
// which deletes nothing, is not.
func (o *Ops) Purge(ctx context.Context, req PurgeRequest) (PurgeResult, error) {
	if req.DryRun {
		// A dry run is a read (admission.go): it counts the rows it would
		// delete, settled at that count.
		permit, err := o.admitRead(AdmitDryRun, Cost{Rows: DefaultPayloadScanRows})
		if err != nil {
			return PurgeResult{DryRun: true}, err
		}
		res, err := o.purge(ctx, req)
		permit.Scanned(res.Rows)
		permit.Release()
		return res, err
	}
	params := map[string]any{"older_than": fmtAge(req.OlderThan), "batch": req.BatchSize, "include_failed": req.IncludeFailed}
	return auditedResult(ctx, o, ActionPurge, "archive", params, func() (PurgeResult, error) { return o.purge(ctx, req) })
}

func (o *Ops) purge(ctx context.Context, req PurgeRequest) (PurgeResult, error) {
	res := PurgeResult{DryRun: req.DryRun, OlderThan: fmtAge(req.OlderThan)}
	if req.BatchSize < 1 || req.BatchSize > MaxPurgeBatch {
		return res, inputErr("batch", "must be within 1..%d rows, got %d", MaxPurgeBatch, req.BatchSize)
	}
	if minAge := o.minPurgeAge(ctx); req.OlderThan < minAge {
		return res, inputErr("older_than", "must be at least %s, got %s: the archive is the only source for repairing a stream that lost messages (hub reconcile --republish) and for the last day's forensics",
			fmtAge(minAge), fmtAge(req.OlderThan))
	}
	res.Cutoff = o.now().Add(-req.OlderThan)
	counts, err := o.archive.PurgeCounts(ctx, res.Cutoff)
	if err != nil {
		return res, fmt.Errorf("purge: %w", err)
	}
	res.PendingKept = counts.Pending
	if !req.IncludeFailed {
		res.FailedKept = counts.Failed
	}
	if req.DryRun {
		res.Rows = counts.Purgeable(req.IncludeFailed)
		return res, nil
	}
	for {
		began := time.Now()
		examined, deleted, err := o.archive.PurgeArchive(ctx, res.Cutoff, req.BatchSize, req.IncludeFailed)
		if err != nil {
			return res, fmt.Errorf("purge (after %d rows): %w", res.Rows, err)
		}
		res.Batches++
		res.Rows += deleted
		if examined < int64(req.BatchSize) {
			return res, nil
		}
		if err := purgeRest(ctx, time.Since(began)); err != nil {
			return res, fmt.Errorf("purge (after %d rows): %w", res.Rows, err)
		}
	}
}

// purgeMaxRest bounds the pause after one purge batch.
const purgeMaxRest = 5 * time.Second

// purgeRest pauses after a batch that took took, as long again (at most
// purgeMaxRest): a purge takes at most half of the time of one Postgres
// backend and of the disk's writes, and leaves more when the database is
// busy (a batch that takes longer is followed by a longer pause), so the
// ingest beside it keeps its latency. It ends early, with ctx's error,
// when ctx is done.
func purgeRest(ctx context.Context, took time.Duration) error {
	return backoff.Sleep(ctx, min(took, purgeMaxRest))
}

// minPurgeAge is MinPurgeAge, or the stream's duplicate window when the
// stream is reachable and its window is longer.
func (o *Ops) minPurgeAge(ctx context.Context) time.Duration {
	if o.js == nil {
		return MinPurgeAge
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := o.js.Stream(ctx, o.stream)
	if err != nil {
		return MinPurgeAge
	}
	return max(MinPurgeAge, s.CachedInfo().Config.Duplicates)
}

// fmtAge writes an age as an operator types it: 24h, 7d, 90m.
func fmtAge(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
