-- +goose Up
-- The subscriber library's own tables, in the subscriber's schema. The
-- placeholder __SCHEMA__ is replaced by the quoted schema name before goose
-- sees the file; the versions are recorded in
-- __SCHEMA__.subscriber_schema_version, apart from the service's own
-- migrations (__SCHEMA__.schema_version).

-- One row per event this subscriber has handled. Its insert commits in the
-- same transaction as the handler's side effect, so a redelivery finds it
-- and is skipped. Small and kept forever (never purged with the stream).
CREATE TABLE __SCHEMA__.processed_messages (
    subscriber   TEXT NOT NULL,
    provider     TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    subject      TEXT NOT NULL,
    -- Stream sequence of the delivery that was processed (NULL if unknown).
    stream_seq   BIGINT,
    processed_at TIMESTAMPTZ NOT NULL,
    outcome      TEXT NOT NULL
        CONSTRAINT ck_processed_messages_outcome CHECK (outcome IN ('processed', 'skipped_stale')),
    -- Set when the event was processed by a redrive of this dead letter.
    dead_letter_id BIGINT,
    CONSTRAINT pk_processed_messages PRIMARY KEY (subscriber, provider, event_id)
);
CREATE INDEX ix_processed_messages_processed_at ON __SCHEMA__.processed_messages (processed_at);

-- Messages whose handler failed MaxDeliver times, failed permanently, or
-- that can never be handled (missing hub headers). The message itself
-- (headers and exact body) is kept so it can be redriven after a fix, even
-- once the stream no longer holds it.
CREATE TABLE __SCHEMA__.dead_letters (
    id                   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subscriber           TEXT NOT NULL,
    provider             TEXT,  -- NULL when the hub headers were unreadable
    event_id             TEXT,
    subject              TEXT NOT NULL,
    stream_seq           BIGINT,
    headers              JSONB NOT NULL,
    data                 BYTEA NOT NULL,
    error                TEXT NOT NULL,
    attempts             INTEGER NOT NULL,
    created_at           TIMESTAMPTZ NOT NULL,
    redrive_requested_at TIMESTAMPTZ,
    redriven_at          TIMESTAMPTZ,
    -- The error of the last failed redrive (the request is then cleared).
    redrive_error        TEXT
);
CREATE INDEX ix_dead_letters_redrive ON __SCHEMA__.dead_letters (id)
    WHERE redrive_requested_at IS NOT NULL AND redriven_at IS NULL;
CREATE INDEX ix_dead_letters_event ON __SCHEMA__.dead_letters (provider, event_id);

-- The ordering helper's state: the provider time of the newest event
-- applied to each entity.
CREATE TABLE __SCHEMA__.entity_versions (
    kind             TEXT NOT NULL,
    id               TEXT NOT NULL,
    last_occurred_at TIMESTAMPTZ NOT NULL,
    last_event_id    TEXT NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    CONSTRAINT pk_entity_versions PRIMARY KEY (kind, id)
);

-- +goose Down
DROP TABLE __SCHEMA__.entity_versions;
DROP TABLE __SCHEMA__.dead_letters;
DROP TABLE __SCHEMA__.processed_messages;
