-- +goose Up
-- Events waiting for a retry that is not soon (a long backoff, a
-- Retry-After), kept here instead of in the stream: a message naked with a
-- delay still counts against the consumer's MaxAckPending, so a burst of
-- them would hold the window new events need. A row is written in the
-- transaction that records the event as processed (the subscriber
-- library's group commit), and the message is acked after it commits; the
-- runner's scheduler POSTs the row again at due_at (see park.go). A row
-- goes when its event is delivered or dead-lettered (at the retry
-- horizon, which due_at never passes).
CREATE TABLE __SCHEMA__.parked (
    -- The order of parking: an ordered destination delivers its rows in
    -- it, the first (its head) before any other.
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider     TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    subject      TEXT NOT NULL,
    stream_seq   BIGINT,
    -- The message's headers (a JSON object of lists) and exact body.
    headers      BYTEA NOT NULL,
    data         BYTEA NOT NULL,
    parked_at    TIMESTAMPTZ NOT NULL,
    -- When the next attempt may go; while a scheduler POSTs the row, the
    -- end of its lease (a crashed scheduler's row is taken again then).
    due_at       TIMESTAMPTZ NOT NULL,
    -- Failed attempts so far (the backoff's exponent); 0 for an event of
    -- an ordered destination parked behind its head without an attempt.
    attempts     INTEGER NOT NULL,
    -- The receiver asked for the wait (Retry-After): a recovery does not
    -- shorten it, `hub destinations retry-now` does.
    receiver_asked BOOLEAN NOT NULL DEFAULT FALSE,
    -- Why it waits (the last failure), sanitized.
    reason       TEXT NOT NULL DEFAULT '',
    CONSTRAINT uq_parked_event UNIQUE (provider, event_id)
);
CREATE INDEX ix_parked_due ON __SCHEMA__.parked (due_at, id);

-- +goose Down
DROP TABLE __SCHEMA__.parked;
