package store

import (
	"context"
	"fmt"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const claimSQL = `
SELECT id, provider, event_id, event_type, body, created_at, occurred_at, publish_attempts, first_attempt_at,
       trace_parent
FROM webhook_events
WHERE processing_status = 'PENDING' AND next_attempt_at <= now()
ORDER BY next_attempt_at
LIMIT $1
FOR UPDATE SKIP LOCKED`

// Claim locks up to limit due PENDING rows (skipping rows another relay
// holds), passes them to publish, records the results it returns, and
// commits. publish runs while the rows are locked, so no other hub replica
// publishes them at the same time. It returns how many rows were claimed.
// Rows publish gives no result for stay PENDING and due.
func (s *Store) Claim(ctx context.Context, limit int, publish func(context.Context, []hub.OutboxRow) []hub.PublishResult) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, claimSQL, limit)
		if err != nil {
			return fmt.Errorf("claim outbox rows: %w", err)
		}
		pending, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.OutboxRow, error) {
			var p hub.OutboxRow
			var occurred, first *time.Time
			var traceParent *string
			err := r.Scan(&p.ArchiveID, &p.Provider, &p.EventID, &p.EventType, &p.Body, &p.ReceivedAt, &occurred, &p.Attempts, &first, &traceParent)
			if occurred != nil {
				p.OccurredAt = *occurred
			}
			if first != nil {
				p.FirstAttemptAt = *first
			}
			if traceParent != nil {
				p.TraceParent = *traceParent
			}
			return p, err
		})
		if err != nil {
			return fmt.Errorf("claim outbox rows: %w", err)
		}
		n = len(pending)
		if n == 0 {
			return nil
		}
		return record(ctx, tx, publish(ctx, pending))
	})
	return n, err
}

const markPublishedSQL = `
UPDATE webhook_events w
SET processing_status = 'PROCESSED', published_at = COALESCE(NULLIF(u.at, $4), clock_timestamp()),
    stream_seq = u.seq, publish_attempts = w.publish_attempts + 1, next_attempt_at = NULL,
    error_message = NULL, first_attempt_at = COALESCE(w.first_attempt_at, now())
FROM unnest($1::uuid[], $2::bigint[], $3::timestamptz[]) AS u(id, seq, at)
WHERE w.id = u.id AND w.processing_status = 'PENDING'`

const markFailedSQL = `
UPDATE webhook_events w
SET publish_attempts = w.publish_attempts + 1,
    first_attempt_at = COALESCE(w.first_attempt_at, now()),
    next_attempt_at = clock_timestamp() + u.retry_ms * interval '1 millisecond',
    error_message = u.err,
    processing_status = CASE WHEN u.permanent THEN 'FAILED' ELSE 'PENDING' END
FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::bool[]) AS u(id, retry_ms, err, permanent)
WHERE w.id = u.id AND w.processing_status = 'PENDING'`

// execer is a pgx.Tx or a *pgxpool.Pool.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func record(ctx context.Context, tx execer, results []hub.PublishResult) error {
	// [16]byte rather than uuid.UUID: pgx encodes it without reflection
	// or a detour through uuid's driver.Valuer.
	var okIDs, failIDs [][16]byte
	var seqs, retryMS []int64
	var publishedAt []time.Time
	var errs []string
	var permanent []bool
	for _, r := range results {
		if r.Seq > 0 {
			okIDs = append(okIDs, r.ArchiveID)
			seqs = append(seqs, int64(r.Seq))
			publishedAt = append(publishedAt, r.PublishedAt)
			continue
		}
		failIDs = append(failIDs, r.ArchiveID)
		retryMS = append(retryMS, r.RetryIn.Milliseconds())
		errs = append(errs, cleanText(r.Err))
		permanent = append(permanent, r.Permanent)
	}
	if len(okIDs) > 0 {
		if _, err := tx.Exec(ctx, markPublishedSQL, okIDs, seqs, publishedAt, time.Time{}); err != nil {
			return fmt.Errorf("mark published: %w", err)
		}
	}
	if len(failIDs) > 0 {
		if _, err := tx.Exec(ctx, markFailedSQL, failIDs, retryMS, errs, permanent); err != nil {
			return fmt.Errorf("record publish failures: %w", err)
		}
	}
	return nil
}

// RecordPublished records the results of the fast path (rows published
// from memory right after their commit, without a claim): acknowledged
// rows become PROCESSED; failed ones stay PENDING with their error and a
// short backoff, so the relay retries them soon instead of after the
// grace. Rows no longer PENDING (published meanwhile by the relay) are
// left as they are.
func (s *Store) RecordPublished(ctx context.Context, results []hub.PublishResult) error {
	return record(ctx, s.pool, results)
}

// RetryNow makes every PENDING row due now, e.g. when NATS comes back after
// an outage, so the backlog drains without waiting out each row's backoff.
func (s *Store) RetryNow(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE webhook_events SET next_attempt_at = now()
		WHERE processing_status = 'PENDING' AND next_attempt_at > now()`)
	if err != nil {
		return 0, fmt.Errorf("retry pending rows: %w", err)
	}
	return tag.RowsAffected(), nil
}

// OutboxBacklog counts PENDING rows and finds the oldest.
func (s *Store) OutboxBacklog(ctx context.Context) (hub.Backlog, error) {
	var b hub.Backlog
	var oldest *time.Time
	err := s.pool.QueryRow(ctx, `SELECT count(*), min(created_at) FROM webhook_events WHERE processing_status = 'PENDING'`).Scan(&b.Pending, &oldest)
	if err != nil {
		return hub.Backlog{}, fmt.Errorf("outbox backlog: %w", err)
	}
	if oldest != nil {
		b.Oldest = *oldest
	}
	return b, nil
}
