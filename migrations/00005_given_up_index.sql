-- +goose NO TRANSACTION
-- +goose Up
-- The events a relay gave up on: first deliveries whose publish failed
-- permanently. Migration 00004 records that on the dedup row (out of the
-- outbox, never published, with the error), and the view
-- webhook_event_status reports them FAILED. Without an index, finding
-- them (`hub events list --status FAILED`, a purge's count of the FAILED
-- rows it keeps) reads the whole dedup table, which is kept forever.
--
-- The index holds only those rows, which the hub does not produce in
-- normal operation (an event whose type cannot form a subject is FAILED
-- on its archive row at ingest, ix_webhook_events_failed_created_at): it
-- is empty or nearly so, no insert ever touches it, and the updates that
-- publish or claim an event already change next_attempt_at, which
-- ix_processed_webhook_events_due indexes, so none of them loses a HOT
-- update to it. Rows written before 00004 (publish_error NULL) are not in it.
--
-- Without a transaction: built CONCURRENTLY, so ingest goes on while it is
-- built on a large dedup table. Idempotent, so an interrupted run is run again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_processed_webhook_events_given_up
    ON processed_webhook_events (id)
    WHERE next_attempt_at IS NULL AND stream_seq IS NULL AND publish_error IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS ix_processed_webhook_events_given_up;
