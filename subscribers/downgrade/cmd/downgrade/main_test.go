package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
)

func TestMain(m *testing.M) {
	hubtest.RunMainIfChild(main)
	// The developer's DOWNGRADE_* variables must not configure the processes the
	// tests start: each test passes its own.
	hubtest.ClearEnv("DOWNGRADE_")
	os.Exit(m.Run())
}

func TestUsage(t *testing.T) {
	t.Parallel()
	p := hubtest.StartMain(t, nil, "--help")
	require.Equal(t, 0, p.ExitCode(t))
	for _, w := range []string{"DOWNGRADE_DATABASE_URL", "DOWNGRADE_NATS_URL", "DOWNGRADE_STREAM", "DOWNGRADE_HTTP_ADDR", ":9103", "DOWNGRADE_CONCURRENCY", "DOWNGRADE_MAX_DELIVER"} {
		require.Contains(t, p.Output(), w)
	}
}

// The command runs with no arguments, downgrades a canceled subscription,
// and exits 0 on SIGTERM.
func TestRunsAndExitsZeroOnSIGTERM(t *testing.T) {
	t.Parallel()
	env := subtest.New(t)
	p := hubtest.StartMain(t, env.ServiceEnv("DOWNGRADE"))
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
