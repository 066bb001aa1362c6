-- +goose Up
-- The audit trail (docs/operations.md, "Audit trail"): one row per operator
-- action (replay, republish, redrive, purge, bulk actions, destination
-- pause/resume), whoever asked (the console, the admin API, the command
-- line). hub/store owns it and hub/ops is its only writer: no HTTP route and
-- no method of the console's or the admin API's Operator writes to it.
--
-- A row is inserted when the action starts, with outcome 'running', before
-- anything is changed (an action that cannot be recorded does not run), and
-- finished once when the action ends: outcome, result, error and duration.
-- The trigger below makes the table append-only apart from that one step:
--   UPDATE   only of a 'running' row, only its outcome/result/error/
--            duration_ms/finished_at, and only to a finished outcome;
--            a finished row never changes again.
--   DELETE   only of finished rows older than 400 days (the retention
--            bound; the hub itself never deletes them).
--   TRUNCATE refused.
-- A database owner can drop the trigger; the trail protects against the
-- hub's code and its operators' tools, not against the database's owner.
CREATE TABLE IF NOT EXISTS audit_log (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          TIMESTAMPTZ NOT NULL,
    actor_kind  VARCHAR(16) NOT NULL,
    actor_name  VARCHAR(256) NOT NULL,
    actor_role  VARCHAR(32) NOT NULL,
    via         VARCHAR(16) NOT NULL,
    action      VARCHAR(64) NOT NULL,
    target      VARCHAR(512) NOT NULL DEFAULT '',
    params      JSONB NOT NULL DEFAULT '{}',
    result      JSONB,
    outcome     VARCHAR(16) NOT NULL DEFAULT 'running',
    error       VARCHAR(1024),
    duration_ms BIGINT,
    finished_at TIMESTAMPTZ,
    CONSTRAINT ck_audit_log_outcome CHECK (outcome IN ('running', 'ok', 'error', 'cancelled')),
    CONSTRAINT ck_audit_log_params CHECK (octet_length(params::text) <= 8192),
    CONSTRAINT ck_audit_log_result CHECK (result IS NULL OR octet_length(result::text) <= 8192)
);

-- The audit page's filters, newest first: by time, by actor, by action.
CREATE INDEX IF NOT EXISTS ix_audit_log_at ON audit_log (at, id);
CREATE INDEX IF NOT EXISTS ix_audit_log_actor ON audit_log (actor_name, id);
CREATE INDEX IF NOT EXISTS ix_audit_log_action ON audit_log (action, id);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'audit_log is append-only: TRUNCATE refused';
    END IF;
    IF TG_OP = 'DELETE' THEN
        IF OLD.outcome = 'running' OR OLD.at >= now() - interval '400 days' THEN
            RAISE EXCEPTION 'audit_log is append-only: only finished rows older than 400 days may be deleted (row %)', OLD.id;
        END IF;
        RETURN OLD;
    END IF;
    -- UPDATE: the one step that finishes a running row.
    IF OLD.outcome <> 'running' OR NEW.outcome = 'running'
       OR NEW.id <> OLD.id OR NEW.at <> OLD.at
       OR NEW.actor_kind <> OLD.actor_kind OR NEW.actor_name <> OLD.actor_name
       OR NEW.actor_role <> OLD.actor_role OR NEW.via <> OLD.via
       OR NEW.action <> OLD.action OR NEW.target <> OLD.target
       OR NEW.params::text <> OLD.params::text THEN
        RAISE EXCEPTION 'audit_log is append-only: only a running entry may be finished, once (row %)', OLD.id;
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

DROP TRIGGER IF EXISTS tr_audit_log_append_only ON audit_log;
CREATE TRIGGER tr_audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
DROP TRIGGER IF EXISTS tr_audit_log_no_truncate ON audit_log;
CREATE TRIGGER tr_audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- +goose Down
-- The trail is kept (rolling the schema back must not erase who did what):
-- the table, its trigger and its rows stay, and this migration's up finds
-- them again. It is dropped only when asked explicitly: `hub migrate down
-- --drop-audit` sets hookhub.drop_audit on its connections.
-- +goose StatementBegin
DO $$
BEGIN
    IF COALESCE(current_setting('hookhub.drop_audit', true), '') = 'on' THEN
        DROP TABLE IF EXISTS audit_log;
        DROP FUNCTION IF EXISTS audit_log_append_only();
    END IF;
END
$$;
-- +goose StatementEnd
