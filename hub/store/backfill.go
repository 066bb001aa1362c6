package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookhub/hookhub/hub"
)

// The backfill's queries: which listed events the hub already has, and the
// checkpoints of runs (table backfill_checkpoints). The missing events
// themselves are ingested by Ingest, the webhook's own
// statement, with hub.Delivery.Origin set to hub.OriginAPI.

// ErrBackfillBusy is returned by AcquireBackfill while another run holds
// the provider's checkpoint (hub.ErrBackfillBusy).
var ErrBackfillBusy = hub.ErrBackfillBusy

// KnownEvents returns which of eventIDs the hub already accepted for
// provider (their dedup rows exist), as a set: one query on the dedup
// table's unique index, however many ids a page holds.
func (s *Store) KnownEvents(ctx context.Context, provider string, eventIDs []string) (map[string]bool, error) {
	known := make(map[string]bool, len(eventIDs))
	if len(eventIDs) == 0 {
		return known, nil
	}
	ids := make([]string, len(eventIDs))
	for i, id := range eventIDs {
		ids[i] = cleanText(id)
	}
	rows, err := s.pool.Query(ctx, `SELECT event_id FROM processed_webhook_events
		WHERE provider = $1 AND event_id = ANY($2::text[])`, provider, ids)
	if err != nil {
		return nil, fmt.Errorf("known events: %w", err)
	}
	var id string
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { known[id] = true; return nil }); err != nil {
		return nil, fmt.Errorf("known events: %w", err)
	}
	return known, nil
}

const checkpointColumns = `provider, since, until, cursor, pages, listed, already, ingested, redelivered, failed,
       started_at, updated_at, completed_at, resumes, lease_owner, lease_until`

func scanCheckpoint(r pgx.Row) (hub.BackfillCheckpoint, error) {
	var c hub.BackfillCheckpoint
	var completed *time.Time
	var leaseUntil pgtype.Timestamptz
	err := r.Scan(&c.Provider, &c.Since, &c.Until, &c.Cursor, &c.Pages, &c.Listed, &c.Already, &c.Ingested, &c.Redelivered, &c.Failed,
		&c.StartedAt, &c.UpdatedAt, &completed, &c.Resumes, &c.LeaseOwner, &leaseUntil)
	if completed != nil {
		c.CompletedAt = *completed
	}
	if leaseUntil.InfinityModifier == pgtype.Finite {
		c.LeaseUntil = leaseUntil.Time
	}
	return c, err
}

// BackfillCheckpoint returns provider's checkpoint; the bool is false when
// the provider was never backfilled.
func (s *Store) BackfillCheckpoint(ctx context.Context, provider string) (hub.BackfillCheckpoint, bool, error) {
	c, err := scanCheckpoint(s.pool.QueryRow(ctx, `SELECT `+checkpointColumns+` FROM backfill_checkpoints WHERE provider = $1`, provider))
	if errors.Is(err, pgx.ErrNoRows) {
		return hub.BackfillCheckpoint{}, false, nil
	}
	if err != nil {
		return hub.BackfillCheckpoint{}, false, fmt.Errorf("read backfill checkpoint: %w", err)
	}
	return c, true, nil
}

// AcquireBackfill takes provider's checkpoint for a run by owner for lease
// (renewed by each SaveBackfill and RenewBackfill) and returns it. When the
// checkpoint is unfinished (some page saved) and restart is false, the run
// continues it: its window and cursor are returned as saved, and its
// Resumes count is one more. Otherwise (no checkpoint, a finished one, one
// without a saved page, or restart) it starts over on [since, until). It
// fails with ErrBackfillBusy while another owner's lease has not expired.
func (s *Store) AcquireBackfill(ctx context.Context, provider, owner string, since, until time.Time, restart bool, lease time.Duration) (hub.BackfillCheckpoint, error) {
	if !until.After(since) {
		return hub.BackfillCheckpoint{}, errors.New("acquire backfill: until must be after since")
	}
	// The INSERT starts a run; on conflict the UPDATE takes an unleased row,
	// starting over unless it is an unfinished run to continue. fresh is
	// whether it starts over (the row as it was, before the SET).
	const fresh = `($6 OR c.completed_at IS NOT NULL OR c.pages = 0)`
	c, err := scanCheckpoint(s.pool.QueryRow(ctx, `
INSERT INTO backfill_checkpoints AS c (provider, since, until, lease_owner, lease_until)
VALUES ($1, $2, $3, $4, clock_timestamp() + $5 * interval '1 millisecond')
ON CONFLICT (provider) DO UPDATE SET
    lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until,
    since = CASE WHEN `+fresh+` THEN EXCLUDED.since ELSE c.since END,
    until = CASE WHEN `+fresh+` THEN EXCLUDED.until ELSE c.until END,
    cursor = CASE WHEN `+fresh+` THEN '' ELSE c.cursor END,
    pages = CASE WHEN `+fresh+` THEN 0 ELSE c.pages END,
    listed = CASE WHEN `+fresh+` THEN 0 ELSE c.listed END,
    already = CASE WHEN `+fresh+` THEN 0 ELSE c.already END,
    ingested = CASE WHEN `+fresh+` THEN 0 ELSE c.ingested END,
    redelivered = CASE WHEN `+fresh+` THEN 0 ELSE c.redelivered END,
    failed = CASE WHEN `+fresh+` THEN 0 ELSE c.failed END,
    resumes = CASE WHEN `+fresh+` THEN 0 ELSE c.resumes + 1 END,
    started_at = CASE WHEN `+fresh+` THEN clock_timestamp() ELSE c.started_at END,
    completed_at = CASE WHEN `+fresh+` THEN NULL ELSE c.completed_at END,
    updated_at = clock_timestamp()
WHERE c.lease_until < clock_timestamp() OR c.lease_owner = EXCLUDED.lease_owner
RETURNING `+checkpointColumns, provider, since, until, owner, lease.Milliseconds(), restart))
	if errors.Is(err, pgx.ErrNoRows) {
		return hub.BackfillCheckpoint{}, fmt.Errorf("%w (%s)", ErrBackfillBusy, provider)
	}
	if err != nil {
		return hub.BackfillCheckpoint{}, fmt.Errorf("acquire backfill checkpoint: %w", err)
	}
	return c, nil
}

// RenewBackfill extends owner's lease on provider's checkpoint to lease
// from now: a run renews it while it works, so that its lease lapses soon
// after it dies, not a whole lease after its last saved page. It fails
// with ErrBackfillBusy when owner no longer holds the lease.
func (s *Store) RenewBackfill(ctx context.Context, provider, owner string, lease time.Duration) error {
	tag, err := s.pool.Exec(ctx, `UPDATE backfill_checkpoints
SET lease_until = clock_timestamp() + $3 * interval '1 millisecond'
WHERE provider = $1 AND lease_owner = $2 AND lease_until >= clock_timestamp()`, provider, owner, lease.Milliseconds())
	if err != nil {
		return fmt.Errorf("renew backfill lease: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: the lease of %s's checkpoint was lost", ErrBackfillBusy, provider)
	}
	return nil
}

// TakeBackfillLease ends whatever lease is held on provider's checkpoint,
// whoever holds it, keeping its progress, and returns the checkpoint as it
// was (LeaseOwner and LeaseUntil name the holder); the bool is false when
// the provider was never backfilled. It is the operator's way to take a
// killed run's lease back (`hub backfill --release-lease`): the caller
// decides whether the holder may still be alive.
func (s *Store) TakeBackfillLease(ctx context.Context, provider string) (hub.BackfillCheckpoint, bool, error) {
	c, err := scanCheckpoint(s.pool.QueryRow(ctx, `
WITH old AS (SELECT `+checkpointColumns+` FROM backfill_checkpoints WHERE provider = $1 FOR UPDATE)
UPDATE backfill_checkpoints c SET lease_until = '-infinity' FROM old WHERE c.provider = old.provider
RETURNING old.provider, old.since, old.until, old.cursor, old.pages, old.listed, old.already, old.ingested,
    old.redelivered, old.failed, old.started_at, old.updated_at, old.completed_at, old.resumes, old.lease_owner, old.lease_until`, provider))
	if errors.Is(err, pgx.ErrNoRows) {
		return hub.BackfillCheckpoint{}, false, nil
	}
	if err != nil {
		return hub.BackfillCheckpoint{}, false, fmt.Errorf("take backfill lease: %w", err)
	}
	return c, true, nil
}

// SaveBackfill records owner's progress (cursor and counts; CompletedAt
// set once the window is listed) and renews its lease; when done it also
// releases the lease. It fails with ErrBackfillBusy when owner no longer
// holds the lease (it expired and another run took the checkpoint).
func (s *Store) SaveBackfill(ctx context.Context, owner string, c hub.BackfillCheckpoint, lease time.Duration) error {
	var completed *time.Time
	if !c.CompletedAt.IsZero() {
		completed = &c.CompletedAt
	}
	tag, err := s.pool.Exec(ctx, `
UPDATE backfill_checkpoints SET cursor = $3, pages = $4, listed = $5, already = $6, ingested = $7, failed = $8,
    completed_at = $9, updated_at = clock_timestamp(),
    lease_until = CASE WHEN $9::timestamptz IS NULL THEN clock_timestamp() + $10 * interval '1 millisecond' ELSE '-infinity' END,
    redelivered = $11
WHERE provider = $1 AND lease_owner = $2 AND lease_until >= clock_timestamp()`,
		c.Provider, owner, cleanText(c.Cursor), c.Pages, c.Listed, c.Already, c.Ingested, c.Failed, completed, lease.Milliseconds(),
		c.Redelivered)
	if err != nil {
		return fmt.Errorf("save backfill checkpoint: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: the lease of %s's checkpoint was lost", ErrBackfillBusy, c.Provider)
	}
	return nil
}

// ReleaseBackfill gives up owner's lease on provider's checkpoint, keeping
// its progress (an interrupted run); the next run may continue it at once.
func (s *Store) ReleaseBackfill(ctx context.Context, provider, owner string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE backfill_checkpoints SET lease_until = '-infinity'
		WHERE provider = $1 AND lease_owner = $2`, provider, owner); err != nil {
		return fmt.Errorf("release backfill checkpoint: %w", err)
	}
	return nil
}
