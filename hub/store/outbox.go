package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/hub"
)

// The outbox is the dedup rows whose next_attempt_at is set: the events
// committed but not yet acknowledged by JetStream (index
// ix_processed_webhook_events_due). Writing to it never touches the wide
// archive row (DESIGN invariant 8).

// claimSQL leases up to $1 due events for $2 milliseconds: they are due
// again only once the lease has passed, so no other relay takes them
// meanwhile, and a relay that dies while publishing leaves them to the next
// one. An event's first attempt is taken as its receipt when none was
// recorded: the committing process publishes it right after the commit. An
// event whose archive row is gone (it cannot be, short of a hand-made
// DELETE: purges keep the outbox's rows) has no body to publish: it is
// given up, FAILED with a message saying why, instead of staying due for
// ever.
const claimSQL = `
WITH due AS (
    SELECT id FROM processed_webhook_events
    WHERE next_attempt_at <= now()
    ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED
), orphans AS (
    UPDATE processed_webhook_events p
    SET next_attempt_at = NULL, publish_error = 'given up: the archive row was deleted before the event was published'
    FROM due
    WHERE p.id = due.id AND NOT EXISTS (SELECT 1 FROM webhook_events a WHERE a.id = p.id)
)
UPDATE processed_webhook_events p
SET next_attempt_at = now() + $2 * interval '1 millisecond'
FROM due, webhook_events a
WHERE p.id = due.id AND a.id = p.id
RETURNING p.id, p.provider, p.event_id, p.event_type, a.body, a.created_at, a.occurred_at,
          p.publish_attempts, COALESCE(p.first_attempt_at, p.processed_at), a.trace_parent,
          a.entities`

// Claim leases up to limit due events (skipping those another relay is
// claiming at the same moment) for lease, and returns them: they are not
// due again before lease has passed, so the caller publishes them outside
// any transaction and records the results with RecordPublished.
func (s *Store) Claim(ctx context.Context, limit int, lease time.Duration) ([]hub.OutboxRow, error) {
	ctx, cancel := context.WithTimeout(ctx, relayQueryTimeout)
	defer cancel()
	return s.outboxRows(ctx, "claim outbox rows", true, claimSQL, limit, lease.Milliseconds())
}

// relayQueryTimeout bounds the statements the relay runs with its
// long-lived context (Claim, RetryNow, OutboxBacklog). Without a deadline,
// a statement on a connection whose server stopped answering (its host
// died, the network is partitioned) waits until TCP gives up, minutes, or
// for ever behind a proxy that keeps the connection open: the relay would
// stop publishing while the pool's new connections reach the new primary.
const relayQueryTimeout = 10 * time.Second

// outboxRows runs sql and reads the events to publish it returns, from the
// columns id, provider, event_id, event_type, body, received_at,
// occurred_at, then (claimed: outbox rows) their attempts and first
// attempt, then trace_parent and entities. Its errors say what it did.
func (s *Store) outboxRows(ctx context.Context, what string, claimed bool, sql string, args ...any) ([]hub.OutboxRow, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.OutboxRow, error) {
		var p hub.OutboxRow
		var occurred *time.Time
		var traceParent *string
		var entities []string
		dest := []any{&p.ArchiveID, &p.Provider, &p.EventID, &p.EventType, &p.Body, &p.ReceivedAt, &occurred}
		if claimed {
			dest = append(dest, &p.Attempts, &p.FirstAttemptAt)
		}
		err := r.Scan(append(dest, &traceParent, &entities)...)
		p.Entities = parseEntities(entities)
		if occurred != nil {
			p.OccurredAt = *occurred
		}
		if traceParent != nil {
			p.TraceParent = *traceParent
		}
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// markPublishedSQL records acknowledged publishes: about a hundred bytes
// of the dedup row, never the archive row. Only events still in the outbox
// change.
const markPublishedSQL = `
UPDATE processed_webhook_events p
SET stream_seq = u.seq, published_at = COALESCE(NULLIF(u.at, $4), clock_timestamp()),
    publish_attempts = p.publish_attempts + 1, next_attempt_at = NULL, first_attempt_at = NULL,
    publish_error = NULL
FROM unnest($1::uuid[], $2::bigint[], $3::timestamptz[]) AS u(id, seq, at)
WHERE p.id = u.id AND p.next_attempt_at IS NOT NULL`

// markFailedSQL records failed publishes: due again after their backoff,
// or given up (FAILED) when the failure is permanent.
const markFailedSQL = `
UPDATE processed_webhook_events p
SET publish_attempts = p.publish_attempts + 1,
    first_attempt_at = COALESCE(p.first_attempt_at, p.processed_at),
    next_attempt_at = CASE WHEN u.permanent THEN NULL ELSE clock_timestamp() + u.retry_ms * interval '1 millisecond' END,
    publish_error = u.err
FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::bool[]) AS u(id, retry_ms, err, permanent)
WHERE p.id = u.id AND p.next_attempt_at IS NOT NULL`

// RecordPublished records publish results: acknowledged events leave the
// outbox with their stream sequence and PubAck time; failed ones stay, due
// again after their backoff (or FAILED when the failure is permanent).
// Events no longer in the outbox (recorded meanwhile by another publisher)
// are left as they are. The fast path and the claiming relay both record
// through it, or through GroupCommitter.RecordPublished, which has the
// acknowledged ones ride the next group commit.
func (s *Store) RecordPublished(ctx context.Context, results []hub.PublishResult) error {
	// [16]byte rather than uuid.UUID: pgx encodes it without reflection
	// or a detour through uuid's driver.Valuer.
	var ok markArgs
	var failIDs [][16]byte
	var retryMS []int64
	var errs []string
	var permanent []bool
	for _, r := range results {
		if r.Seq > 0 {
			ok.add(r)
			continue
		}
		failIDs = append(failIDs, r.ArchiveID)
		retryMS = append(retryMS, r.RetryIn.Milliseconds())
		errs = append(errs, cleanText(r.Err))
		permanent = append(permanent, r.Permanent)
	}
	if err := s.markPublished(ctx, &ok); err != nil {
		return err
	}
	if len(failIDs) > 0 {
		if _, err := s.pool.Exec(ctx, markFailedSQL, failIDs, retryMS, errs, permanent); err != nil {
			return fmt.Errorf("record publish failures: %w", err)
		}
	}
	return nil
}

// RetryNow makes every event in the outbox due now, e.g. when NATS comes
// back after an outage, so the backlog drains without waiting out each
// event's backoff.
func (s *Store) RetryNow(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, relayQueryTimeout)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `UPDATE processed_webhook_events SET next_attempt_at = now()
		WHERE next_attempt_at > now()`)
	if err != nil {
		return 0, fmt.Errorf("retry pending events: %w", err)
	}
	return tag.RowsAffected(), nil
}

// OutboxBacklog counts the events waiting for JetStream and finds when the
// oldest was received.
func (s *Store) OutboxBacklog(ctx context.Context) (hub.Backlog, error) {
	ctx, cancel := context.WithTimeout(ctx, relayQueryTimeout)
	defer cancel()
	var b hub.Backlog
	var oldest *time.Time
	err := s.pool.QueryRow(ctx, `
		SELECT count(*), min(processed_at)
		FROM processed_webhook_events WHERE next_attempt_at IS NOT NULL`).Scan(&b.Pending, &oldest)
	if err != nil {
		return hub.Backlog{}, fmt.Errorf("outbox backlog: %w", err)
	}
	if oldest != nil {
		b.Oldest = *oldest
	}
	return b, nil
}
