package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/hub"
)

// ConsoleSession is a row of console_sessions: a signed-in console
// browser. IDHash is the SHA-256 of the session id its cookie holds; the
// id itself is never stored.
type ConsoleSession struct {
	IDHash []byte
	CSRF   string
	Role   string
	// Kind is "token" or "oidc"; Name who signed in ("token 1a2b3c4d",
	// an operator's e-mail or subject).
	Kind, Name string
	// CapKey groups the sessions one cap bounds (a token's role, an
	// operator).
	CapKey    string
	Created   time.Time
	LastSeen  time.Time
	ExpiresAt time.Time
	// Ref is the session's public name, by which operators revoke it.
	Ref string
	// TokenSum is a token session's credential: the SHA-256 of its
	// token. Identity is an OIDC session's, as of sign-in. A session with
	// neither (opened by an older hub) has no binding.
	TokenSum []byte
	Identity *ConsoleIdentity
}

// ConsoleIdentity is an OIDC operator's identity as their ID token gave
// it at sign-in: what their role is mapped from at every request.
type ConsoleIdentity struct {
	Issuer        string   `json:"iss"`
	Subject       string   `json:"sub"`
	Email         string   `json:"email,omitempty"`
	EmailVerified bool     `json:"email_verified,omitempty"`
	Groups        []string `json:"groups,omitempty"`
}

// MaxPurgeSessions bounds the expired console sessions (and OIDC
// sign-ins) one purge deletes: the rest wait for the next one.
const MaxPurgeSessions = 1000

// OpenConsoleSession stores s and then ends the oldest sessions of its
// CapKey past max, in one transaction, and purges up to MaxPurgeSessions
// expired rows (sessions and sign-ins) as of now.
func (s *Store) OpenConsoleSession(ctx context.Context, cs ConsoleSession, max int, now time.Time) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO console_sessions (id_hash, csrf, role, kind, name, cap_key, created_at, last_seen, expires_at,
			ref, token_sum, identity) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			cs.IDHash, cs.CSRF, cs.Role, cs.Kind, cs.Name, cs.CapKey, cs.Created, cs.LastSeen, cs.ExpiresAt,
			refOrNull(cs.Ref), cs.TokenSum, cs.Identity); err != nil {
			return err
		}
		// The OFFSET scan reads at most max+1 index entries of one key
		// plus the ones it deletes.
		_, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE id_hash IN (
			SELECT id_hash FROM console_sessions WHERE cap_key = $1 ORDER BY created_at DESC, id_hash OFFSET $2 LIMIT $3)`,
			cs.CapKey, max, MaxPurgeSessions)
		return err
	})
	if err != nil {
		return fmt.Errorf("open console session: %w", err)
	}
	return s.PurgeConsoleSessions(ctx, now)
}

// refOrNull is a session's ref as its column holds it: NULL for none (a
// session without one, as an older hub writes it; the column is unique).
func refOrNull(ref string) *string {
	if ref == "" {
		return nil
	}
	return &ref
}

// PurgeConsoleSessions deletes up to MaxPurgeSessions sessions and as many
// OIDC sign-ins that expired before now.
func (s *Store) PurgeConsoleSessions(ctx context.Context, now time.Time) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM console_sessions WHERE id_hash IN (
		SELECT id_hash FROM console_sessions WHERE expires_at <= $1 LIMIT $2)`, now, MaxPurgeSessions); err != nil {
		return fmt.Errorf("purge console sessions: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM console_oidc_logins WHERE state_hash IN (
		SELECT state_hash FROM console_oidc_logins WHERE expires_at <= $1 LIMIT $2)`, now, MaxPurgeSessions); err != nil {
		return fmt.Errorf("purge console sign-ins: %w", err)
	}
	return nil
}

// ConsoleSession returns the session whose id hashes to idHash if it has
// not expired by now, or ok false. When it was last seen more than touch
// ago, its last_seen becomes now and its expiry
// min(created+lifetime, now+idle): a session in use writes its row at most
// once per touch.
func (s *Store) ConsoleSession(ctx context.Context, idHash []byte, now time.Time, touch, lifetime, idle time.Duration) (ConsoleSession, bool, error) {
	cs := ConsoleSession{IDHash: idHash}
	var ref *string
	err := s.pool.QueryRow(ctx, `SELECT csrf, role, kind, name, cap_key, created_at, last_seen, expires_at, ref, token_sum, identity
		FROM console_sessions WHERE id_hash = $1 AND expires_at > $2`, idHash, now).
		Scan(&cs.CSRF, &cs.Role, &cs.Kind, &cs.Name, &cs.CapKey, &cs.Created, &cs.LastSeen, &cs.ExpiresAt, &ref, &cs.TokenSum, &cs.Identity)
	if ref != nil {
		cs.Ref = *ref
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ConsoleSession{}, false, nil
	}
	if err != nil {
		return ConsoleSession{}, false, fmt.Errorf("read console session: %w", err)
	}
	if now.Sub(cs.LastSeen) < touch {
		return cs, true, nil
	}
	exp := cs.Created.Add(lifetime)
	if e := now.Add(idle); e.Before(exp) {
		exp = e
	}
	tag, err := s.pool.Exec(ctx, `UPDATE console_sessions SET last_seen = $2, expires_at = $3 WHERE id_hash = $1 AND expires_at > $2`, idHash, now, exp)
	if err != nil {
		return ConsoleSession{}, false, fmt.Errorf("touch console session: %w", err)
	}
	if tag.RowsAffected() == 0 { // ended meanwhile
		return ConsoleSession{}, false, nil
	}
	cs.LastSeen, cs.ExpiresAt = now, exp
	return cs, true, nil
}

// EndConsoleSession deletes the session whose id hashes to idHash.
func (s *Store) EndConsoleSession(ctx context.Context, idHash []byte) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM console_sessions WHERE id_hash = $1`, idHash); err != nil {
		return fmt.Errorf("end console session: %w", err)
	}
	return nil
}

// SetConsoleSessionRole records the role the session whose id hashes to
// idHash acts with now (its credential maps to another role than when it
// was last recorded), for the sessions' listing.
func (s *Store) SetConsoleSessionRole(ctx context.Context, idHash []byte, role string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE console_sessions SET role = $2 WHERE id_hash = $1`, idHash, role); err != nil {
		return fmt.Errorf("set console session role: %w", err)
	}
	return nil
}

// ListConsoleSessions lists the sessions q selects that have not expired,
// newest first, at most q.Limit.
func (s *Store) ListConsoleSessions(ctx context.Context, q hub.SessionQuery) ([]hub.SessionInfo, error) {
	var before *time.Time
	if !q.BeforeCreated.IsZero() {
		before = &q.BeforeCreated
	}
	rows, err := s.pool.Query(ctx, `SELECT coalesce(ref, ''), kind, name, role, coalesce(identity->>'iss', ''), created_at, last_seen, expires_at,
			(token_sum IS NOT NULL OR identity IS NOT NULL) AND ref IS NOT NULL
		FROM console_sessions
		WHERE expires_at > $1 AND ($2 = '' OR name = $2) AND ($6 = '' OR ref = $6)
			AND ($3::timestamptz IS NULL OR (created_at, coalesce(ref, '')) < ($3, $4))
		ORDER BY created_at DESC, coalesce(ref, '') DESC LIMIT $5`, q.Now, q.Name, before, q.BeforeID, q.Limit, q.ID)
	if err != nil {
		return nil, fmt.Errorf("list console sessions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.SessionInfo, error) {
		var si hub.SessionInfo
		err := r.Scan(&si.ID, &si.Kind, &si.Name, &si.Role, &si.Issuer, &si.CreatedAt, &si.LastSeen, &si.ExpiresAt, &si.Bound)
		return si, err
	})
	if err != nil {
		return nil, fmt.Errorf("list console sessions: %w", err)
	}
	return out, nil
}

// RevokeConsoleSessions deletes the sessions sel names and returns how
// many there were. Every replica reads a session's row at each of its
// requests, so a deleted session is refused everywhere at its next one.
func (s *Store) RevokeConsoleSessions(ctx context.Context, sel hub.SessionSelector) (int64, error) {
	var q string
	var args []any
	switch {
	case sel.All:
		q = `DELETE FROM console_sessions`
	case sel.ID != "":
		q, args = `DELETE FROM console_sessions WHERE ref = $1`, []any{sel.ID}
	case sel.Name != "":
		q, args = `DELETE FROM console_sessions WHERE name = $1`, []any{sel.Name}
	default:
		return 0, errors.New("revoke console sessions: no session named")
	}
	tag, err := s.pool.Exec(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("revoke console sessions: %w", err)
	}
	return tag.RowsAffected(), nil
}

// CountConsoleSessions is the number of sessions of capKey kept (live or
// not yet purged).
func (s *Store) CountConsoleSessions(ctx context.Context, capKey string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM console_sessions WHERE cap_key = $1`, capKey).Scan(&n); err != nil {
		return 0, fmt.Errorf("count console sessions: %w", err)
	}
	return n, nil
}

// ConsoleLogin is an OpenID Connect sign-in between the redirect to the
// provider and its callback (console_oidc_logins).
type ConsoleLogin struct {
	StateHash []byte
	Nonce     string
	Verifier  string // the PKCE code verifier
	ReturnTo  string
	ExpiresAt time.Time
}

// StartConsoleLogin stores l, after purging up to MaxPurgeSessions expired
// rows as of now.
func (s *Store) StartConsoleLogin(ctx context.Context, l ConsoleLogin, now time.Time) error {
	if err := s.PurgeConsoleSessions(ctx, now); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO console_oidc_logins (state_hash, nonce, verifier, return_to, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		l.StateHash, l.Nonce, l.Verifier, l.ReturnTo, l.ExpiresAt); err != nil {
		return fmt.Errorf("start console sign-in: %w", err)
	}
	return nil
}

// TakeConsoleLogin deletes and returns the sign-in whose state hashes to
// stateHash if it has not expired by now, or ok false: each sign-in is
// used once.
func (s *Store) TakeConsoleLogin(ctx context.Context, stateHash []byte, now time.Time) (ConsoleLogin, bool, error) {
	l := ConsoleLogin{StateHash: stateHash}
	err := s.pool.QueryRow(ctx, `DELETE FROM console_oidc_logins WHERE state_hash = $1 RETURNING nonce, verifier, return_to, expires_at`, stateHash).
		Scan(&l.Nonce, &l.Verifier, &l.ReturnTo, &l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return ConsoleLogin{}, false, nil
	}
	if err != nil {
		return ConsoleLogin{}, false, fmt.Errorf("take console sign-in: %w", err)
	}
	if !l.ExpiresAt.After(now) {
		return ConsoleLogin{}, false, nil
	}
	return l, true, nil
}
