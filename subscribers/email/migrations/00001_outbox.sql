-- +goose Up
-- Emails to send, written by the handlers in the same transaction as the
-- event's processed row; the sender loop sends unsent rows over SMTP and
-- marks them sent. message_id is deterministic per (event, kind) but not
-- unique on purpose: exactly-once comes from the subscriber library, and a
-- test counting rows per event proves it.
CREATE TABLE email.outbox (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id      TEXT NOT NULL,
    kind            TEXT NOT NULL,  -- welcome | cancellation
    provider        TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    recipient       TEXT NOT NULL,
    subject         TEXT NOT NULL,
    body            TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    last_error      TEXT,
    sent_at         TIMESTAMPTZ,
    -- Set when the sender gave up (a permanent SMTP rejection, or too many
    -- attempts); such rows are not retried.
    failed_at       TIMESTAMPTZ
);
-- The sender's queue: only unsent rows, so it stays small.
CREATE INDEX ix_outbox_pending ON email.outbox (next_attempt_at, id)
    WHERE sent_at IS NULL AND failed_at IS NULL;
CREATE INDEX ix_outbox_event ON email.outbox (provider, event_id);

-- +goose Down
DROP TABLE email.outbox;
