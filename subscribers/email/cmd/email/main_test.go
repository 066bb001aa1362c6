package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
)

func TestMain(m *testing.M) { subtest.CommandMain(m, main, "EMAIL") }

func TestUsage(t *testing.T) {
	subtest.RunUsage(t, []subtest.Usage{
		{"help", []string{"-h"}, nil, 0, []string{"EMAIL_DATABASE_URL", "EMAIL_NATS_URL", "EMAIL_STREAM", "EMAIL_HTTP_ADDR", ":9102", "EMAIL_SMTP_ADDR", "127.0.0.1:1025", "EMAIL_FROM"}},
		{"bad smtp address", nil, []string{"EMAIL_SMTP_ADDR=mailpit"}, 2, []string{"EMAIL_SMTP_ADDR must be host:port"}},
		{"bad from", nil, []string{"EMAIL_FROM=nobody"}, 2, []string{"EMAIL_FROM"}},
	})
}

// The command runs with no arguments, logs emails with EMAIL_SMTP_ADDR=log
// (as `hub dev` does), and exits 0 on SIGTERM.
func TestRunsAndExitsZeroOnSIGTERM(t *testing.T) {
	env := subtest.NewParallel(t)
	p := env.StartService(t, "EMAIL", "EMAIL_SMTP_ADDR=log", "EMAIL_SEND_INTERVAL=50ms")
	p.WaitOutput(t, "msg=consuming")
	env.Publish(t, subtest.PaddleSubscription(t, "evt_bye", schema.PaddleSubscriptionCanceled, time.Now(), "sub_bye", "ctm_bye", map[string]any{"email": "bye@example.com"}))
	p.WaitOutput(t, "email (logged, not sent)")
	require.Contains(t, p.Output(), "bye@example.com")
	require.Contains(t, p.Output(), "<paddle.evt_bye.cancellation@hookhub>")
	p.Terminate(t)
	require.Equal(t, 0, p.ExitCode(t))
	require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM email.outbox WHERE sent_at IS NOT NULL"))
}
