package subscriber_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// errorLen is the library's bound on a stored error (8 KiB).
const errorLen = 8 << 10

// splitAt returns a text of more than errorLen bytes in which r straddles
// byte errorLen: a plain 8 KiB cut splits it.
func splitAt(r rune) string {
	n := utf8.RuneLen(r)
	return strings.Repeat("x", errorLen-n+1) + string(r) + strings.Repeat("y", 100)
}

// poisonMessage is a message on a subject of its own (so the cases of a
// table share one stream and database, one subscriber each).
func poisonMessage(t *testing.T, i int) subtest.Message {
	m := event(t, fmt.Sprintf("evt_poison_%d", i))
	m.EventType = fmt.Sprintf("poison%d.created", i)
	return m
}

// storedDeadLetter waits for the subscriber's only dead letter and checks
// that it reads back and its texts are storable as they are.
func storedDeadLetter(t *testing.T, env *subtest.Env, name string) subscriber.DeadLetter {
	t.Helper()
	var dls []subscriber.DeadLetter
	eventually(t, func() bool {
		var err error
		dls, err = subscriber.ListDeadLetters(context.Background(), env.Pool, name)
		require.NoError(t, err)
		return len(dls) == 1
	})
	d := dls[0]
	require.True(t, utf8.ValidString(d.Error) && !strings.Contains(d.Error, "\x00"), "error %q", d.Error)
	require.LessOrEqual(t, len(d.Error), errorLen)
	require.Equal(t, d.Error, subscriber.SanitizeText(d.Error, errorLen))
	return d
}

// A handler error holding NUL bytes or
// invalid UTF-8, or one longer than 8 KiB whose cut falls inside a
// character, and a panic with such a value, are dead-lettered within
// MaxDeliver attempts, and the dead letter reads back with a valid UTF-8
// error. Before, the dead letter's insert failed and the message was
// retried forever.
func TestPoisonErrorsAreDeadLettered(t *testing.T) {
	env := subtest.NewParallel(t)
	insertNUL := func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		id := "sub_\x00"
		_, err := tx.Exec(ctx, "INSERT INTO "+pgx.Identifier{"poison_8"}.Sanitize()+".entities (id, value) VALUES ($1, 'x')", id)
		return fmt.Errorf("store %s: %w", id, err)
	}
	cases := []struct {
		name      string
		handler   subscriber.HandlerFunc
		attempts  int
		wantError string
	}{
		{name: "NUL in the middle", handler: failWith(errors.New("bad \x00 value")), attempts: 3, wantError: "bad \uFFFD value"},
		{name: "NUL at the start", handler: failWith(errors.New("\x00bad")), attempts: 3, wantError: "\uFFFDbad"},
		{name: "invalid UTF-8", handler: failWith(errors.New("bad \xff\xfe bytes \xc3")), attempts: 3, wantError: "bad \uFFFD bytes \uFFFD"},
		{name: "8 KiB cut inside a 2-byte character", handler: failWith(errors.New(splitAt('é'))), attempts: 3, wantError: "xxxx"},
		{name: "8 KiB cut inside a 3-byte character", handler: failWith(errors.New(splitAt('€'))), attempts: 3, wantError: "xxxx"},
		{name: "8 KiB cut inside a 4-byte character", handler: failWith(errors.New(splitAt('😀'))), attempts: 3, wantError: "xxxx"},
		{name: "panic with NUL and a split character", handler: func(context.Context, pgx.Tx, subscriber.Event) error {
			panic("boom \x00" + splitAt('😀'))
		}, attempts: 3, wantError: "handler panic: boom \uFFFD"},
		{name: "permanent with NUL", handler: failWith(subscriber.Permanentf("customer %s is blocked", "ctm_\x00")), attempts: 1, wantError: "customer ctm_\uFFFD is blocked"},
		{name: "Postgres refuses a NUL", handler: insertNUL, attempts: 3, wantError: "store sub_\uFFFD: ERROR: invalid byte sequence"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("poison_%d", i)
			var calls atomic.Int64
			sub := newSub(t, env, name, nil)
			m := poisonMessage(t, i)
			subject, err := schema.Subject(m.Provider, m.EventType)
			require.NoError(t, err)
			sub.Handle(subject, func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
				calls.Add(1)
				return tc.handler(ctx, tx, ev)
			})
			subtest.Start(t, sub)
			env.Publish(t, m)

			d := storedDeadLetter(t, env, name)
			env.WaitAllAcked(t, name)
			require.Equal(t, tc.attempts, d.Attempts)
			require.EqualValues(t, tc.attempts, calls.Load())
			require.Contains(t, d.Error, tc.wantError)
			require.Equal(t, m.EventID, d.EventID)
			require.Equal(t, m.Body, d.Data)
			s := sub.Stats()
			require.EqualValues(t, 1, s.DeadLettered)
			require.EqualValues(t, tc.attempts, s.Failed)
			require.Zero(t, s.DeadLetterErrors)
			require.NoError(t, sub.Healthy())
		})
	}
}

func failWith(err error) subscriber.HandlerFunc {
	return func(context.Context, pgx.Tx, subscriber.Event) error { return err }
}

// Headers the hub never writes: a key holding NUL or invalid UTF-8 (or
// absurdly long) can never be recorded as processed, so the message is
// dead-lettered at once; other headers with such bytes are kept,
// sanitized, in the dead letter of a message that failed, which can be
// redriven after the fix.
func TestPoisonHeaders(t *testing.T) {
	env := subtest.NewParallel(t)
	hub := func(eventID string) nats.Header {
		return schema.Metadata{MsgID: "paddle:" + eventID, EventID: eventID, Provider: "paddle", EventType: "subscription.created", ReceivedAt: time.Now()}.Header()
	}
	cases := []struct {
		name     string
		header   nats.Header
		fails    bool // the handler fails until fixed
		attempts int
		want     string
	}{
		{name: "NUL in the event id", header: hub("evt_\x00"), attempts: 1, want: `invalid hub headers: subscriber: value cannot be stored (NUL byte or invalid UTF-8): header Hub-Event-Id "evt_\x00"`},
		{name: "invalid UTF-8 in the provider", header: func() nats.Header {
			h := hub("evt_p")
			h.Set(schema.HeaderProvider, "pad\xffdle")
			return h
		}(), attempts: 1, want: `header Hub-Provider "pad\xffdle"`},
		{name: "an event id of 5000 bytes", header: hub(strings.Repeat("e", 5000)), attempts: 1, want: "header Hub-Event-Id is 5000 bytes long"},
		{name: "NUL and invalid UTF-8 in other headers", header: func() nats.Header {
			h := hub("evt_other")
			h.Set("X-Trace", "a\x00b")
			h.Set("X-Bin", "\xff\xfe")
			return h
		}(), fails: true, attempts: 3, want: "downstream says no"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("headers_%d", i)
			subject := fmt.Sprintf("paddle.headers%d.created", i)
			var fixed atomic.Bool
			var c calls
			sub := newSub(t, env, name, nil)
			record := effectHandler(name, &c)
			sub.Handle(subject, func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
				if tc.fails && !fixed.Load() {
					c.add("failed")
					return errors.New("downstream says no")
				}
				return record(ctx, tx, ev)
			})
			subtest.Start(t, sub)
			body := []byte(`{"data":{"id":"x"}}`)
			env.PublishRaw(t, &nats.Msg{Subject: subject, Data: body, Header: tc.header})

			d := storedDeadLetter(t, env, name)
			env.WaitAllAcked(t, name)
			require.Equal(t, tc.attempts, d.Attempts)
			require.Contains(t, d.Error, tc.want)
			require.Equal(t, body, d.Data)
			for k, vs := range d.Headers {
				require.True(t, subscriber.Storable(k), "header name %q", k)
				for _, v := range vs {
					require.True(t, subscriber.Storable(v), "header %s: %q", k, v)
				}
			}
			require.EqualValues(t, tc.attempts, sub.Stats().Failed)
			if !tc.fails {
				require.Zero(t, c.get("failed"))
				return
			}
			require.Equal(t, "a\uFFFDb", d.Headers.Get("X-Trace"))
			require.Equal(t, "\uFFFD", d.Headers.Get("X-Bin"))
			fixed.Store(true)
			n, err := subscriber.RequestRedrive(context.Background(), env.Pool, name, d.ID)
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			eventually(t, func() bool { return effects(t, env, name, "evt_other") == 1 })
		})
	}
}

// A redrive whose handler fails again with an unstorable error records a
// storable redrive_error, clears the request and is not retried.
func TestPoisonRedriveError(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "poison_redrive"
	var c calls
	sub := newSub(t, env, name, nil)
	sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		c.add(ev.EventID)
		return errors.New("\x00 still broken \xff" + splitAt('€'))
	})
	subtest.Start(t, sub)
	m := event(t, "evt_redrive")
	env.Publish(t, m)
	d := storedDeadLetter(t, env, name)
	require.Equal(t, 3, c.get(m.EventID))

	ctx := context.Background()
	n, err := subscriber.RequestRedrive(ctx, env.Pool, name, d.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	eventually(t, func() bool {
		got, err := subscriber.GetDeadLetter(ctx, env.Pool, name, d.ID)
		require.NoError(t, err)
		return got.RedriveRequestedAt == nil && got.RedriveError != ""
	})
	got, err := subscriber.GetDeadLetter(ctx, env.Pool, name, d.ID)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(got.RedriveError, "\uFFFD still broken \uFFFD"), got.RedriveError[:40])
	require.LessOrEqual(t, len(got.RedriveError), errorLen)
	require.True(t, subscriber.Storable(got.RedriveError))
	require.Equal(t, 4, got.Attempts)
	require.Nil(t, got.RedrivenAt)
	// Not claimed again: a later redrive (of another dead letter) runs,
	// and this one's handler is still at its one redrive call.
	env.Publish(t, event(t, "evt_other"))
	eventually(t, func() bool { return sub.Stats().DeadLettered == 2 })
	_, err = subscriber.RequestRedrive(ctx, env.Pool, name, d.ID+1)
	require.NoError(t, err)
	eventually(t, func() bool { return c.get("evt_other") == 4 })
	require.Equal(t, 4, c.get(m.EventID))
	require.Zero(t, sub.Stats().Redriven)
}

// When Postgres refuses the dead letter itself (here a constraint an
// operator added; in the wild a database whose encoding is not UTF-8), it
// is stored bare: no headers or ids, ASCII text, the exact body.
func TestDeadLetterStoredBare(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "bare"
	sub := newSub(t, env, name, nil)
	sub.Handle("paddle.subscription.created", failWith(subscriber.Permanentf("rejected é")))
	subtest.Start(t, sub)
	_, err := env.Pool.Exec(context.Background(), `ALTER TABLE bare.dead_letters ADD CONSTRAINT only_bare CHECK (headers = '{}'::jsonb)`)
	require.NoError(t, err)
	m := event(t, "evt_bare")
	env.Publish(t, m)
	d := storedDeadLetter(t, env, name)
	env.WaitAllAcked(t, name)
	require.Empty(t, d.Provider)
	require.Empty(t, d.EventID)
	require.Empty(t, d.Headers)
	require.Equal(t, m.Body, d.Data)
	require.Equal(t, "paddle.subscription.created", d.Subject)
	require.Contains(t, d.Error, "stored without headers")
	require.Contains(t, d.Error, `Nats-Msg-Id \"paddle:evt_bare\"`)
	require.Contains(t, d.Error, `rejected \u00e9`)
	require.EqualValues(t, 1, sub.Stats().DeadLetterErrors)
	require.EqualValues(t, 1, sub.Stats().DeadLettered)
	require.NoError(t, sub.Healthy())
}

// When the dead letter cannot be stored at all, the message is not
// terminated (it would be lost): it is retried, and the subscriber says it
// is stuck, in Healthy and the stuck_messages gauge, until the dead letter
// is stored. Being delivered far more than MaxDeliver times this way is
// not mistaken for a crash loop.
func TestDeadLetterCannotBeStored(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "stuck"
	reg := newRegistry()
	sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.Registerer = reg })
	sub.Handle("paddle.subscription.created", failWith(subscriber.Permanentf("rejected")))
	subtest.Start(t, sub)
	ctx := context.Background()
	_, err := env.Pool.Exec(ctx, `ALTER TABLE stuck.dead_letters ADD CONSTRAINT nothing CHECK (false)`)
	require.NoError(t, err)
	env.Publish(t, event(t, "evt_stuck"))

	eventually(t, func() bool { return sub.Stats().DeadLetterErrors >= 10 })
	err = sub.Healthy()
	require.ErrorContains(t, err, "1 message(s) due to be dead-lettered cannot be stored")
	require.ErrorContains(t, err, "nothing")
	require.EqualValues(t, 1, gauge(t, reg, subscriber.MetricStuckMessages, name))
	require.Zero(t, sub.Stats().DeadLettered)
	require.EqualValues(t, 1, env.ConsumerInfo(t, name).NumAckPending, "not terminated")

	_, err = env.Pool.Exec(ctx, `ALTER TABLE stuck.dead_letters DROP CONSTRAINT nothing`)
	require.NoError(t, err)
	d := storedDeadLetter(t, env, name)
	env.WaitAllAcked(t, name)
	require.Greater(t, d.Attempts, 5)
	require.Contains(t, d.Error, "rejected")
	require.NoError(t, sub.Healthy())
	require.Zero(t, gauge(t, reg, subscriber.MetricStuckMessages, name))
	require.Zero(t, sub.Stats().CrashLoops)
}

// A handler that ends its goroutine (runtime.Goexit, as t.FailNow does)
// fails its attempt like a panic; the worker goes on.
func TestHandlerGoexit(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "goexit"
	var c calls
	sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.Concurrency = 1 })
	record := effectHandler(name, &c)
	sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		if ev.EventID == "evt_exit" {
			runtime.Goexit()
		}
		return record(ctx, tx, ev)
	})
	subtest.Start(t, sub)
	env.Publish(t, event(t, "evt_exit"))
	d := storedDeadLetter(t, env, name)
	require.Contains(t, d.Error, "runtime.Goexit")
	require.Equal(t, 3, d.Attempts)
	env.Publish(t, event(t, "evt_after"))
	eventually(t, func() bool { return effects(t, env, name, "evt_after") == 1 })
	env.WaitAllAcked(t, name)
}
