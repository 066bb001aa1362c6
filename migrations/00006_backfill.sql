-- +goose NO TRANSACTION
-- +goose Up
-- Backfill (`hub backfill`, HUB_BACKFILL_INTERVAL): events a provider's API
-- lists but whose webhook never arrived are ingested through the same
-- statement as a webhook (archive row + dedup row + outbox entry), so a
-- late webhook of the same event is still a duplicate.
--
-- origin says where an archive row came from: 'webhook' (a verified
-- request) or 'api' (read from the provider's API: no signature header).
-- It is written with the row and never changed (DESIGN invariant 8).
--
-- Rolling deploy: a hub of the previous version keeps inserting archive rows
-- without naming origin; the default makes them 'webhook', which they are.
-- ADD COLUMN with a constant default rewrites nothing (Postgres 11+): the
-- ACCESS EXCLUSIVE lock is held for a catalog change only. The CHECK is
-- added NOT VALID (no scan under that lock) and validated afterwards under
-- SHARE UPDATE EXCLUSIVE, which lets ingest go on. Without a transaction,
-- so the validation does not keep the first lock; every statement is
-- idempotent, so an interrupted run is simply run again.
ALTER TABLE webhook_events ADD COLUMN IF NOT EXISTS origin TEXT NOT NULL DEFAULT 'webhook';

-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'ck_webhook_events_origin') THEN
        ALTER TABLE webhook_events ADD CONSTRAINT ck_webhook_events_origin
            CHECK (origin IN ('webhook', 'api')) NOT VALID;
    END IF;
END
$$;
-- +goose StatementEnd

ALTER TABLE webhook_events VALIDATE CONSTRAINT ck_webhook_events_origin;

-- The view gains origin as its last column (CREATE OR REPLACE VIEW may only
-- append): readers of the previous version name their columns and are
-- unaffected.
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
       a.trace_parent,
       a.origin
FROM webhook_events a
LEFT JOIN processed_webhook_events p ON p.id = a.id AND a.processing_status IS NULL;

-- One row per provider: where its backfill stands. Saved after each page is
-- ingested, so an interrupted run continues with the next page. A run holds
-- the row's lease (lease_owner, lease_until, renewed with each page) so two
-- hubs never backfill one provider at once. hub/store owns it.
CREATE TABLE IF NOT EXISTS backfill_checkpoints (
    provider     VARCHAR(32) PRIMARY KEY,
    since        TIMESTAMPTZ NOT NULL,
    until        TIMESTAMPTZ NOT NULL,
    cursor       TEXT NOT NULL DEFAULT '',
    pages        BIGINT NOT NULL DEFAULT 0,
    listed       BIGINT NOT NULL DEFAULT 0,
    already      BIGINT NOT NULL DEFAULT 0,
    ingested     BIGINT NOT NULL DEFAULT 0,
    redelivered  BIGINT NOT NULL DEFAULT 0,
    failed       BIGINT NOT NULL DEFAULT 0,
    started_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    completed_at TIMESTAMPTZ,
    lease_owner  TEXT NOT NULL DEFAULT '',
    lease_until  TIMESTAMPTZ NOT NULL DEFAULT '-infinity',
    CONSTRAINT ck_backfill_checkpoints_window CHECK (until > since)
);

-- +goose Down
DROP TABLE IF EXISTS backfill_checkpoints;
-- A view cannot lose a column by CREATE OR REPLACE: back to 00004's.
DROP VIEW IF EXISTS webhook_event_status;
CREATE VIEW webhook_event_status AS
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
ALTER TABLE webhook_events DROP CONSTRAINT IF EXISTS ck_webhook_events_origin;
ALTER TABLE webhook_events DROP COLUMN IF EXISTS origin;
