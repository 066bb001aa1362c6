package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
)

// `hub sessions list` lists the console's sessions; `hub sessions revoke`
// ends one, a name's or all, each recorded in the audit trail as the OS
// user's.
func TestSessionsCommand(t *testing.T) {
	pool := dbEnv(t, "nats://127.0.0.1:1") // not needed
	open := func(pool *pgxpool.Pool, i int, name string) string {
		now := time.Now()
		sum := sha256.Sum256([]byte{byte(i)})
		tok := sha256.Sum256([]byte(name))
		ref := hex.EncodeToString(sum[:8])
		require.NoError(t, store.New(pool).OpenConsoleSession(context.Background(), store.ConsoleSession{IDHash: sum[:], CSRF: "x",
			Role: "read-only", Kind: "token", Name: name, CapKey: name, Created: now.Add(time.Duration(i) * time.Millisecond), LastSeen: now,
			ExpiresAt: now.Add(time.Hour), Ref: ref, TokenSum: tok[:]}, 10, now))
		return ref
	}
	first := open(pool, 1, "token 1a2b3c4d")
	open(pool, 2, "token 1a2b3c4d")
	open(pool, 3, "token 99999999")
	last := open(pool, 4, "token 99999999")
	cmd := func(args ...string) (int, string, string) { return runCmd(t, args...) }

	code, stdout, stderr := cmd("sessions", "list", "--json")
	require.Zero(t, code, stderr)
	ss := jsonLines[hub.SessionInfo](t, stdout)
	require.Len(t, ss, 4)
	require.Equal(t, last, ss[0].ID, "newest first")
	code, stdout, _ = cmd("sessions", "list", "--name", "token 1a2b3c4d", "--limit", "1")
	require.Zero(t, code)
	require.Contains(t, stdout, "token 1a2b3c4d")
	require.Contains(t, stdout, "more may follow: add --before ")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "revoke"}, "--id: name exactly one of"},
		{[]string{"sessions", "revoke", first, "--all"}, "--id: name exactly one of"},
		{[]string{"sessions", "revoke", "a", "b"}, "at most one session ID"},
		{[]string{"sessions", "list", "--limit", "5000"}, "--limit: must be within"},
		{[]string{"sessions", "list", "--before", "x"}, "--before"},
		{[]string{"sessions", "forget"}, "unknown sessions action"},
	} {
		code, _, stderr := cmd(tc.args...)
		require.Equal(t, 2, code, tc.args)
		require.Contains(t, stderr, tc.want, tc.args)
	}

	code, stdout, stderr = cmd("sessions", "revoke", first, "--json")
	require.Zero(t, code, stderr)
	require.JSONEq(t, `{"revoked":1}`, stdout)
	code, _, stderr = cmd("sessions", "revoke", "--id", first)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "no live console session matches (session "+first+")")
	code, stdout, _ = cmd("sessions", "revoke", "--name", "token 99999999")
	require.Zero(t, code)
	require.Contains(t, stdout, "revoked 2 console session(s)")
	code, stdout, _ = cmd("sessions", "revoke", "--all")
	require.Zero(t, code)
	require.Contains(t, stdout, "revoked 1 console session(s)")
	code, stdout, _ = cmd("sessions", "list")
	require.Zero(t, code)
	require.Contains(t, stdout, "no console sessions")

	code, stdout, stderr = cmd("audit", "list", "--action", "session.revoke", "--json")
	require.Zero(t, code, stderr)
	var targets []string
	for _, e := range jsonLines[hub.AuditEntry](t, stdout) {
		require.Equal(t, cliActor(), e.Actor)
		targets = append(targets, e.Outcome+" "+e.Target)
	}
	// Refused selectors are recorded too (the entry is written first).
	// (the last, newest first: two refused by the action, one by the command).
	require.Equal(t, []string{"ok all sessions", "ok sessions of token 99999999", "error session " + first, "ok session " + first,
		"refused hub sessions", "refused session " + first, "refused sessions"}, targets)
}
