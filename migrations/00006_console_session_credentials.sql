-- +goose Up
-- A console session lasts only as long as what granted it. Each
-- session is bound to its credential, and every request re-checks it
-- against the configuration of the replica that serves it (hub/console):
--   token_sum  the SHA-256 of the token a token session signed in with
--              (never the token). A session whose token is no longer
--              configured is ended; one whose token now signs in as
--              another role acts with that role.
--   identity   an OpenID Connect session's identity as of sign-in (issuer,
--              subject, e-mail and whether it was verified, groups): its
--              role is mapped again with the role rules in force; no role
--              ends it.
--   ref        the session's public name in `hub sessions list`, the admin
--              API and the console's Sessions page, by which an operator
--              revokes it (random; not the cookie, not its hash).
--
-- The sessions that exist now were opened without a binding: they are
-- ended here (their operators sign in again), not kept with authority no
-- one checks. An older hub still running during a rolling deploy neither
-- writes nor reads these columns: the sessions it opens have no binding and
-- a new hub ends them at their first request on it.
ALTER TABLE console_sessions ADD COLUMN IF NOT EXISTS ref TEXT;
ALTER TABLE console_sessions ADD COLUMN IF NOT EXISTS token_sum BYTEA;
ALTER TABLE console_sessions ADD COLUMN IF NOT EXISTS identity JSONB;
DELETE FROM console_sessions;
CREATE UNIQUE INDEX IF NOT EXISTS ux_console_sessions_ref ON console_sessions (ref);
CREATE INDEX IF NOT EXISTS ix_console_sessions_name ON console_sessions (name);
CREATE INDEX IF NOT EXISTS ix_console_sessions_created ON console_sessions (created_at, ref);

-- +goose Down
-- An older hub honours a session without checking its credential: end them
-- all rather than hand it sessions it cannot check.
DELETE FROM console_sessions;
DROP INDEX IF EXISTS ix_console_sessions_created;
DROP INDEX IF EXISTS ix_console_sessions_name;
DROP INDEX IF EXISTS ux_console_sessions_ref;
ALTER TABLE console_sessions DROP COLUMN IF EXISTS identity;
ALTER TABLE console_sessions DROP COLUMN IF EXISTS token_sum;
ALTER TABLE console_sessions DROP COLUMN IF EXISTS ref;
