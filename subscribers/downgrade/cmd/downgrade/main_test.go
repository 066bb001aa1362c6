package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
)

func TestMain(m *testing.M) { subtest.CommandMain(m, main, "DOWNGRADE") }

func TestUsage(t *testing.T) {
	subtest.RunUsage(t, []subtest.Usage{
		{"help", []string{"--help"}, nil, 0, []string{"DOWNGRADE_DATABASE_URL", "DOWNGRADE_NATS_URL", "DOWNGRADE_STREAM", "DOWNGRADE_HTTP_ADDR", ":9103", "DOWNGRADE_CONCURRENCY", "DOWNGRADE_MAX_DELIVER"}},
	})
}

// The command runs with no arguments, downgrades a canceled subscription,
// and exits 0 on SIGTERM.
func TestRunsAndExitsZeroOnSIGTERM(t *testing.T) {
	env := subtest.NewParallel(t)
	p := env.StartService(t, "DOWNGRADE")
	p.WaitOutput(t, "msg=consuming")
	env.Publish(t, subtest.PaddleSubscription(t, "evt_c", schema.PaddleSubscriptionCreated, time.Now().Add(-time.Hour), "sub_x", "ctm_x", map[string]any{"plan": "pro"}))
	env.Publish(t, subtest.PaddleSubscription(t, "evt_x", schema.PaddleSubscriptionCanceled, time.Now(), "sub_x", "ctm_x", map[string]any{"plan": "pro"}))
	require.Eventually(t, func() bool {
		return env.Count(t, "SELECT count(*) FROM downgrade.plan_changes WHERE event_id = 'evt_x' AND from_plan = 'pro'") == 1
	}, subtest.Timeout, subtest.Tick)
	p.Terminate(t)
	require.Equal(t, 0, p.ExitCode(t))
	env.WaitAllAcked(t, "downgrade")
}
