-- +goose Up
-- Crash-loop detection. Before the handler is called for a redelivered
-- message (or a redrive), the library adds one to the event's row here and
-- commits; when the call returns (success, error or panic) it takes the one
-- away again (on success in the handler's own transaction). A call that
-- never returns (the process died: os.Exit, a segfault, an OOM kill) stays
-- counted, so `unfinished` is the number of calls of the handler for this
-- event that killed the process. Past a limit the message is dead-lettered
-- without calling the handler again. First deliveries are not counted (no
-- extra write on the fast path). Rows go when the event is processed or
-- dead-lettered; at most one per event that was ever redelivered.
CREATE TABLE __SCHEMA__.handler_attempts (
    provider        TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    unfinished      INTEGER NOT NULL,
    last_started_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT pk_handler_attempts PRIMARY KEY (provider, event_id)
);

-- +goose Down
DROP TABLE __SCHEMA__.handler_attempts;
