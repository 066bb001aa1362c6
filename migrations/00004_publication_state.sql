-- +goose NO TRANSACTION
-- +goose Up
-- The archive is written once (DESIGN invariant 8). A first delivery's
-- publication state (the outbox) moves from its wide archive row, which the
-- hub used to rewrite from PENDING to PROCESSED (a new ~3 KB tuple and
-- every index touched again), to the event's dedup row: marking a publish
-- now writes ~100 bytes.
--
-- processed_webhook_events, one row per event, carries:
--   next_attempt_at   set while the event waits for JetStream (the outbox;
--                     indexed below), NULL once published or given up
--   stream_seq,       set from JetStream's PubAck
--   published_at
--   publish_attempts, the relay's retry state
--   first_attempt_at,
--   publish_error
--
-- webhook_events keeps processing_status for what is known when the row is
-- written, and never changes it afterwards: SKIPPED (a duplicate) and
-- FAILED (cannot be published). A publishable first delivery is written
-- with NULL: its status is derived from the dedup row (PENDING while
-- next_attempt_at is set, PROCESSED once stream_seq is). The view
-- webhook_event_status gives every row's processing_status as before.
--
-- Rolling deploy: hubs of the previous version keep running on this schema
-- while the new ones start. They write PENDING archive rows and mark them
-- PROCESSED, as before (nothing here changes what they read or write), and
-- their relays claim only archive rows that are PENDING. New hubs never
-- write PENDING there; their relays also adopt due legacy PENDING rows
-- (FOR UPDATE SKIP LOCKED, so never one an old relay holds) into the new
-- outbox, rewriting such a row once. Every committed event is published by
-- one side or the other, under the same Nats-Msg-Id, so nothing is lost and
-- the duplicate window (or the relay's look-up in the stream) drops a
-- second copy. The legacy columns (publish_attempts, next_attempt_at,
-- first_attempt_at, published_at, stream_seq of webhook_events) stay for
-- the rows published before this migration; a later release drops them.
--
-- Without a transaction: the outbox index is built CONCURRENTLY, so ingest
-- goes on while it is built on a large dedup table. Every statement is
-- idempotent, so a migration interrupted halfway is simply run again.
ALTER TABLE processed_webhook_events
    ADD COLUMN IF NOT EXISTS next_attempt_at TIMESTAMPTZ,
    ADD COLUMN IF NOT EXISTS first_attempt_at TIMESTAMPTZ,
    ADD COLUMN IF NOT EXISTS publish_attempts INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS publish_error TEXT,
    ADD COLUMN IF NOT EXISTS stream_seq BIGINT,
    ADD COLUMN IF NOT EXISTS published_at TIMESTAMPTZ;

-- The relay's work queue: only unpublished events, so it stays tiny however
-- large the table grows.
CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_processed_webhook_events_due
    ON processed_webhook_events (next_attempt_at) WHERE next_attempt_at IS NOT NULL;

-- NULL: see the dedup row. The CHECK constraints pass NULL as they are.
ALTER TABLE webhook_events ALTER COLUMN processing_status DROP NOT NULL;
ALTER TABLE webhook_events ALTER COLUMN processing_status DROP DEFAULT;

-- Every archive row with its processing_status, as the seed design
-- describes it (PENDING, PROCESSED, SKIPPED, FAILED), whichever model wrote
-- it, and the publication state of first deliveries.
CREATE OR REPLACE VIEW webhook_event_status AS
SELECT a.id, a.provider, a.event_id, a.event_type, a.payload, a.signature,
       COALESCE(a.processing_status,
                CASE WHEN p.stream_seq IS NOT NULL THEN 'PROCESSED'
                     WHEN p.next_attempt_at IS NULL AND p.publish_error IS NOT NULL THEN 'FAILED'
                     ELSE 'PENDING' END)::VARCHAR(32) AS processing_status,
       COALESCE(a.error_message, p.publish_error) AS error_message,
       a.created_at, a.body, a.signed_at, a.occurred_at,
       COALESCE(p.publish_attempts, a.publish_attempts) AS publish_attempts,
       COALESCE(p.next_attempt_at, a.next_attempt_at) AS next_attempt_at,
       COALESCE(p.first_attempt_at, a.first_attempt_at) AS first_attempt_at,
       COALESCE(p.published_at, a.published_at) AS published_at,
       COALESCE(p.stream_seq, a.stream_seq) AS stream_seq,
       a.trace_parent
FROM webhook_events a
LEFT JOIN processed_webhook_events p ON p.id = a.id AND a.processing_status IS NULL;

-- +goose Down
-- Back to the archive as the outbox: events still waiting in the new one
-- become PENDING archive rows again, published ones PROCESSED.
UPDATE webhook_events a
SET processing_status = CASE WHEN p.stream_seq IS NOT NULL THEN 'PROCESSED'
                             WHEN p.next_attempt_at IS NOT NULL THEN 'PENDING'
                             ELSE 'FAILED' END,
    next_attempt_at = p.next_attempt_at, first_attempt_at = p.first_attempt_at,
    publish_attempts = p.publish_attempts, published_at = p.published_at, stream_seq = p.stream_seq,
    error_message = COALESCE(a.error_message, p.publish_error)
FROM processed_webhook_events p
WHERE p.id = a.id AND a.processing_status IS NULL;
DROP VIEW IF EXISTS webhook_event_status;
ALTER TABLE webhook_events ALTER COLUMN processing_status SET DEFAULT 'PENDING';
ALTER TABLE webhook_events ALTER COLUMN processing_status SET NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS ix_processed_webhook_events_due;
ALTER TABLE processed_webhook_events
    DROP COLUMN IF EXISTS next_attempt_at,
    DROP COLUMN IF EXISTS first_attempt_at,
    DROP COLUMN IF EXISTS publish_attempts,
    DROP COLUMN IF EXISTS publish_error,
    DROP COLUMN IF EXISTS stream_seq,
    DROP COLUMN IF EXISTS published_at;
