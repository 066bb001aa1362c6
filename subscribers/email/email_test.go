package email_test

import (
	"context"
	"io"
	"log/slog"
	"mime/quotedprintable"
	"net/mail"
	"testing"
	"time"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/email"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

type fixture struct {
	env  *subtest.Env
	sub  *subscriber.Subscriber
	smtp *smtpServer
	reg  *prometheus.Registry
}

func setup(t *testing.T, mutate func(*email.Options)) *fixture {
	t.Helper()
	env := subtest.New(t)
	srv := newSMTPServer(t)
	reg := prometheus.NewRegistry()
	cfg := env.Config(t, email.Name)
	cfg.Migrations = email.Migrations
	cfg.Registerer = reg
	sub, err := subscriber.New(cfg)
	require.NoError(t, err)
	opts := email.Options{
		Sender:       &email.SMTPSender{Addr: srv.Addr(), Timeout: 10 * time.Second},
		From:         "Hookhub <noreply@hookhub.test>",
		SendInterval: 20 * time.Millisecond,
		RetryBackoff: 20 * time.Millisecond,
		Pool:         env.Pool,
		Logger:       subtest.Logger(t),
		Registerer:   reg,
	}
	if mutate != nil {
		mutate(&opts)
	}
	require.NoError(t, email.Register(sub, opts))
	subtest.Start(t, sub)
	return &fixture{env: env, sub: sub, smtp: srv, reg: reg}
}

func (f *fixture) outbox(t *testing.T, eventID string) int {
	return f.env.Count(t, "SELECT count(*) FROM email.outbox WHERE event_id = $1", eventID)
}

func (f *fixture) waitSent(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return f.env.Count(t, "SELECT count(*) FROM email.outbox WHERE sent_at IS NOT NULL") == n }, subtest.Timeout, subtest.Tick)
}

// givenUp waits until the email of eventID is given up and returns its
// attempts and last error.
func (f *fixture) givenUp(t *testing.T, eventID string) (attempts int, lastErr string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return f.env.Count(t, "SELECT count(*) FROM email.outbox WHERE event_id = $1 AND failed_at IS NOT NULL", eventID) == 1
	}, subtest.Timeout, subtest.Tick, eventID)
	require.NoError(t, f.env.Pool.QueryRow(context.Background(), "SELECT attempts, last_error FROM email.outbox WHERE event_id = $1", eventID).Scan(&attempts, &lastErr))
	return attempts, lastErr
}

func canceled(t *testing.T, eventID string, custom map[string]any) subtest.Message {
	return subtest.PaddleSubscription(t, eventID, schema.PaddleSubscriptionCanceled, time.Now(), "sub_"+eventID, "ctm_"+eventID, custom)
}

func body(t *testing.T, m *mail.Message) string {
	t.Helper()
	b, err := io.ReadAll(quotedprintable.NewReader(m.Body))
	require.NoError(t, err)
	return string(b)
}

// Acceptance: a welcome and a cancellation event, each delivered 10 times,
// queue one email each and the SMTP server receives exactly one of each,
// with the deterministic Message-ID and X-Hub-Event-Id.
func TestEachEventEmailsOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	welcome := subtest.ClerkUserCreated(t, "msg_2abcWelcome", "user_1", "ada@example.com", time.Now())
	cancel := canceled(t, "evt_cancel", map[string]any{"email": "grace@example.com", "plan": "pro"})
	f.env.DeliverTenTimes(t, f.sub, welcome, cancel)
	f.waitSent(t, 2)
	require.Equal(t, 1, f.outbox(t, welcome.EventID))
	require.Equal(t, 1, f.outbox(t, cancel.EventID))

	got := f.smtp.messages()
	require.Len(t, got, 2)
	byTo := map[string]received{}
	for _, r := range got {
		require.Len(t, r.To, 1)
		byTo[r.To[0]] = r
		require.Equal(t, "noreply@hookhub.test", r.From)
	}
	w := byTo["ada@example.com"]
	require.NotNil(t, w.Msg, "welcome to the primary address")
	require.Equal(t, "<clerk.msg_2abcWelcome.welcome@hookhub>", w.Msg.Header.Get("Message-Id"))
	require.Equal(t, "clerk:msg_2abcWelcome", w.Msg.Header.Get(email.HeaderEventID))
	require.Equal(t, "Welcome!", w.Msg.Header.Get("Subject"))
	require.Contains(t, body(t, w.Msg), "Hi Ada,")

	c := byTo["grace@example.com"]
	require.NotNil(t, c.Msg)
	require.Equal(t, "<paddle.evt_cancel.cancellation@hookhub>", c.Msg.Header.Get("Message-Id"))
	require.Equal(t, "paddle:evt_cancel", c.Msg.Header.Get(email.HeaderEventID))
	require.Contains(t, body(t, c.Msg), "sub_evt_cancel")
	require.EqualValues(t, 1, hubtest.MetricValue(t, f.reg, "hookhub_email_sent_total", map[string]string{"kind": email.KindWelcome}))
	require.EqualValues(t, 1, hubtest.MetricValue(t, f.reg, "hookhub_email_sent_total", map[string]string{"kind": email.KindCancellation}))
}

// No usable address: the event is processed, no email is queued, a log
// line and a metric say why.
func TestEmailSkippedWithoutAddress(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	cases := []struct {
		msg    subtest.Message
		kind   string
		reason string
	}{
		{canceled(t, "evt_no_email", map[string]any{"plan": "pro"}), email.KindCancellation, "no_address"},
		{canceled(t, "evt_no_custom_data", nil), email.KindCancellation, "no_address"},
		{canceled(t, "evt_bad_email", map[string]any{"email": "grace@example.com\r\nBcc: everyone@example.com"}), email.KindCancellation, "invalid_address"},
		{subtest.ClerkUserCreated(t, "msg_no_email", "user_2", "", time.Now()), email.KindWelcome, "no_address"},
	}
	for _, c := range cases {
		f.env.Publish(t, c.msg)
	}
	require.Eventually(t, func() bool { return f.sub.Stats().Processed == uint64(len(cases)) }, subtest.Timeout, subtest.Tick)
	f.env.WaitAllAcked(t, email.Name)
	for _, c := range cases {
		require.Zero(t, f.outbox(t, c.msg.EventID), c.msg.EventID)
	}
	require.EqualValues(t, 2, hubtest.MetricValue(t, f.reg, "hookhub_email_skipped_total", map[string]string{"kind": email.KindCancellation, "reason": "no_address"}))
	require.EqualValues(t, 1, hubtest.MetricValue(t, f.reg, "hookhub_email_skipped_total", map[string]string{"kind": email.KindCancellation, "reason": "invalid_address"}))
	require.EqualValues(t, 1, hubtest.MetricValue(t, f.reg, "hookhub_email_skipped_total", map[string]string{"kind": email.KindWelcome, "reason": "no_address"}))
	require.Empty(t, f.smtp.messages())
}

// A temporary SMTP failure is retried and the email arrives once; a
// permanent rejection marks it failed and it is not retried.
func TestSMTPFailures(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.smtp.rejectNext("451 4.3.0 try again later", "451 4.3.0 still busy")
	f.env.Publish(t, canceled(t, "evt_retry", map[string]any{"email": "retry@example.com"}))
	f.waitSent(t, 1)
	require.Len(t, f.smtp.messages(), 1)
	var attempts int
	require.NoError(t, f.env.Pool.QueryRow(context.Background(), "SELECT attempts FROM email.outbox WHERE event_id = 'evt_retry'").Scan(&attempts))
	require.Equal(t, 3, attempts)

	f.smtp.rejectNext("550 5.1.1 no such user")
	f.env.Publish(t, canceled(t, "evt_reject", map[string]any{"email": "nobody@example.com"}))
	attempts, lastErr := f.givenUp(t, "evt_reject")
	require.Equal(t, 1, attempts)
	require.Contains(t, lastErr, "550")
	require.Len(t, f.smtp.messages(), 1)
	require.EqualValues(t, 1, hubtest.MetricValue(t, f.reg, "hookhub_email_send_failures_total", map[string]string{"final": "true"}))
	require.EqualValues(t, 2, hubtest.MetricValue(t, f.reg, "hookhub_email_send_failures_total", map[string]string{"final": "false"}))
}

// EMAIL_SMTP_ADDR=log: emails are logged and marked sent.
func TestLogSender(t *testing.T) {
	t.Parallel()
	logs := &syncWriter{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	f := setup(t, func(o *email.Options) { o.Sender = email.NewSender(email.LogAddr, logger) })
	f.env.Publish(t, subtest.ClerkUserCreated(t, "msg_logged", "user_3", "lin@example.com", time.Now()))
	f.waitSent(t, 1)
	require.Empty(t, f.smtp.messages())
	require.Contains(t, logs.String(), "lin@example.com")
	require.Contains(t, logs.String(), "<clerk.msg_logged.welcome@hookhub>")
}

func TestRegisterValidates(t *testing.T) {
	env := subtest.NewParallel(t)
	sub, err := subscriber.New(env.Config(t, email.Name))
	require.NoError(t, err)
	require.ErrorContains(t, email.Register(sub, email.Options{Pool: env.Pool}), "Sender is required")
	require.ErrorContains(t, email.Register(sub, email.Options{Sender: email.LogSender{}}), "Pool is required")
	require.ErrorContains(t, email.Register(sub, email.Options{Sender: email.LogSender{}, Pool: env.Pool, From: "not an address"}), "From")
	other, err := subscriber.New(env.Config(t, "mailer"))
	require.NoError(t, err)
	require.ErrorContains(t, email.Register(other, email.Options{Sender: email.LogSender{}, Pool: env.Pool}), `must be named "email"`)
}
