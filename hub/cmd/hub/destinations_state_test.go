package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// TestDestinationsRetryNow: status and list show a destination's waiting
// events; retry-now makes them due now, says how many, and is in the
// audit trail as the OS user's.
func TestDestinationsRetryNow(t *testing.T) {
	pool := dbEnv(t, "nats://"+closedAddr(t))
	ctx := context.Background()
	require.NoError(t, subscriber.Migrate(ctx, pool, "billing", destination.Migrations("billing")))
	require.NoError(t, destination.Register(ctx, pool, "billing", "https://billing.internal/hooks", []string{"paddle.>"}))
	// Three events parked as a runner parks them: two waiting for a
	// Retry-After, one due already.
	due := time.Now().Add(time.Hour)
	for i, at := range []time.Time{due, due.Add(time.Minute), time.Now().Add(-time.Second)} {
		_, err := pool.Exec(ctx, `INSERT INTO billing.parked (provider, event_id, subject, headers, data, parked_at, due_at, attempts, receiver_asked)
			VALUES ('paddle', $1, 'paddle.subscription.created', '{}', '{}', NOW(), $2, 1, true)`, "evt_"+string(rune('a'+i)), at)
		require.NoError(t, err)
	}
	runCases(t, []cliCase{
		{args: []string{"destinations", "status", "billing"}, out: []string{"waiting       3 event(s) parked for their retry, due now", "`hub destinations retry-now billing`"}},
		{args: []string{"destinations", "list"}, out: []string{"WAITING"}},
		{args: []string{"destinations", "list", "--json"}, out: []string{`"waiting":3,"next_due":"`}},
		{args: []string{"destinations", "retry-now"}, code: 2, err: "destinations retry-now needs exactly one destination NAME"},
		{args: []string{"destinations", "retry-now", "nobody"}, code: 1, err: `unknown destination "nobody" (known: billing)`},
		{args: []string{"destinations", "retry-now", "billing"}, out: []string{"billing: 2 waiting event(s) due now", "within 1s"}},
		{args: []string{"destinations", "retry-now", "billing", "--json"}, out: []string{`{"name":"billing","waiting":0,"events":3}`}},
		{args: []string{"destinations", "retry-now", "billing"}, out: []string{"billing: no event waits for a later retry (3 parked)"}},
	})
	w, err := destination.GetWaiting(ctx, pool, "billing")
	require.NoError(t, err)
	require.Equal(t, int64(3), w.Events)
	require.False(t, w.NextDue.After(time.Now().Add(time.Minute)), "every event due now, not at %s", w.NextDue)

	code, out, stderr := runCmd(t, "audit", "list", "--json", "--action", "destination.retry_now")
	require.Zero(t, code, stderr)
	var results, refused []string
	for line := range strings.Lines(out) {
		var e struct {
			Action  string          `json:"action"`
			Target  string          `json:"target"`
			Outcome string          `json:"outcome"`
			Result  json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		if e.Outcome == "refused" {
			refused = append(refused, e.Target)
			continue
		}
		require.Equal(t, "destination billing", e.Target)
		results = append(results, string(e.Result))
	}
	require.Equal(t, []string{"hub destinations"}, refused, "the usage mistake is recorded as refused, by the command")
	require.Len(t, results, 3, "each retry-now of billing is audited; the unknown one was refused before")
	require.Contains(t, results[2], `"waiting":2`)
}
