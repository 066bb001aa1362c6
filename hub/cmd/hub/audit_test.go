package main

import (
	"encoding/json"
	"os/user"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// The command line's actions are recorded as the OS user's, on this host,
// and `hub audit list` reads them back.
func TestCLIActionsAreAudited(t *testing.T) {
	_, url := hubtest.Pool(t)
	n := hubtest.JetStream(t)
	t.Setenv("HUB_DATABASE_URL", url)
	t.Setenv("HUB_NATS_URL", n.URL())
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
	var es []hub.AuditEntry
	for line := range strings.Lines(stdout) {
		var e hub.AuditEntry
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		es = append(es, e)
	}
	require.Len(t, es, 2)
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
