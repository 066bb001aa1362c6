-- +goose Up
-- The dedup table: small, hot, kept forever. One row per (provider, event id)
-- the hub ever accepted. Its id is the archive id of the first delivery.
CREATE TABLE processed_webhook_events (
    id UUID PRIMARY KEY,
    provider VARCHAR(32) NOT NULL,
    event_id VARCHAR(255) NOT NULL,
    event_type VARCHAR(128) NOT NULL,
    processed_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    CONSTRAINT uq_processed_webhook_events_provider_event_id UNIQUE (provider, event_id)
);

-- The archive: one row per verified delivery (first deliveries and
-- duplicates alike). Large, cold, purgeable: purging it never touches the
-- dedup table. First deliveries are also the outbox: a PENDING row is
-- committed but not yet acknowledged by JetStream.
CREATE TABLE webhook_events (
    id UUID PRIMARY KEY,
    provider VARCHAR(32) NOT NULL,
    event_id VARCHAR(255) NOT NULL,
    event_type VARCHAR(128) NOT NULL,
    -- A queryable view of the body. JSONB normalises whitespace, key order
    -- and escapes, so the exact bytes are kept in body.
    payload JSONB NOT NULL,
    -- The signature header as received (forensics; never logged).
    signature TEXT,
    processing_status VARCHAR(32) NOT NULL DEFAULT 'PENDING'
        CONSTRAINT ck_webhook_events_processing_status
        CHECK (processing_status IN ('PENDING', 'PROCESSED', 'SKIPPED', 'FAILED')),
    error_message TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    -- The exact request body, published as the message data. Kept for the
    -- first delivery of an event (PENDING, PROCESSED, FAILED); NULL for
    -- SKIPPED duplicates, whose payload column still shows what they carried.
    body BYTEA,
    -- The signed timestamp, for schemes that have one.
    signed_at TIMESTAMPTZ,
    -- When the provider says the event happened, when it says so.
    occurred_at TIMESTAMPTZ,
    -- Outbox state of first deliveries.
    publish_attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ,
    first_attempt_at TIMESTAMPTZ,
    published_at TIMESTAMPTZ,
    stream_seq BIGINT,
    CONSTRAINT ck_webhook_events_pending_has_body
        CHECK (processing_status <> 'PENDING' OR (body IS NOT NULL AND next_attempt_at IS NOT NULL))
);

-- The relay's work queue: only unpublished rows, so it stays tiny however
-- large the archive grows.
CREATE INDEX ix_webhook_events_pending ON webhook_events (next_attempt_at)
    WHERE processing_status = 'PENDING';

-- Forensics: WHERE processing_status = 'FAILED' AND created_at > NOW() - INTERVAL '1 day',
-- and listings by status and time in general.
CREATE INDEX ix_webhook_events_status_created_at ON webhook_events (processing_status, created_at);

-- Every delivery of one event (first and duplicates), for `hub events show`.
CREATE INDEX ix_webhook_events_provider_event_id ON webhook_events (provider, event_id);

-- Retention: purge by age.
CREATE INDEX ix_webhook_events_created_at ON webhook_events (created_at);

-- +goose Down
DROP TABLE webhook_events;
DROP TABLE processed_webhook_events;
