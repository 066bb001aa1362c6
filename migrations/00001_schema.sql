-- +goose Up
-- The schema hookhub v0.1.0 ships: what the pre-release migrations
-- 00001-00008 built, without the pre-release data model in which an event's
-- publication state lived on its archive row (docs/migrations.md). A
-- database created by those migrations is refused (package migrations), not
-- migrated: recreate it.
--
-- In one transaction: the tables are new, so no index needs CONCURRENTLY,
-- and a run that fails leaves nothing behind.

-- The dedup table: small, hot, kept forever. One row per (provider, event
-- id) the hub ever accepted; its id is the archive id of the first delivery.
-- It also carries the event's publication state (the outbox), so that
-- marking a publish writes ~100 bytes, never the wide archive row (DESIGN
-- invariant 8):
--   next_attempt_at   set while the event waits for JetStream (the outbox;
--                     ix_processed_webhook_events_due), NULL once published
--                     or given up
--   stream_seq,       set from JetStream's PubAck
--   published_at
--   publish_attempts, the relay's retry state
--   first_attempt_at,
--   publish_error
CREATE TABLE IF NOT EXISTS processed_webhook_events (
    id UUID PRIMARY KEY,
    provider VARCHAR(32) NOT NULL,
    event_id VARCHAR(255) NOT NULL,
    event_type VARCHAR(128) NOT NULL,
    processed_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    next_attempt_at TIMESTAMPTZ,
    first_attempt_at TIMESTAMPTZ,
    publish_attempts INTEGER NOT NULL DEFAULT 0,
    publish_error TEXT,
    stream_seq BIGINT,
    published_at TIMESTAMPTZ,
    CONSTRAINT uq_processed_webhook_events_provider_event_id UNIQUE (provider, event_id)
);

-- The relay's work queue: only unpublished events, so it stays tiny however
-- large the table grows.
CREATE INDEX IF NOT EXISTS ix_processed_webhook_events_due
    ON processed_webhook_events (next_attempt_at) WHERE next_attempt_at IS NOT NULL;

-- The events a relay gave up on: first deliveries whose publish failed
-- permanently (out of the outbox, never published, with the error). Without
-- an index, finding them (`hub events list --status FAILED`, a purge's count
-- of the FAILED rows it keeps) reads the whole dedup table. The hub does not
-- produce such rows in normal operation, so the index is empty or nearly
-- so; no insert touches it, and the updates that publish or claim an event
-- already change next_attempt_at, so none loses a HOT update to it.
CREATE INDEX IF NOT EXISTS ix_processed_webhook_events_given_up
    ON processed_webhook_events (id)
    WHERE next_attempt_at IS NULL AND stream_seq IS NULL AND publish_error IS NOT NULL;

-- The archive: one row per verified delivery (first deliveries and
-- duplicates alike), written once and never changed (DESIGN invariant 8).
-- Large, cold, purgeable: purging it never touches the dedup table.
--
-- processing_status is what is known when the row is written: SKIPPED (a
-- duplicate) or FAILED (cannot be published: a type that cannot form a
-- subject). A publishable first delivery is written with NULL: its status
-- is its dedup row's (PENDING while next_attempt_at is set, PROCESSED once
-- stream_seq is). The view webhook_event_status gives every row's status.
CREATE TABLE IF NOT EXISTS webhook_events (
    id UUID PRIMARY KEY,
    provider VARCHAR(32) NOT NULL,
    event_id VARCHAR(255) NOT NULL,
    event_type VARCHAR(128) NOT NULL,
    -- A queryable view of the body. JSONB normalises whitespace, key order
    -- and escapes, so the exact bytes are kept in body.
    payload JSONB NOT NULL,
    -- The signature header as received (forensics; never logged).
    signature TEXT,
    processing_status VARCHAR(32)
        CONSTRAINT ck_webhook_events_processing_status
        CHECK (processing_status IN ('SKIPPED', 'FAILED')),
    error_message TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    -- The exact request body, published as the message data. Kept for the
    -- first delivery of an event; NULL for SKIPPED duplicates, whose payload
    -- column still shows what they carried.
    body BYTEA,
    -- The signed timestamp, for schemes that have one.
    signed_at TIMESTAMPTZ,
    -- When the provider says the event happened, when it says so.
    occurred_at TIMESTAMPTZ,
    -- The W3C traceparent of the hub's span for the delivery, when the hub
    -- traces (HUB_OTEL_ENABLED): the relay publishes it with the message,
    -- so a subscriber continues the delivery's trace even when the relay
    -- publishes long after the request. NULL without tracing.
    trace_parent TEXT,
    -- Where the row came from: 'webhook' (a verified request) or 'api'
    -- (read from the provider's API by a backfill: no signature header).
    origin TEXT NOT NULL DEFAULT 'webhook'
        CONSTRAINT ck_webhook_events_origin CHECK (origin IN ('webhook', 'api'))
)
-- Rows of a 1-2 KB webhook carry the body twice (payload JSONB and body
-- BYTEA), which crosses the default 2 KB TOAST threshold and makes every
-- insert try to compress both. Keeping rows up to ~8 KB inline and
-- uncompressed trades some disk for CPU, the scarcer resource here
-- (measured with `hub bench`).
WITH (toast_tuple_target = 8160);

-- Forensics: the FAILED rows by time. A partial index serves it and costs
-- nothing on the insert of every other row.
CREATE INDEX IF NOT EXISTS ix_webhook_events_failed_created_at ON webhook_events (created_at)
    WHERE processing_status = 'FAILED';

-- Every delivery of one event (first and duplicates), for `hub events show`.
CREATE INDEX IF NOT EXISTS ix_webhook_events_provider_event_id ON webhook_events (provider, event_id);

-- Retention: purge by age; listings newest first.
CREATE INDEX IF NOT EXISTS ix_webhook_events_created_at ON webhook_events (created_at);

-- The events list's filters by type, and by provider and type (`hub events
-- list --type`, /admin/events, the console's Events page), page newest
-- first. Without it, a (provider, type) pair that matches nothing reads the
-- whole archive (190 ms on a million rows). The planner only chooses it
-- when it knows which pairs are rare or absent: provider and type are far
-- from independent, which the extended statistics tell it (most common
-- pairs, kept by ANALYZE). BenchmarkEventsPage (hub/console) on 1,000,000
-- rows: a pair that matches nothing 191 ms -> 0.8 ms. Cost: one more B-tree
-- entry per archived delivery (the archive is append-only).
CREATE INDEX IF NOT EXISTS ix_webhook_events_type_provider_created_at
    ON webhook_events (event_type, provider, created_at, id);

CREATE STATISTICS IF NOT EXISTS st_webhook_events_provider_type (mcv)
    ON provider, event_type FROM webhook_events;

-- Every archive row with its processing_status (PENDING, PROCESSED,
-- SKIPPED, FAILED, as the seed design describes it) and the publication
-- state of first deliveries. Query it, not webhook_events.processing_status.
CREATE OR REPLACE VIEW webhook_event_status AS
SELECT a.id, a.provider, a.event_id, a.event_type, a.payload, a.signature,
       COALESCE(a.processing_status,
                CASE WHEN p.stream_seq IS NOT NULL THEN 'PROCESSED'
                     WHEN p.next_attempt_at IS NULL AND p.publish_error IS NOT NULL THEN 'FAILED'
                     ELSE 'PENDING' END)::VARCHAR(32) AS processing_status,
       COALESCE(a.error_message, p.publish_error) AS error_message,
       a.created_at, a.body, a.signed_at, a.occurred_at,
       COALESCE(p.publish_attempts, 0) AS publish_attempts,
       p.next_attempt_at,
       p.first_attempt_at,
       p.published_at,
       p.stream_seq,
       a.trace_parent,
       a.origin
FROM webhook_events a
LEFT JOIN processed_webhook_events p ON p.id = a.id AND a.processing_status IS NULL;

-- One row per provider: where its backfill stands. Saved after each page is
-- ingested, so an interrupted run continues with the next page. A run holds
-- the row's lease (lease_owner, lease_until, renewed with each page) so two
-- hubs never backfill one provider at once. resumes counts how many times
-- later runs continued an unfinished backfill: a periodic run continues one
-- a bounded number of times, then starts over on the current window. hub/store
-- owns it.
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
    resumes      INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT ck_backfill_checkpoints_window CHECK (until > since)
);

-- +goose Down
DROP TABLE IF EXISTS backfill_checkpoints;
DROP VIEW IF EXISTS webhook_event_status;
DROP TABLE IF EXISTS webhook_events;
DROP TABLE IF EXISTS processed_webhook_events;
