// Package console is the operator's web console: server-rendered HTML
// pages under /console/, mounted by hub/admin next to the admin API
// (/admin/) on the admin listener. Its forms are bounded by MaxFormBytes,
// which the admin listener applies before any session is known.
//
// Operators sign in with OpenID Connect (oidc.go: the authorization code
// flow with PKCE, state and nonce; roles mapped from e-mail, domain and
// group rules, roles.go), or with the admin token (role "admin": every
// page and action) or the console's read-only token (role "read-only":
// every page, no action). A sign-in opens a server-side session stored in
// Postgres (SessionStore, hub/store's console_sessions: it survives a
// restart and every replica sees it; only the SHA-256 of its id is
// stored), named by a random browser-session cookie (no Expires or
// Max-Age; HttpOnly, SameSite=Strict, Secure behind HTTPS) and bounded by
// SessionLifetime and SessionIdle. A session is bound to the credential
// that opened it (the token's SHA-256, or the OIDC identity as of
// sign-in), and every request works its role out again from that
// credential under the serving replica's configuration (credentialRole):
// a credential that grants no role any more ends the session there and
// then; a changed role is the role the request acts with. Nothing of a
// session is cached between requests, so a revocation (hub/ops'
// RevokeSessions, the Sessions page) holds on every replica at the next
// request. Each token's role keeps at most
// MaxSessions sessions, each OIDC operator MaxOperatorSessions, and each
// ends only its own oldest past that, so no one can sign another's
// sessions out. Every POST carries the session's CSRF
// token, compared in constant time, and a cross-site Origin or
// Sec-Fetch-Site is refused. Failed sign-ins are limited per remote
// address (MaxFailedSignIns a minute), successful ones per address
// (MaxSignInsPerAddress) and per role (MaxSignInsPerRole).
//
// The console owns no logic of its own: every page and action goes
// through the same hub/ops operations as the command line and the admin
// API (Operator, the one interface both use), which check every input;
// their errors become the admin API's statuses (the hub's one table by
// error code, hubhttp.ErrorStatus) on an error page. Each action
// is logged as one "console action" line naming the role, the operator
// (session.actor) and, for a token, its fingerprint (the first 8 hex
// digits of its SHA-256), never the token.
//
// The pages need no JavaScript, no CDN and no build step: html/template
// with embedded templates and one embedded style sheet.
package console
