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
	// The developer's EMAIL_* variables must not configure the processes the
	// tests start: each test passes its own.
	hubtest.ClearEnv("EMAIL_")
	os.Exit(m.Run())
}

func TestUsage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		args     []string
		env      []string
		wantCode int
		want     []string
	}{
		{"help", []string{"-h"}, nil, 0, []string{"EMAIL_DATABASE_URL", "EMAIL_NATS_URL", "EMAIL_STREAM", "EMAIL_HTTP_ADDR", ":9102", "EMAIL_SMTP_ADDR", "127.0.0.1:1025", "EMAIL_FROM"}},
		{"bad smtp address", nil, []string{"EMAIL_SMTP_ADDR=mailpit"}, 2, []string{"EMAIL_SMTP_ADDR must be host:port"}},
		{"bad from", nil, []string{"EMAIL_FROM=nobody"}, 2, []string{"EMAIL_FROM"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := hubtest.StartMain(t, c.env, c.args...)
			require.Equal(t, c.wantCode, p.ExitCode(t), p.Output())
			for _, w := range c.want {
				require.Contains(t, p.Output(), w)
			}
		})
	}
}

// The command runs with no arguments, logs emails with EMAIL_SMTP_ADDR=log
// (as `hub dev` does), and exits 0 on SIGTERM.
func TestRunsAndExitsZeroOnSIGTERM(t *testing.T) {
	t.Parallel()
	env := subtest.New(t)
	p := hubtest.StartMain(t, append(env.ServiceEnv("EMAIL"), "EMAIL_SMTP_ADDR=log", "EMAIL_SEND_INTERVAL=50ms"))
	p.WaitOutput(t, "msg=consuming")
	env.Publish(t, subtest.PaddleSubscription(t, "evt_bye", schema.PaddleSubscriptionCanceled, time.Now(), "sub_bye", "ctm_bye", map[string]any{"email": "bye@example.com"}))
	p.WaitOutput(t, "email (logged, not sent)")
	require.Contains(t, p.Output(), "bye@example.com")
	require.Contains(t, p.Output(), "<paddle.evt_bye.cancellation@hookhub>")
	p.Terminate(t)
	require.Equal(t, 0, p.ExitCode(t))
	require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM email.outbox WHERE sent_at IS NOT NULL"))
}
