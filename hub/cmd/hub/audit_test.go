package main

import (
	"io/fs"
	"os/user"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/migrations"
)

// The command line's actions are recorded as the OS user's, on this host,
// and `hub audit list` reads them back.
func TestCLIActionsAreAudited(t *testing.T) {
	pool, _ := natsEnv(t)
	// An entry of a command that died: the next command's first action
	// marks it interrupted.
	_, err := pool.Exec(t.Context(), `INSERT INTO audit_log (at, actor_kind, actor_name, actor_role, via, action, heartbeat_at)
		VALUES (now() - interval '1 hour', 'cli', 'bob@ops-2', 'admin', 'cli', 'replay', now() - interval '10 minutes')`)
	require.NoError(t, err)
	t.Setenv("USER", "mallory") // the environment is not who runs the command
	u, err := user.Current()
	require.NoError(t, err)
	me := cliActor()
	require.Equal(t, hub.ActorCLI, me.Kind)
	require.Equal(t, "cli", me.Via)
	require.True(t, strings.HasPrefix(me.Name, u.Username+"@"), me.Name)

	cmd := func(args ...string) (int, string, string) { return runCmd(t, args...) }
	code, _, stderr := cmd("purge", "--older-than", "90d", "--yes")
	require.Zero(t, code, stderr)
	code, _, _ = cmd("purge", "--older-than", "90d") // a dry run: not recorded
	require.Zero(t, code)
	code, _, _ = cmd("replay", "--subscriber", "nobody", "--since", "1h")
	require.Equal(t, 1, code)

	code, stdout, stderr := cmd("audit", "list", "--json")
	require.Zero(t, code, stderr)
	es := jsonLines[hub.AuditEntry](t, stdout)
	require.Len(t, es, 3)
	require.Equal(t, "bob@ops-2", es[2].Actor.Name)
	require.Equal(t, hub.AuditInterrupted, es[2].Outcome)
	es = es[:2]
	require.Equal(t, "replay", es[0].Action)
	require.Equal(t, hub.AuditError, es[0].Outcome)
	require.Contains(t, es[0].Error, "unknown subscriber")
	require.Equal(t, "purge", es[1].Action)
	require.Equal(t, hub.AuditOK, es[1].Outcome)
	for _, e := range es {
		require.Equal(t, me, e.Actor)
		require.NotContains(t, e.Actor.Name, "mallory")
	}

	code, stdout, _ = cmd("audit", "list", "--action", "purge")
	require.Zero(t, code)
	require.Contains(t, stdout, me.Name)
	require.Contains(t, stdout, "purge")
	require.NotContains(t, stdout, "replay")
	code, _, stderr = cmd("audit", "list", "--limit", "0")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--limit: must be within")
	code, _, stderr = cmd("audit", "list", "--before", "x")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--before")
	code, _, stderr = cmd("audit", "write")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "unknown audit action")
}

// `hub migrate down` keeps the audit trail, every migration rolled back;
// only --drop-audit drops it with the migration that made it.
func TestMigrateDownKeepsTheAuditTrail(t *testing.T) {
	pool := dbEnv(t, "")
	files, err := fs.Glob(migrations.Files(), "*.sql")
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `INSERT INTO audit_log (at, actor_kind, actor_name, actor_role, via, action)
		VALUES (now(), 'cli', 'alice@ops-1', 'admin', 'cli', 'purge')`)
	require.NoError(t, err)
	exists := func() bool {
		var ok bool
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT to_regclass('audit_log') IS NOT NULL`).Scan(&ok))
		return ok
	}
	code, _, stderr := runCmd(t, "migrate", "up", "--drop-audit")
	require.Equal(t, 2, code, stderr)
	for range files {
		code, _, stderr := runCmd(t, "migrate", "down")
		require.Zero(t, code, stderr)
	}
	require.True(t, exists(), "down keeps the trail")
	code, _, stderr = runCmd(t, "migrate", "up")
	require.Zero(t, code, stderr)
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE action = 'purge'`).Scan(&n))
	require.Equal(t, 1, n)
	// The migrations themselves are in the trail, as the user's.
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE action = 'migrate.down' AND outcome = 'ok'
		AND via = 'cli'`).Scan(&n))
	require.Equal(t, len(files), n, "every rollback")
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE action = 'migrate.up' AND outcome = 'ok'`).Scan(&n))
	require.Equal(t, 1, n, "the up that found the kept trail")
	for range files {
		code, _, stderr := runCmd(t, "migrate", "down", "--drop-audit")
		require.Zero(t, code, stderr)
	}
	require.False(t, exists(), "--drop-audit drops it")
}

// Every command that changes state records a refusal of its input in the
// audit trail, once, as refused, with its arguments, as the user running
// it, whether the command or its action refused it; a command that reads
// records nothing.
func TestCLIRefusalsAreAudited(t *testing.T) {
	pool := dbEnv(t, "")
	st := store.New(pool)
	cases := []struct {
		args   []string
		action string
	}{
		{[]string{"replay", "--subscriber", "credits", "--since", "not-a-time"}, ops.ActionReplay},
		{[]string{"republish", "--since", "1h", "--until", "2h"}, ops.ActionRepublish},
		{[]string{"purge", "--older-than", "1h", "--yes"}, ops.ActionPurge},
		{[]string{"bulk", "replay", "--subscriber", "credits"}, ops.ActionBulkReplay}, // refused by the action
		{[]string{"backfill", "--provider", "stripe", "--max-pages", "-1"}, ops.ActionBackfill},
		{[]string{"backfill", "--provider", "stripe", "--force"}, ops.ActionBackfill},
		{[]string{"dlq", "redrive", "--id", "x"}, ops.ActionRedrive},
		{[]string{"destinations", "pause"}, ops.ActionDestinationPause},
		{[]string{"destinations", "resume"}, ops.ActionDestinationResume},
		{[]string{"destinations", "retry-now"}, ops.ActionDestinationRetryNow},
		{[]string{"sessions", "revoke"}, ops.ActionSessionRevoke},
		{[]string{"reconcile"}, ops.ActionRepublish},
	}
	for _, tc := range cases {
		before, err := st.ListAudit(t.Context(), hub.AuditQuery{Limit: 100})
		require.NoError(t, err)
		code, _, stderr := runCmd(t, tc.args...)
		require.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		es, err := st.ListAudit(t.Context(), hub.AuditQuery{Limit: 100})
		require.NoError(t, err)
		require.Len(t, es, len(before)+1, "%v: one entry", tc.args)
		e := es[0]
		require.Equal(t, hub.AuditRefused, e.Outcome, tc.args)
		require.Equal(t, tc.action, e.Action, tc.args)
		require.Equal(t, cliActor(), e.Actor, tc.args)
		require.NotEmpty(t, e.Error, tc.args)
	}
	// Every state-changing command (and subcommand) has its case.
	for _, c := range commands() {
		for _, sub := range []string{"", "redrive", "pause", "resume", "retry-now", "revoke"} {
			args := []string{c.name, sub}
			if auditedAction(args) == "" || (sub != "" && auditedAction(args[:1]) != "") {
				continue
			}
			want := strings.TrimSpace(c.name + " " + sub)
			require.True(t, slices.ContainsFunc(cases, func(tc struct {
				args   []string
				action string
			}) bool {
				return strings.HasPrefix(strings.Join(tc.args, " ")+" ", want+" ")
			}), "hub %s changes state: add a refusal of it to this table", want)
		}
	}
	// A command that only reads records nothing.
	before, err := st.ListAudit(t.Context(), hub.AuditQuery{Limit: 100})
	require.NoError(t, err)
	code, _, _ := runCmd(t, "events", "list", "--since", "not-a-time")
	require.Equal(t, 2, code)
	after, err := st.ListAudit(t.Context(), hub.AuditQuery{Limit: 100})
	require.NoError(t, err)
	require.Len(t, after, len(before))
}
