-- +goose Up
-- A destination's own tables, in its subscriber's schema (named after the
-- destination). The placeholder __SCHEMA__ is replaced by the quoted schema
-- name before goose sees the file (destination.Migrations): one set of
-- migrations serves every destination. Versions are recorded in
-- __SCHEMA__.schema_version.

-- One row per HTTP attempt: the delivery log `hub destinations` and the
-- retry horizon read (the first attempt of an event starts its horizon).
-- A success is written in the handler's transaction, a failure on its own.
-- Purged past the retention (DESTINATIONS_ATTEMPT_RETENTION), in batches.
CREATE TABLE __SCHEMA__.attempts (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider     TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    -- Stream sequence of the delivery (NULL if unknown).
    stream_seq   BIGINT,
    attempted_at TIMESTAMPTZ NOT NULL,
    -- HTTP status of the answer; NULL when there was none (connection
    -- refused, timeout, TLS error).
    status       INTEGER,
    latency_ms   DOUBLE PRECISION NOT NULL,
    outcome      TEXT NOT NULL
        CONSTRAINT ck_attempts_outcome CHECK (outcome IN ('delivered', 'failed', 'gone', 'dead_lettered')),
    -- The transport error or why the answer failed (sanitized, <= 2 KiB).
    error        TEXT NOT NULL DEFAULT '',
    -- The start of the response body (sanitized, <= 1 KiB).
    response     TEXT NOT NULL DEFAULT ''
);
-- An event's attempts (the first one: the retry horizon).
CREATE INDEX ix_attempts_event ON __SCHEMA__.attempts (provider, event_id, attempted_at);
-- The last hour's figures, the last attempt, the purge.
CREATE INDEX ix_attempts_attempted_at ON __SCHEMA__.attempts (attempted_at);
-- The last success, found at once however many failures follow it.
CREATE INDEX ix_attempts_delivered ON __SCHEMA__.attempts (attempted_at) WHERE outcome = 'delivered';

-- The destination's one row: whether it delivers (active), waits for an
-- operator (paused) or was disabled (its endpoint answered 410 Gone), and
-- what the running process declared (url, subjects; never secrets).
CREATE TABLE __SCHEMA__.destination_state (
    singleton  BOOLEAN PRIMARY KEY DEFAULT TRUE
        CONSTRAINT ck_destination_state_singleton CHECK (singleton),
    state      TEXT NOT NULL DEFAULT 'active'
        CONSTRAINT ck_destination_state_state CHECK (state IN ('active', 'paused', 'disabled')),
    reason     TEXT NOT NULL DEFAULT '',
    changed_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    url        TEXT NOT NULL DEFAULT '',
    subjects   TEXT[] NOT NULL DEFAULT '{}',
    updated_at TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
INSERT INTO __SCHEMA__.destination_state DEFAULT VALUES;

-- +goose Down
DROP TABLE __SCHEMA__.destination_state;
DROP TABLE __SCHEMA__.attempts;
