package subscriber_test

// Tests of what a destination (a subscriber that sends events elsewhere)
// builds on: RetryAfter, Config.Admit and Config.ResendReplays.

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

func TestRetryAfterError(t *testing.T) {
	t.Parallel()
	cause := errors.New("receiver busy")
	for _, tc := range []struct {
		name      string
		after     time.Duration
		err       error
		wantAfter time.Duration
		wantText  string
	}{
		{"as given", 5 * time.Second, cause, 5 * time.Second, "retry after 5s: receiver busy"},
		{"negative is zero", -time.Second, cause, 0, "retry after 0s: receiver busy"},
		{"clamped", 1000 * time.Hour, cause, subscriber.MaxRetryAfter, "retry after 24h0m0s: receiver busy"},
		{"nil reason", time.Second, nil, time.Second, "retry after 1s: the handler asked for a retry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := subscriber.RetryAfter(tc.after, tc.err)
			var re *subscriber.RetryError
			require.ErrorAs(t, err, &re)
			require.Equal(t, tc.wantAfter, re.After)
			require.Equal(t, tc.wantText, err.Error())
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			}
			require.False(t, subscriber.IsPermanent(err))
			require.True(t, subscriber.IsPermanent(subscriber.Permanent(err)))
		})
	}
}

// A handler that asks for a retry with RetryAfter is redelivered after its
// own delay, and never dead-lettered for MaxDeliver; Permanent still wins;
// a RetryError whose cause's Error panics keeps its delay.
func TestRetryAfter(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "retryafter"
	const delay, failures = 300 * time.Millisecond, 10
	var c calls
	var mu sync.Mutex
	var callTimes []time.Time
	var lastDelivered atomic.Uint64
	sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.MaxDeliver = 2 })
	sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		switch ev.EventID {
		case "evt_retry":
			mu.Lock()
			callTimes = append(callTimes, time.Now())
			mu.Unlock()
			lastDelivered.Store(ev.NumDelivered)
			if c.add(ev.EventID) <= failures {
				return subscriber.RetryAfter(delay, errors.New("receiver busy"))
			}
		case "evt_permanent":
			c.add(ev.EventID)
			return subscriber.Permanent(subscriber.RetryAfter(time.Second, errors.New("receiver gone")))
		case "evt_broken":
			if c.add(ev.EventID) <= 3 {
				return subscriber.RetryAfter(50*time.Millisecond, panicError{})
			}
		}
		_, err := tx.Exec(ctx, "INSERT INTO "+name+".effects (provider, event_id, subject) VALUES ($1, $2, $3)", ev.Provider, ev.EventID, ev.Subject)
		return err
	})
	subtest.Start(t, sub)
	for _, id := range []string{"evt_retry", "evt_permanent", "evt_broken"} {
		env.Publish(t, event(t, id))
	}

	eventually(t, func() bool { return sub.Stats().Processed == 2 && sub.Stats().DeadLettered == 1 })
	env.WaitAllAcked(t, name)

	require.Equal(t, failures+1, c.get("evt_retry"))
	require.EqualValues(t, failures+1, lastDelivered.Load(), "delivered far past MaxDeliver")
	require.Equal(t, 1, effects(t, env, name, "evt_retry"))
	mu.Lock()
	for i := 1; i < len(callTimes); i++ {
		gap := callTimes[i].Sub(callTimes[i-1])
		require.GreaterOrEqual(t, gap, delay-50*time.Millisecond, "call %d came %s after the previous one", i+1, gap)
	}
	mu.Unlock()

	require.Equal(t, 1, c.get("evt_permanent"), "Permanent wins over RetryAfter")
	require.Equal(t, 4, c.get("evt_broken"), "retried past MaxDeliver although its Error panics")
	require.Equal(t, 1, effects(t, env, name, "evt_broken"))

	dls, err := subscriber.ListDeadLetters(context.Background(), env.Pool, name)
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Equal(t, "evt_permanent", dls[0].EventID)
	require.Equal(t, 1, dls[0].Attempts)
	require.Contains(t, dls[0].Error, "retry after 1s: receiver gone")
	require.EqualValues(t, failures+1+3, sub.Stats().Failed)
	require.NoError(t, sub.Healthy())
}

// While every worker waits in Admit, no handler is called; once Admit lets
// them through, everything is processed.
func TestAdmitBlocks(t *testing.T) {
	env := subtest.NewParallel(t)
	const name, total = "admitblocks", 3
	var c calls
	open := make(chan struct{})
	reg := newRegistry()
	sub := newSub(t, env, name, func(cfg *subscriber.Config) {
		cfg.Concurrency = 2
		cfg.Registerer = reg
		cfg.Admit = func(ctx context.Context) error {
			select {
			case <-open:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
	sub.Handle("paddle.subscription.created", effectHandler(name, &c))
	subtest.Start(t, sub)
	for i := range total {
		env.Publish(t, event(t, "evt_"+strconv.Itoa(i)))
	}
	eventually(t, func() bool { return gauge(t, reg, subscriber.MetricWorkersWaiting, name) == 2 })
	eventually(t, func() bool { return env.ConsumerInfo(t, name).NumAckPending > 0 }, "messages pulled")
	time.Sleep(500 * time.Millisecond)
	require.Zero(t, sub.Stats().Processed+sub.Stats().Failed, "no message handled while Admit blocks")
	require.Zero(t, env.Count(t, "SELECT count(*) FROM "+name+".effects"))

	close(open)
	eventually(t, func() bool { return sub.Stats().Processed == total })
	env.WaitAllAcked(t, name)
	require.Equal(t, total, env.Count(t, "SELECT count(*) FROM "+name+".effects"))
}

// An Admit that lets one worker through at a time (a semaphore released
// when the handler returns) means one handler call at a time.
func TestAdmitOneAtATime(t *testing.T) {
	env := subtest.NewParallel(t)
	const name, total = "admitone", 8
	sem := make(chan struct{}, 1)
	var active, maxActive atomic.Int32
	sub := newSub(t, env, name, func(cfg *subscriber.Config) {
		cfg.Concurrency = 4
		cfg.AckWait = 30 * time.Second // no redelivery (a duplicate would keep the semaphore)
		cfg.Admit = func(ctx context.Context) error {
			select {
			case sem <- struct{}{}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
	sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		defer func() { <-sem }()
		n := active.Add(1)
		defer active.Add(-1)
		for {
			m := maxActive.Load()
			if n <= m || maxActive.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		_, err := tx.Exec(ctx, "INSERT INTO "+name+".effects (provider, event_id, subject) VALUES ($1, $2, $3)", ev.Provider, ev.EventID, ev.Subject)
		return err
	})
	subtest.Start(t, sub)
	for i := range total {
		env.Publish(t, event(t, "evt_"+strconv.Itoa(i)))
	}
	eventually(t, func() bool { return sub.Stats().Processed == total })
	require.EqualValues(t, 1, maxActive.Load(), "handler calls overlapped")
}

// An Admit that panics is logged and treated as "not now": the subscriber
// goes on and processes once Admit recovers.
func TestAdmitPanics(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "admitpanics"
	var c calls
	var admits atomic.Int32
	var logs hubtest.SyncBuffer
	sub := newSub(t, env, name, func(cfg *subscriber.Config) {
		cfg.Concurrency = 1
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		cfg.Admit = func(context.Context) error {
			if admits.Add(1) <= 3 {
				panic("admit broke")
			}
			return nil
		}
	})
	sub.Handle("paddle.subscription.created", effectHandler(name, &c))
	r := subtest.Start(t, sub)
	env.Publish(t, event(t, "evt_a"))
	env.Publish(t, event(t, "evt_b"))
	eventually(t, func() bool { return sub.Stats().Processed == 2 })
	require.NoError(t, sub.Healthy())
	require.NoError(t, r.Stop())
	out := logs.String()
	require.Equal(t, 3, strings.Count(out, "admit panicked"), out)
	require.Contains(t, out, "admit broke")
	require.Contains(t, out, "stack=")
}

// Cancelled while its workers wait in Admit, Run returns at once (whether
// Admit honours its context or not) and releases what it pulled: a new
// subscriber processes every message.
func TestAdmitShutdown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		admit func(stuck <-chan struct{}) func(context.Context) error
	}{
		{"admit honours its context", func(<-chan struct{}) func(context.Context) error {
			return func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
		}},
		{"admit ignores its context", func(stuck <-chan struct{}) func(context.Context) error {
			return func(context.Context) error { <-stuck; return nil }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := subtest.New(t)
			const name, total = "admitstop", 4
			const shutdownTimeout = 10 * time.Second
			stuck := make(chan struct{})
			t.Cleanup(func() { close(stuck) })
			reg := newRegistry()
			sub := newSub(t, env, name, func(cfg *subscriber.Config) {
				cfg.Concurrency = 2
				cfg.Registerer = reg
				cfg.ShutdownTimeout = shutdownTimeout
				cfg.Admit = tc.admit(stuck)
			})
			var c calls
			sub.Handle("paddle.subscription.created", effectHandler(name, &c))
			r := subtest.Start(t, sub)
			for i := range total {
				env.Publish(t, event(t, "evt_"+strconv.Itoa(i)))
			}
			eventually(t, func() bool { return gauge(t, reg, subscriber.MetricWorkersWaiting, name) == 2 })
			eventually(t, func() bool { return env.ConsumerInfo(t, name).NumAckPending > 0 }, "messages pulled")

			start := time.Now()
			require.NoError(t, r.Stop())
			require.Less(t, time.Since(start), shutdownTimeout, "Run waited for the workers in Admit")
			require.Zero(t, sub.Stats().Processed)
			require.Zero(t, gauge(t, reg, subscriber.MetricWorkersWaiting, name))

			next := newSub(t, env, name, nil)
			next.Handle("paddle.subscription.created", effectHandler(name, &c))
			subtest.Start(t, next)
			eventually(t, func() bool { return next.Stats().Processed == total })
			env.WaitAllAcked(t, name)
			for i := range total {
				require.Equal(t, 1, effects(t, env, name, "evt_"+strconv.Itoa(i)))
			}
		})
	}
}

// A copy `hub replay` made for the subscriber is marked Replayed; with
// ResendReplays its handler is called although the event was processed.
func TestResendReplays(t *testing.T) {
	t.Parallel()
	for _, resend := range []bool{true, false} {
		t.Run("resend="+strconv.FormatBool(resend), func(t *testing.T) {
			t.Parallel()
			env := subtest.New(t)
			const name = "resend"
			var c calls
			var replayed atomic.Int32
			record := effectHandler(name, &c)
			sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.ResendReplays = resend })
			sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
				if ev.Replayed && replayed.Add(1) == 1 {
					// The first call for the copy fails: retried as usual
					// (the redelivery's call is counted in handler_attempts).
					return errors.New("receiver down")
				}
				return record(ctx, tx, ev)
			})
			subtest.Start(t, sub)
			m := event(t, "evt_replayed")
			seq := env.Publish(t, m)
			eventually(t, func() bool { return sub.Stats().Processed == 1 })

			env.PublishReplayCopy(t, name, seq, "run1")
			if resend {
				eventually(t, func() bool { return sub.Stats().Resent == 1 })
				require.Equal(t, 2, c.get(m.EventID))
				require.EqualValues(t, 2, replayed.Load(), "the copy's failed call, then its retry")
				require.EqualValues(t, 1, sub.Stats().Failed)
				require.Equal(t, 2, effects(t, env, name, m.EventID))
				require.Zero(t, env.Count(t, "SELECT count(*) FROM "+name+".handler_attempts WHERE unfinished > 0"), "the retry's call count was cleared")
			} else {
				eventually(t, func() bool { return sub.Stats().SkippedDuplicate == 1 })
				require.Equal(t, 1, c.get(m.EventID))
				require.Zero(t, replayed.Load())
				require.Zero(t, sub.Stats().Resent)
				require.Equal(t, 1, effects(t, env, name, m.EventID))
			}
			env.WaitAllAcked(t, name)
			require.EqualValues(t, 1, sub.Stats().Processed)
			require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM "+name+".processed_messages WHERE event_id = $1 AND outcome = 'processed'", m.EventID))
		})
	}
}
