-- +goose Up
-- Cheaper archive writes, measured with `hub bench` (ceiling and hub runs).
--
-- Rows of a 1-2 KB webhook carry the body twice (payload JSONB and body
-- BYTEA), which crosses the default 2 KB TOAST threshold and makes every
-- insert try to compress both. Keeping rows up to ~8 KB inline and
-- uncompressed trades some disk for CPU, the scarcer resource here.
ALTER TABLE webhook_events SET (toast_tuple_target = 8160);

-- The forensics query only ever asks for FAILED rows by time; a partial
-- index serves it and costs nothing on the insert of every other row.
DROP INDEX ix_webhook_events_status_created_at;
CREATE INDEX ix_webhook_events_failed_created_at ON webhook_events (created_at)
    WHERE processing_status = 'FAILED';

-- +goose Down
DROP INDEX ix_webhook_events_failed_created_at;
CREATE INDEX ix_webhook_events_status_created_at ON webhook_events (processing_status, created_at);
ALTER TABLE webhook_events RESET (toast_tuple_target);
