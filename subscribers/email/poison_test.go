package email_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/subscribers/email"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// withData returns m with its body's data.<key> set to value.
func withData(t *testing.T, m subtest.Message, key string, value any) subtest.Message {
	t.Helper()
	var body map[string]any
	require.NoError(t, json.Unmarshal(m.Body, &body))
	body["data"].(map[string]any)[key] = value
	b, err := json.Marshal(body)
	require.NoError(t, err)
	m.Body = b
	return m
}

// Payload text holding \u0000 (a Paddle data.id, a Clerk first
// name) is sanitized into the email, which is queued and sent once; an
// address holding one is skipped as invalid. Nothing loops.
func TestUnstorablePayloadText(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	cancel := canceled(t, "evt_nul_id", map[string]any{"email": "nul@example.com"})
	cancel = withData(t, cancel, "id", "sub_\x00x")
	welcome := withData(t, subtest.ClerkUserCreated(t, "msg_nul_name", "user_n", "ada@example.com", time.Now()), "first_name", "A\x00da"+strings.Repeat("!", 1000))
	badAddr := canceled(t, "evt_nul_addr", map[string]any{"email": "nul\x00@example.com"})
	for _, m := range []subtest.Message{cancel, welcome, badAddr} {
		f.env.Publish(t, m)
	}
	require.Eventually(t, func() bool { return f.sub.Stats().Processed == 3 }, subtest.Timeout, subtest.Tick)
	f.env.WaitAllAcked(t, email.Name)
	f.waitSent(t, 2)
	require.Zero(t, f.sub.Stats().Failed)
	require.Zero(t, f.sub.Stats().DeadLettered)
	require.Zero(t, f.outbox(t, "evt_nul_addr"))
	require.EqualValues(t, 1, hubtest.MetricValue(t, f.reg, "hookhub_email_skipped_total", map[string]string{"kind": email.KindCancellation, "reason": "invalid_address"}))

	var cancelBody, welcomeBody string
	require.NoError(t, f.env.Pool.QueryRow(context.Background(), "SELECT body FROM email.outbox WHERE event_id = 'evt_nul_id'").Scan(&cancelBody))
	require.Contains(t, cancelBody, "subscription sub_\uFFFDx has been canceled")
	require.NoError(t, f.env.Pool.QueryRow(context.Background(), "SELECT body FROM email.outbox WHERE event_id = 'msg_nul_name'").Scan(&welcomeBody))
	require.True(t, strings.HasPrefix(welcomeBody, "Hi A\uFFFDda!!!"), welcomeBody[:20])
	require.Less(t, len(welcomeBody), 600, "the name is bounded")
	require.Len(t, f.smtp.messages(), 2)
}

// rawErrorSender fails for one recipient with err as it is.
type rawErrorSender struct {
	next email.Sender
	to   string
	err  error
}

func (r *rawErrorSender) Send(ctx context.Context, m email.Message) error {
	if m.To == r.to {
		return r.err
	}
	return r.next.Send(ctx, m)
}

// An SMTP server's reply can hold anything: NUL bytes, invalid UTF-8, 10
// KiB of text (net/textproto quotes it; a Sender may not). The failure is
// recorded (last_error sanitized and bounded), retried or given up as its
// code says, and the other emails are sent meanwhile.
func TestPoisonSMTPReplies(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *email.Options) {
		o.Sender = &rawErrorSender{next: o.Sender, to: "raw@example.com", err: &email.PermanentError{Err: errors.New("\x00raw\xff " + strings.Repeat("€", 4000))}}
	})
	junk := "\x00bad\xff\xfe news " + strings.Repeat("é", 6000)
	f.smtp.rejectNext("451 4.3.0 "+junk, "550 5.7.1 "+junk)
	f.env.Publish(t, canceled(t, "evt_poison", map[string]any{"email": "poison@example.com"}))
	attempts, lastErr := f.givenUp(t, "evt_poison")
	require.Equal(t, 2, attempts, "451 retried, 550 given up")
	require.True(t, subscriber.Storable(lastErr))
	require.LessOrEqual(t, len(lastErr), 8<<10)
	require.Contains(t, lastErr, `550 "5.7.1 \x00bad\xff\xfe news éé`)

	f.env.Publish(t, canceled(t, "evt_raw", map[string]any{"email": "raw@example.com"}))
	f.env.Publish(t, canceled(t, "evt_next", map[string]any{"email": "next@example.com"}))
	f.waitSent(t, 1)
	_, lastErr = f.givenUp(t, "evt_raw")
	require.True(t, strings.HasPrefix(lastErr, "\uFFFDraw\uFFFD €€€"), lastErr[:20])
	require.True(t, strings.HasSuffix(lastErr, "€…"))
	require.LessOrEqual(t, len(lastErr), 8<<10)
	require.Len(t, f.smtp.messages(), 1)
}

// panickySender panics for one recipient and sends the others through
// next.
type panickySender struct {
	next   email.Sender
	to     string
	panics atomic.Int64
}

func (p *panickySender) Send(ctx context.Context, m email.Message) error {
	if m.To == p.to {
		p.panics.Add(1)
		panic("sender bug \x00 for " + m.To)
	}
	return p.next.Send(ctx, m)
}

// A Sender that panics on one email fails that send (retried, then given
// up after MaxAttempts); the process lives on and the other emails are
// sent.
func TestSenderPanicIsAFailedSend(t *testing.T) {
	t.Parallel()
	var ps *panickySender
	f := setup(t, func(o *email.Options) {
		ps = &panickySender{next: o.Sender, to: "panic@example.com"}
		o.Sender = ps
		o.MaxAttempts = 3
	})
	f.env.Publish(t, canceled(t, "evt_panic", map[string]any{"email": "panic@example.com"}))
	f.env.Publish(t, canceled(t, "evt_fine", map[string]any{"email": "fine@example.com"}))
	f.waitSent(t, 1)
	attempts, lastErr := f.givenUp(t, "evt_panic")
	require.Equal(t, 3, attempts)
	require.Equal(t, "sender panicked: sender bug \uFFFD for panic@example.com", lastErr)
	require.EqualValues(t, 3, ps.panics.Load())
	require.NoError(t, f.sub.Healthy())
	require.EqualValues(t, 1, hubtest.MetricValue(t, f.reg, "hookhub_email_send_failures_total", map[string]string{"final": "true"}))
}

// brokenError's Error panics.
type brokenError struct{}

func (brokenError) Error() string { panic("Error method broke") }

// errorsSender fails each recipient of errs with its error, as it is, and
// sends the others through next.
type errorsSender struct {
	next email.Sender
	errs map[string]error
}

func (s *errorsSender) Send(ctx context.Context, m email.Message) error {
	if err, ok := s.errs[m.To]; ok {
		return err
	}
	return s.next.Send(ctx, m)
}

// A Sender's error is user code too. A typed nil (a nil
// *PermanentError, whose Error dereferences it) or an error whose Error
// panics is a failed send with a fixed text (retried, then given up; at
// once when it says it is permanent); the process lives on and the other
// emails are sent. Before, the outbox called Error() outside any recover
// and the process died on every start.
func TestSenderBrokenErrorIsAFailedSend(t *testing.T) {
	t.Parallel()
	var typedNil *email.PermanentError
	cases := []struct {
		to, eventID string
		err         error
		attempts    int
		want        string
	}{
		{"nil@example.com", "evt_typed_nil", typedNil, 3, "nil *email.PermanentError returned as an error"},
		{"broken@example.com", "evt_broken", brokenError{}, 3, "Error() of email_test.brokenError panicked: Error method broke"},
		{"permbroken@example.com", "evt_perm_broken", &email.PermanentError{Err: brokenError{}}, 1, "Error() of *email.PermanentError panicked: Error method broke"},
	}
	f := setup(t, func(o *email.Options) {
		s := &errorsSender{next: o.Sender, errs: map[string]error{}}
		for _, tc := range cases {
			s.errs[tc.to] = tc.err
		}
		o.Sender = s
		o.MaxAttempts = 3
	})
	for _, tc := range cases {
		f.env.Publish(t, canceled(t, tc.eventID, map[string]any{"email": tc.to}))
	}
	f.env.Publish(t, canceled(t, "evt_fine", map[string]any{"email": "fine@example.com"}))
	f.waitSent(t, 1)
	for _, tc := range cases {
		attempts, lastErr := f.givenUp(t, tc.eventID)
		require.Equal(t, tc.attempts, attempts, tc.eventID)
		require.Equal(t, tc.want, lastErr)
	}
	require.NoError(t, f.sub.Healthy())
}
