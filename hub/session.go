package hub

import "time"

// SessionInfo is a signed-in console session as operators list it (`hub
// sessions list`, GET /admin/sessions, the console's Sessions page). It
// holds no secret: neither the cookie nor its hash, nor a token (a token
// session is named by the token's fingerprint).
type SessionInfo struct {
	// ID names the session for a revocation: random, not the cookie.
	// Empty for a session an older hub opened (revoke it by name).
	ID string `json:"id"`
	// Kind is "token" or "oidc".
	Kind string `json:"kind"`
	// Name is who signed in: "token 1a2b3c4d" or the operator's e-mail
	// (or subject).
	Name string `json:"name"`
	// Role is the role the session had at its last request: each request
	// maps it again from its credential, on the replica that serves it.
	Role string `json:"role"`
	// Issuer is an OIDC session's identity provider.
	Issuer    string    `json:"issuer,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	LastSeen  time.Time `json:"last_seen"`
	ExpiresAt time.Time `json:"expires_at"`
	// Bound is false for a session opened without a credential binding
	// (by an older hub): it is ended at its next request.
	Bound bool `json:"bound"`
}

// SessionQuery selects live sessions, newest first (hub/store's
// ListConsoleSessions).
type SessionQuery struct {
	Now  time.Time // sessions expired by then are not listed
	Name string    // exact name; "": any
	ID   string    // one session's id; "": any
	// BeforeCreated and BeforeID continue a listing after the session
	// created then with that id; zero: from the newest.
	BeforeCreated time.Time
	BeforeID      string
	Limit         int
}

// SessionSelector names the sessions a revocation ends: exactly one of
// ID (one session), Name (every session of one operator or token) and
// All.
type SessionSelector struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	All  bool   `json:"all,omitempty"`
}
