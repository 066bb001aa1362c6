package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/hubtest"
	"github.com/hookhub/hookhub/hub/store"
)

// The operator commands, as an operator new to the project would call
// them: clear errors and exit codes for mistakes, JSON lines on request.
func TestOperatorCommands(t *testing.T) {
	pool, url := hubtest.Pool(t)
	n := hubtest.JetStream(t)
	t.Setenv("HUB_DATABASE_URL", url)
	t.Setenv("HUB_NATS_URL", n.URL())
	_, err := store.New(pool).Ingest(context.Background(), []store.Delivery{
		{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: "evt_cli", EventType: "subscription.created", Body: []byte(`{"a":1}`), ReceivedAt: time.Now()},
		{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: "evt_cli", EventType: "subscription.created", Body: []byte(`{"a":1}`), ReceivedAt: time.Now()},
	})
	require.NoError(t, err)

	cases := []struct {
		args []string
		code int
		out  string // expected in stdout
		err  string // expected in stderr
	}{
		{[]string{"events", "list", "--json"}, 0, `"deliveries":2`, ""},
		{[]string{"events", "list"}, 0, "evt_cli", ""},
		{[]string{"events", "show", "paddle:evt_cli"}, 0, "deliveries (2)", ""},
		{[]string{"events", "show", "--json", "paddle:evt_cli"}, 0, `"event_id":"evt_cli"`, ""},
		{[]string{"events", "show", "paddle:nope"}, 1, "", "nothing matched"},
		{[]string{"events", "list", "--since", "yesterday"}, 2, "", "--since"},
		{[]string{"events", "list", "--status", "DONE"}, 2, "", "unknown status"},
		{[]string{"events"}, 2, "Usage: hub events", "events needs list or show"},
		{[]string{"status", "--json"}, 0, `"outbox_pending":1`, ""},
		{[]string{"purge", "--older-than", "90d", "--dry-run"}, 0, "would delete 0", ""},
		{[]string{"purge"}, 2, "", "--older-than is required"},
		{[]string{"dlq", "list", "--subscriber", "nobody"}, 1, "", "unknown subscriber"},
		{[]string{"dlq", "redrive", "--subscriber", "nobody"}, 2, "", "exactly one of --id"},
		{[]string{"replay", "--subscriber", "nobody"}, 2, "", "--since are required"},
		{[]string{"replay", "--subscriber", "nobody", "--since", "1h"}, 1, "", "unknown subscriber"},
		{[]string{"republish", "--since", "1h", "--dry-run"}, 1, "", "nothing matched"},
		{[]string{"republish"}, 2, "", "give --since"},
		{[]string{"replay", "--help"}, 0, "private replay subjects", ""},
		{[]string{"nonsense"}, 2, "", "unknown command"},
		{[]string{"reconcile"}, 2, "", "--since is required"},
		{[]string{"reconcile", "--since", "1h"}, 1, "", "stream WEBHOOKS not found"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), c.args, &stdout, &stderr)
			require.Equal(t, c.code, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			require.Contains(t, stdout.String(), c.out)
			require.Contains(t, stderr.String(), c.err)
		})
	}
}
