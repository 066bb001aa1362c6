package store_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
)

func sessionRow(key string, i int, now time.Time, ttl time.Duration) store.ConsoleSession {
	h := sha256.Sum256(fmt.Appendf(nil, "%s-%d", key, i))
	return store.ConsoleSession{IDHash: h[:], CSRF: "c", Role: "admin", Kind: "token", Name: "token x", CapKey: key,
		Created: now, LastSeen: now, ExpiresAt: now.Add(ttl)}
}

// A cap keeps the newest sessions of one key and never touches another
// key's; expired rows are purged at most MaxPurgeSessions at a time; a
// session is touched at most once per touch interval and never past its
// lifetime; a sign-in is taken once.
func TestConsoleSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newStore(t)
	now := time.Now().Truncate(time.Microsecond)

	other := sessionRow("token:read-only", 0, now, time.Hour)
	require.NoError(t, st.OpenConsoleSession(ctx, other, 3, now))
	for i := range 5 {
		require.NoError(t, st.OpenConsoleSession(ctx, sessionRow("oidc:alice", i, now.Add(time.Duration(i)*time.Second), time.Hour), 3, now))
	}
	n, err := st.CountConsoleSessions(ctx, "oidc:alice")
	require.NoError(t, err)
	require.Equal(t, 3, n)
	_, ok, err := st.ConsoleSession(ctx, sessionRow("oidc:alice", 0, now, 0).IDHash, now, time.Minute, 8*time.Hour, time.Hour)
	require.NoError(t, err)
	require.False(t, ok, "the oldest was ended")
	_, ok, err = st.ConsoleSession(ctx, other.IDHash, now, time.Minute, 8*time.Hour, time.Hour)
	require.NoError(t, err)
	require.True(t, ok, "another key's session is untouched")

	// Touch: within the interval nothing is written; past it, the expiry
	// moves, but never past the lifetime.
	cs, ok, err := st.ConsoleSession(ctx, other.IDHash, now.Add(30*time.Second), time.Minute, 8*time.Hour, time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, now.Add(time.Hour), cs.ExpiresAt)
	cs, _, err = st.ConsoleSession(ctx, other.IDHash, now.Add(50*time.Minute), time.Minute, 80*time.Minute, time.Hour)
	require.NoError(t, err)
	require.Equal(t, now.Add(80*time.Minute), cs.ExpiresAt, "bounded by the lifetime")
	_, ok, err = st.ConsoleSession(ctx, other.IDHash, now.Add(81*time.Minute), time.Minute, 80*time.Minute, time.Hour)
	require.NoError(t, err)
	require.False(t, ok, "past its lifetime")

	// Purge in bounded batches.
	_, err = pool.Exec(ctx, `INSERT INTO console_sessions (id_hash, csrf, role, kind, name, cap_key, created_at, last_seen, expires_at)
		SELECT sha256(i::text::bytea), 'c', 'admin', 'token', 'token x', 'token:admin', $1, $1, $1 FROM generate_series(1, $2) i`,
		now.Add(-time.Hour), store.MaxPurgeSessions+500)
	require.NoError(t, err)
	require.NoError(t, st.PurgeConsoleSessions(ctx, now))
	n, err = st.CountConsoleSessions(ctx, "token:admin")
	require.NoError(t, err)
	require.Equal(t, 500, n)
	require.NoError(t, st.PurgeConsoleSessions(ctx, now))
	n, err = st.CountConsoleSessions(ctx, "token:admin")
	require.NoError(t, err)
	require.Zero(t, n)

	// A sign-in in progress is taken once, and not once expired.
	l := store.ConsoleLogin{StateHash: []byte("state-1"), Nonce: "n", Verifier: "v", ReturnTo: "/console/", ExpiresAt: now.Add(10 * time.Minute)}
	require.NoError(t, st.StartConsoleLogin(ctx, l, now))
	got, ok, err := st.TakeConsoleLogin(ctx, l.StateHash, now)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "v", got.Verifier)
	_, ok, err = st.TakeConsoleLogin(ctx, l.StateHash, now)
	require.NoError(t, err)
	require.False(t, ok, "used once")
	l.StateHash = []byte("state-2")
	require.NoError(t, st.StartConsoleLogin(ctx, l, now))
	_, ok, err = st.TakeConsoleLogin(ctx, l.StateHash, now.Add(11*time.Minute))
	require.NoError(t, err)
	require.False(t, ok, "expired")
}

// Sessions keep their credential binding; the listing pages through
// every live session exactly once (ties on the creation time broken by
// id), leaves out expired ones, shows a session without a binding as
// unbound, and a revocation deletes what it names.
func TestListAndRevokeConsoleSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := newStore(t)
	now := time.Now().Truncate(time.Microsecond)
	var want []string
	for i := range 5 {
		cs := sessionRow("token:admin", i, now, time.Hour) // one creation time for all
		cs.Ref = fmt.Sprintf("ref%d", i)
		sum := sha256.Sum256([]byte("the token"))
		cs.TokenSum = sum[:]
		require.NoError(t, st.OpenConsoleSession(ctx, cs, 100, now))
		want = append(want, cs.Ref)
	}
	op := sessionRow("oidc:alice", 0, now.Add(time.Second), time.Hour)
	op.Ref, op.Kind, op.Name = "refalice", "oidc", "alice@example.com"
	op.Identity = &store.ConsoleIdentity{Issuer: "https://id", Subject: "s", Email: "alice@example.com", EmailVerified: true, Groups: []string{"g"}}
	require.NoError(t, st.OpenConsoleSession(ctx, op, 100, now))
	got, ok, err := st.ConsoleSession(ctx, op.IDHash, now, time.Minute, time.Hour, time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, op.Identity, got.Identity)
	require.Equal(t, "refalice", got.Ref)
	require.Nil(t, got.TokenSum)
	require.NoError(t, st.OpenConsoleSession(ctx, sessionRow("old", 0, now, -time.Second), 100, now.Add(-time.Hour))) // expired
	unbound := sessionRow("older-hub", 0, now.Add(-time.Second), time.Hour)
	require.NoError(t, st.OpenConsoleSession(ctx, unbound, 100, now))
	require.NoError(t, st.SetConsoleSessionRole(ctx, op.IDHash, "read-only"))

	q := hub.SessionQuery{Now: now, Limit: 2}
	seen := pageIDs(t, q.Limit, func(last *hub.SessionInfo) ([]hub.SessionInfo, error) {
		if last != nil {
			q.BeforeCreated, q.BeforeID = last.CreatedAt, last.ID
		}
		return st.ListConsoleSessions(ctx, q)
	}, func(s hub.SessionInfo) string { return s.ID })
	require.Equal(t, []string{"refalice", "ref4", "ref3", "ref2", "ref1", "ref0", ""}, seen, "newest first, each once, the expired one left out")
	all, err := st.ListConsoleSessions(ctx, hub.SessionQuery{Now: now, Limit: 100})
	require.NoError(t, err)
	require.Equal(t, "read-only", all[0].Role)
	require.Equal(t, "https://id", all[0].Issuer)
	require.True(t, all[0].Bound)
	require.False(t, all[len(all)-1].Bound)
	one, err := st.ListConsoleSessions(ctx, hub.SessionQuery{Now: now, ID: "ref2", Limit: 100})
	require.NoError(t, err)
	require.Len(t, one, 1)

	n, err := st.RevokeConsoleSessions(ctx, hub.SessionSelector{ID: "ref2"})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	n, err = st.RevokeConsoleSessions(ctx, hub.SessionSelector{Name: "token x"})
	require.NoError(t, err)
	require.EqualValues(t, 5, n, "four bound and the unbound one (the expired one was purged by the later sign-ins)")
	n, err = st.RevokeConsoleSessions(ctx, hub.SessionSelector{All: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	_, err = st.RevokeConsoleSessions(ctx, hub.SessionSelector{})
	require.Error(t, err)
}
