-- +goose Up
-- The web console's sessions and its OpenID Connect sign-ins in progress,
-- in Postgres so that a session survives a hub restart and works on every
-- replica behind a load balancer (no sticky sessions). hub/store owns the
-- SQL (hub/store/sessions.go).
--
-- console_sessions: one row per signed-in browser. id_hash is the SHA-256
-- of the session id the browser's cookie holds; the id itself is never
-- stored, so a copy of this table signs no one in. csrf is the session's
-- form token (useless without the cookie). cap_key groups the sessions a
-- cap bounds ("token:<role>" for a token sign-in, "oidc:<issuer> <subject>"
-- for an operator). expires_at is the earlier of created_at + lifetime and
-- last_seen + idle; expired rows are purged in bounded batches.
CREATE TABLE IF NOT EXISTS console_sessions (
    id_hash BYTEA PRIMARY KEY,
    csrf TEXT NOT NULL,
    role TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    cap_key TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    last_seen TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_console_sessions_expires_at ON console_sessions (expires_at);
CREATE INDEX IF NOT EXISTS ix_console_sessions_cap ON console_sessions (cap_key, created_at);

-- console_oidc_logins: an OpenID Connect sign-in between the redirect to
-- the provider and its callback, for at most ten minutes. state_hash is the
-- SHA-256 of the state parameter (which the browser's login cookie also
-- holds); the row is deleted when the callback uses it (once).
CREATE TABLE IF NOT EXISTS console_oidc_logins (
    state_hash BYTEA PRIMARY KEY,
    nonce TEXT NOT NULL,
    verifier TEXT NOT NULL,
    return_to TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_console_oidc_logins_expires_at ON console_oidc_logins (expires_at);

-- +goose Down
DROP TABLE IF EXISTS console_oidc_logins;
DROP TABLE IF EXISTS console_sessions;
