package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/service"
)

// `hub --help` (and `hub serve --help`) lists every variable under the
// heading of its group, in the order of service.EnvVars; `hub backfill
// --help` names the providers and credentials of the backfill registry.
func TestHelpGroupsVariables(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, run(context.Background(), args, &stdout, &stderr), stderr.String())
		out := stdout.String()
		at, group := 0, ""
		for _, v := range service.EnvVars() {
			if v.Group != group {
				group = v.Group
				i := strings.Index(out[at:], "\n  "+group+":\n")
				require.GreaterOrEqual(t, i, 0, "%v: no heading %q after the previous group", args, group)
				at += i
			}
			i := strings.Index(out[at:], "\n  "+v.Key+" ")
			require.GreaterOrEqual(t, i, 0, "%v: %s is not under %q", args, v.Key, group)
			require.NotContains(t, out[at:at+i], "\n\n", "%v: %s is not under %q", args, v.Key, group)
			at += i + 1
		}
	}

	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"backfill", "--help"}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "Credentials: HUB_STRIPE_API_KEY, HUB_PADDLE_API_KEY, HUB_GITHUB_TOKEN with HUB_GITHUB_HOOK")
	require.Contains(t, stdout.String(), "the provider: "+strings.Join(backfill.Providers(), ", "))
	require.Equal(t, []string{"github", "paddle", "stripe"}, backfill.Providers())
}
