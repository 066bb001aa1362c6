-- +goose Up
-- The audit trail, whole and finished (docs/operations.md,
-- "Audit trail"; docs/security.md, "Database roles"):
--
--   * params and result are stored as the exact bytes hub/ops measured
--     (json keeps its input text; jsonb re-spaced it, so Postgres measured
--     longer text than Go and refused entries near the bound): the one size
--     rule, octet_length of the stored text <= 8192, is checked by both.
--   * outcome 'refused': an action refused (by validation, a limit or an
--     authorization check), inserted finished; 'interrupted': an entry left
--     running by a process that died, marked by the next one to start
--     (hub/ops), only once its heartbeat is older than 2 minutes, so that a
--     live replica's running entry is never taken.
--   * heartbeat_at: renewed by the process running the action while it runs.
--   * hookhub_grant_runtime(role): the grants of the hub's runtime role, run
--     by the owner after the migrations (`hub migrate up --runtime-role
--     ROLE`, migrations.GrantRuntime): it can insert entries and finish
--     running ones, never own, alter, truncate or delete them.
ALTER TABLE audit_log DROP CONSTRAINT IF EXISTS ck_audit_log_params;
ALTER TABLE audit_log DROP CONSTRAINT IF EXISTS ck_audit_log_result;
ALTER TABLE audit_log DROP CONSTRAINT IF EXISTS ck_audit_log_outcome;
ALTER TABLE audit_log ALTER COLUMN params DROP DEFAULT;
ALTER TABLE audit_log ALTER COLUMN params TYPE json USING params::json;
ALTER TABLE audit_log ALTER COLUMN params SET DEFAULT '{}';
ALTER TABLE audit_log ALTER COLUMN result TYPE json USING result::json;
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now();
ALTER TABLE audit_log ADD CONSTRAINT ck_audit_log_outcome
    CHECK (outcome IN ('running', 'ok', 'error', 'cancelled', 'refused', 'interrupted'));
ALTER TABLE audit_log ADD CONSTRAINT ck_audit_log_params CHECK (octet_length(params::text) <= 8192);
ALTER TABLE audit_log ADD CONSTRAINT ck_audit_log_result CHECK (result IS NULL OR octet_length(result::text) <= 8192);

-- The running entries, for the sweep that marks the interrupted ones.
CREATE INDEX IF NOT EXISTS ix_audit_log_running ON audit_log (heartbeat_at) WHERE outcome = 'running';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'audit_log is append-only: TRUNCATE refused';
    END IF;
    IF TG_OP = 'INSERT' THEN
        -- A new entry is running (its action starts) or refused (finished
        -- at once); nothing else is inserted.
        IF NEW.outcome NOT IN ('running', 'refused')
           OR (NEW.outcome = 'running' AND (NEW.result IS NOT NULL OR NEW.finished_at IS NOT NULL)) THEN
            RAISE EXCEPTION 'audit_log is append-only: a new entry is running or refused, got %', NEW.outcome;
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' THEN
        IF OLD.outcome = 'running' OR OLD.at >= now() - interval '400 days' THEN
            RAISE EXCEPTION 'audit_log is append-only: only finished rows older than 400 days may be deleted (row %)', OLD.id;
        END IF;
        RETURN OLD;
    END IF;
    -- UPDATE: a running row only, its identity unchanged.
    IF OLD.outcome <> 'running'
       OR NEW.id <> OLD.id OR NEW.at <> OLD.at
       OR NEW.actor_kind <> OLD.actor_kind OR NEW.actor_name <> OLD.actor_name
       OR NEW.actor_role <> OLD.actor_role OR NEW.via <> OLD.via
       OR NEW.action <> OLD.action OR NEW.target <> OLD.target
       OR NEW.params::text <> OLD.params::text THEN
        RAISE EXCEPTION 'audit_log is append-only: only a running entry may be finished, once (row %)', OLD.id;
    END IF;
    IF NEW.outcome = 'running' THEN
        -- Its heartbeat, and nothing else.
        IF NEW.heartbeat_at < OLD.heartbeat_at OR NEW.result IS NOT NULL OR NEW.error IS NOT NULL
           OR NEW.duration_ms IS NOT NULL OR NEW.finished_at IS NOT NULL THEN
            RAISE EXCEPTION 'audit_log is append-only: a running entry changes only its heartbeat (row %)', OLD.id;
        END IF;
    ELSIF NEW.outcome = 'interrupted' THEN
        -- Only an entry whose process stopped renewing its heartbeat.
        IF OLD.heartbeat_at >= now() - interval '2 minutes' THEN
            RAISE EXCEPTION 'audit_log: entry % is still renewed by its process; it is not interrupted', OLD.id;
        END IF;
    ELSIF NEW.outcome = 'refused' THEN
        NULL; -- an action refused after its entry was written (it changed nothing)
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

DROP TRIGGER IF EXISTS tr_audit_log_insert ON audit_log;
CREATE TRIGGER tr_audit_log_insert BEFORE INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

-- +goose StatementBegin
-- hookhub_grant_runtime gives role what the hub and the subscribers need at
-- run time, and no more on the audit trail: every table and sequence of
-- this schema (present, and future ones the owner creates) for reading and
-- writing, but on audit_log only SELECT, INSERT and the UPDATE of the
-- columns that finish an entry (the trigger decides which update passes).
-- The role owns nothing, so it cannot alter the table, disable its
-- trigger, truncate it or drop it. Run by the owner of the tables.
CREATE OR REPLACE FUNCTION hookhub_grant_runtime(runtime name) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF runtime = current_user THEN
        RAISE EXCEPTION 'the runtime role % must not be the owner that applies the migrations', runtime;
    END IF;
    -- The subscribers create their own schemas at start: CREATE on the
    -- database (only its owner or a superuser can grant it; another owner
    -- grants it by hand, docs/production.md).
    BEGIN
        EXECUTE format('GRANT CONNECT, CREATE ON DATABASE %I TO %I', current_database(), runtime);
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE NOTICE 'cannot grant CREATE on database % to %: grant it as the database owner', current_database(), runtime;
    END;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), runtime);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO %I', current_schema(), runtime);
    EXECUTE format('GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA %I TO %I', current_schema(), runtime);
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO %I', current_schema(), runtime);
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO %I', current_schema(), runtime);
    EXECUTE format('REVOKE ALL ON audit_log FROM %I', runtime);
    EXECUTE format('GRANT SELECT, INSERT ON audit_log TO %I', runtime);
    EXECUTE format('GRANT UPDATE (outcome, result, error, duration_ms, finished_at, heartbeat_at) ON audit_log TO %I', runtime);
    EXECUTE format('REVOKE ALL ON %I FROM %I', 'hub_schema_version', runtime);
    EXECUTE format('GRANT SELECT ON %I TO %I', 'hub_schema_version', runtime);
END
$$;
-- +goose StatementEnd

-- Only the owner grants (a runtime role calling it would fail anyway).
REVOKE ALL ON FUNCTION hookhub_grant_runtime(name) FROM PUBLIC;

-- +goose Down
-- The trail is kept: its rows, the outcomes 'refused' and 'interrupted',
-- the json columns, the heartbeat and this trigger function stay (the
-- 00004 hub inserts and finishes entries through assignment casts, which
-- the function allows). Only the grant helper, the sweep's index and the
-- INSERT trigger go.
DROP FUNCTION IF EXISTS hookhub_grant_runtime(name);
DROP INDEX IF EXISTS ix_audit_log_running;
DROP TRIGGER IF EXISTS tr_audit_log_insert ON audit_log;
