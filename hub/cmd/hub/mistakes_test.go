package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// A usage mistake is one line on stderr, its message: no "hub: NATS …"
// banner before it, whether the mistake is a flag's value (decided before
// connecting), an unknown subscriber or nothing matched. An operation
// that runs prints the banner.
func TestMistakesAreOneLine(t *testing.T) {
	ctx := context.Background()
	pool, n, js := streamEnv(t)
	require.NoError(t, subscriber.Migrate(ctx, pool, "flaky", nil))
	durable(t, js, "flaky", "paddle.>")

	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"replay", "--subscriber", "nobody", "--since", "1h"}, 1, "hub replay: unknown subscriber"},
		{[]string{"replay", "--subscriber", "flaky", "--since", "yesterday"}, 2, "hub replay: usage: --since"},
		{[]string{"replay", "--subscriber", "flaky", "--since", "1h", "--rate", "-1"}, 2, "hub replay: --rate"},
		{[]string{"replay", "--subscriber", "flaky", "--since", "1h"}, 1, "hub replay: nothing matched"},
		{[]string{"bulk", "replay", "--subscriber", "nobody", "--since", "1h"}, 1, "hub bulk: unknown subscriber"},
		{[]string{"bulk", "replay", "--subscriber", "flaky", "--since", "1h", "--status", "DONE"}, 2, "hub bulk: --status"},
		{[]string{"bulk", "replay", "--subscriber", "flaky", "--since", "1h"}, 1, "hub bulk: nothing matched"},
		{[]string{"republish", "--since", "1h"}, 1, "hub republish: nothing matched"},
		{[]string{"republish", "--since", "soon"}, 2, "hub republish: usage: --since"},
		{[]string{"reconcile", "--since", "soon"}, 2, "hub reconcile: usage: --since"},
		{[]string{"events", "list", "--since", "soon"}, 2, "hub events: usage: --since"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			require.Equal(t, tc.code, code, stderr)
			require.True(t, strings.HasPrefix(stderr, tc.err), "%q", stderr)
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		})
	}
	// An operation that runs says which server it works on.
	code, _, stderr := runCmd(t, "reconcile", "--since", "1h")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "hub: NATS "+n.URL()+" (from HUB_NATS_URL), stream WEBHOOKS")
}
