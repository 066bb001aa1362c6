package subscriber_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Every event is delivered at least 10 times: the original message, 4
// re-publications under new Nats-Msg-Ids, then a consumer rewind that
// delivers all 5 again; the first delivery of one event also loses its
// ack, so JetStream redelivers it after AckWait. Two replicas of the
// subscriber share the durable consumer. Each event's handler runs once
// and leaves one effect row.
func TestEachEventProcessedOnce(t *testing.T) {
	env := subtest.NewParallel(t)
	const name, events = "once", 6
	var c calls
	var dropped atomic.Bool
	replicas := make([]*subscriber.Subscriber, 2)
	for i := range replicas {
		replicas[i] = newSub(t, env, name, nil)
		replicas[i].Handle("paddle.subscription.created", effectHandler(name, &c))
		replicas[i].SetHooks(subscriber.Hooks{DropAck: func(ev subscriber.Event) bool {
			return ev.EventID == "evt_0" && dropped.CompareAndSwap(false, true)
		}})
	}
	for _, r := range replicas {
		subtest.Start(t, r)
	}

	msgs := publishEvents(t, env, "evt", events)
	for _, m := range msgs {
		env.Republish(t, m, 4)
	}
	const deliveries = events*5 + 1 // + the redelivery after the lost ack
	eventually(t, func() bool { s := sumStats(replicas...); return s.Processed+s.SkippedDuplicate == deliveries })
	env.WaitAllAcked(t, name)

	env.Rewind(t, name)
	eventually(t, func() bool { s := sumStats(replicas...); return s.Processed+s.SkippedDuplicate == deliveries+events*5 })
	env.WaitAllAcked(t, name)

	s := sumStats(replicas...)
	require.EqualValues(t, events, s.Processed)
	require.EqualValues(t, events*10+1-events, s.SkippedDuplicate)
	require.Zero(t, s.Failed)
	require.True(t, dropped.Load())
	requireOnce(t, env, name, &c, msgs)
	require.Equal(t, events, env.Count(t, "SELECT count(*) FROM once.processed_messages WHERE outcome = 'processed' AND subscriber = 'once'"))
}

// A subscriber killed after its COMMIT and before its ack: the kill is the
// subscriber's NATS connection closing in the AfterCommit hook, so the ack
// can never be sent and Run stops (as a dead process would); the database
// has committed. A new subscriber (the restart) gets the redelivery after
// AckWait and skips it: the handler ran once.
func TestKilledAfterCommitBeforeAck(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "killed_after"
	var c calls

	nc, js := env.Connect(t)
	first := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.JetStream = js })
	first.Handle("paddle.subscription.created", effectHandler(name, &c))
	first.SetHooks(subscriber.Hooks{AfterCommit: func(subscriber.Event) { nc.Close() }})
	r1 := subtest.Start(t, first)

	m := event(t, "evt_after")
	env.Publish(t, m)
	err := r1.Wait()
	require.ErrorIs(t, err, jetstream.ErrConnectionClosed)
	require.Equal(t, 1, effects(t, env, name, m.EventID), "committed before the kill")
	require.EqualValues(t, 1, env.ConsumerInfo(t, name).NumAckPending, "never acked")

	second := newSub(t, env, name, nil)
	second.Handle("paddle.subscription.created", effectHandler(name, &c))
	subtest.Start(t, second)
	eventually(t, func() bool { return second.Stats().SkippedDuplicate == 1 })
	env.WaitAllAcked(t, name)
	require.Zero(t, second.Stats().Processed)
	require.Equal(t, 1, c.get(m.EventID))
	require.Equal(t, 1, effects(t, env, name, m.EventID))
}

// A subscriber killed before its COMMIT (after the handler ran): nothing
// is written, JetStream redelivers after AckWait and the restarted
// subscriber processes the event, once.
func TestKilledBeforeCommit(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "killed_before"
	var c calls

	nc, js := env.Connect(t)
	first := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.JetStream = js })
	first.Handle("paddle.subscription.created", effectHandler(name, &c))
	first.SetHooks(subscriber.Hooks{BeforeCommit: func(subscriber.Event) error {
		nc.Close()
		return errors.New("killed before commit")
	}})
	r1 := subtest.Start(t, first)

	m := event(t, "evt_before")
	env.Publish(t, m)
	require.ErrorIs(t, r1.Wait(), jetstream.ErrConnectionClosed)
	require.Equal(t, 1, c.get(m.EventID), "the handler ran")
	require.Equal(t, 0, effects(t, env, name, m.EventID), "but nothing was committed")

	second := newSub(t, env, name, nil)
	second.Handle("paddle.subscription.created", effectHandler(name, &c))
	subtest.Start(t, second)
	eventually(t, func() bool { return second.Stats().Processed == 1 })
	env.WaitAllAcked(t, name)
	require.Zero(t, second.Stats().SkippedDuplicate)
	require.Equal(t, 1, effects(t, env, name, m.EventID))
}

// A handler that always fails for one event: the event is tried
// MaxDeliver times with backoff and dead-lettered, while the other events
// (published after it, on a single worker) flow. After the fix a redrive
// processes it once; a second redrive request finds nothing to do; and a
// redrive of an event processed meanwhile is a skip.
func TestDeadLetterAndRedrive(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "dlq"
	var c calls
	var broken atomic.Bool
	broken.Store(true)
	sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.Concurrency = 1 })
	record := effectHandler(name, &c)
	sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		if broken.Load() && (ev.EventID == "evt_bad" || ev.EventID == "evt_bad2") {
			c.add(ev.EventID)
			return errors.New("downstream says no")
		}
		return record(ctx, tx, ev)
	})
	subtest.Start(t, sub)

	bad, bad2 := event(t, "evt_bad"), event(t, "evt_bad2")
	env.Publish(t, bad)
	good := publishEvents(t, env, "evt_good", 5)
	env.Publish(t, bad2)
	eventually(t, func() bool { return sub.Stats().DeadLettered == 2 })
	env.WaitAllAcked(t, name)

	s := sub.Stats()
	require.EqualValues(t, 5, s.Processed)
	require.EqualValues(t, 2*3, s.Failed, "MaxDeliver=3 attempts each")
	require.Equal(t, 3, c.get("evt_bad"))
	for _, g := range good {
		require.Equal(t, 1, effects(t, env, name, g.EventID))
	}

	ctx := context.Background()
	dls, err := subscriber.ListDeadLetters(ctx, env.Pool, name)
	require.NoError(t, err)
	require.Len(t, dls, 2)
	dl := dls[0]
	if dl.EventID != "evt_bad" {
		dl = dls[1]
	}
	require.Equal(t, "paddle", dl.Provider)
	require.Equal(t, "evt_bad", dl.EventID)
	require.Equal(t, "paddle.subscription.created", dl.Subject)
	require.Equal(t, 3, dl.Attempts)
	require.Contains(t, dl.Error, "downstream says no")
	require.Equal(t, bad.Body, dl.Data)
	require.Equal(t, "paddle:evt_bad", dl.Headers.Get(schema.HeaderMsgID))
	require.NotZero(t, dl.StreamSeq)
	require.Nil(t, dl.RedrivenAt)

	// The fix is deployed; bad2 is re-published and processed normally.
	broken.Store(false)
	env.Republish(t, bad2, 1)
	eventually(t, func() bool { return effects(t, env, name, "evt_bad2") == 1 })

	n, err := subscriber.RequestRedrive(ctx, env.Pool, name, dl.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	eventually(t, func() bool { return sub.Stats().Redriven == 1 })
	require.Equal(t, 1, effects(t, env, name, "evt_bad"))
	got, err := subscriber.GetDeadLetter(ctx, env.Pool, name, dl.ID)
	require.NoError(t, err)
	require.NotNil(t, got.RedrivenAt)

	n, err = subscriber.RequestRedrive(ctx, env.Pool, name, dl.ID)
	require.NoError(t, err)
	require.Zero(t, n, "already redriven")

	// bad2 was processed meanwhile: its redrive is a skip.
	dup := sub.Stats().SkippedDuplicate
	n, err = subscriber.RequestRedriveAll(ctx, env.Pool, name)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	eventually(t, func() bool { return sub.Stats().Redriven == 2 })
	require.Equal(t, dup+1, sub.Stats().SkippedDuplicate)
	require.Equal(t, 1, effects(t, env, name, "evt_bad2"))
	require.Equal(t, 1, effects(t, env, name, "evt_bad"))
	require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM dlq.processed_messages WHERE dead_letter_id = $1", dl.ID))
}

// Messages that can never succeed are dead-lettered at their first
// attempt; failures and panics after MaxDeliver attempts. The subscriber
// keeps running in every case.
func TestDeadLetterCases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		publish      func(t *testing.T, env *subtest.Env)
		handler      subscriber.HandlerFunc
		wantAttempts int
		wantError    string
		wantProvider string
	}{
		{
			name: "missing hub headers",
			publish: func(t *testing.T, env *subtest.Env) {
				h := nats.Header{}
				h.Set(schema.HeaderMsgID, "paddle:evt_x")
				env.PublishRaw(t, &nats.Msg{Subject: "paddle.subscription.created", Data: []byte(`{}`), Header: h})
			},
			wantAttempts: 1,
			wantError:    "missing hub header",
		},
		{
			name: "undecodable body",
			publish: func(t *testing.T, env *subtest.Env) {
				m := event(t, "evt_x")
				m.Body = []byte("not json")
				env.Publish(t, m)
			},
			handler: func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
				_, _, err := ev.PaddleSubscription()
				return err
			},
			wantAttempts: 1,
			wantError:    "cannot decode payload",
			wantProvider: "paddle",
		},
		{
			name: "permanent error",
			handler: func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
				return subscriber.Permanentf("customer %s is blocked", "ctm_x")
			},
			wantAttempts: 1,
			wantError:    "customer ctm_x is blocked",
			wantProvider: "paddle",
		},
		{
			name: "panic",
			handler: func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
				var m map[string]int
				m["boom"]++ // nil map write
				return nil
			},
			wantAttempts: 3,
			wantError:    "handler panic",
			wantProvider: "paddle",
		},
		{
			name: "failing SQL",
			handler: func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
				_, err := tx.Exec(ctx, "INSERT INTO no_such_table VALUES (1)")
				return err
			},
			wantAttempts: 3,
			wantError:    "no_such_table",
			wantProvider: "paddle",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := subtest.New(t)
			const name = "cases"
			var c calls
			h := tc.handler
			if h == nil {
				h = effectHandler(name, &c)
			}
			sub := newSub(t, env, name, nil)
			sub.Handle("paddle.subscription.created", h)
			subtest.Start(t, sub)
			if tc.publish != nil {
				tc.publish(t, env)
			} else {
				env.Publish(t, event(t, "evt_x"))
			}
			// A good message after it still flows.
			good := event(t, "evt_good")
			eventually(t, func() bool { return sub.Stats().DeadLettered == 1 })
			if tc.handler == nil {
				env.Publish(t, good)
				eventually(t, func() bool { return effects(t, env, name, good.EventID) == 1 })
			}
			env.WaitAllAcked(t, name)
			require.Nil(t, sub.Healthy())
			dls, err := subscriber.ListDeadLetters(context.Background(), env.Pool, name)
			require.NoError(t, err)
			require.Len(t, dls, 1)
			require.Equal(t, tc.wantAttempts, dls[0].Attempts)
			require.Contains(t, dls[0].Error, tc.wantError)
			require.Equal(t, tc.wantProvider, dls[0].Provider)
			require.EqualValues(t, tc.wantAttempts, sub.Stats().Failed)
			require.Zero(t, env.Count(t, "SELECT count(*) FROM cases.processed_messages WHERE event_id = 'evt_x'"), "nothing recorded for it")
		})
	}
}

// The ordering helper: an event older than (or as old as) the last one
// applied to the same entity is recorded as skipped_stale, its writes
// undone, and the entity keeps the newer state.
func TestStaleEventsAreSkipped(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "ordering"
	sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.Concurrency = 1 })
	sub.Handle("paddle.subscription.*", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		pe, s, err := ev.PaddleSubscription()
		if err != nil {
			return err
		}
		// A write before the check, to see it undone.
		if _, err := tx.Exec(ctx, "INSERT INTO ordering.effects (provider, event_id, subject) VALUES ($1, $2, $3)", ev.Provider, ev.EventID, ev.Subject); err != nil {
			return err
		}
		ok, err := subscriber.ApplyIfNewer(ctx, tx, "paddle.subscription", s.ID, pe.OccurredAt)
		if err != nil {
			return err
		}
		if !ok {
			return subscriber.ErrStale
		}
		_, err = tx.Exec(ctx, `INSERT INTO ordering.entities (id, value) VALUES ($1, $2)
			ON CONFLICT (id) DO UPDATE SET value = excluded.value`, s.ID, ev.EventType)
		return err
	})
	subtest.Start(t, sub)

	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	msgs := []subtest.Message{
		subtest.PaddleSubscription(t, "evt_1", schema.PaddleSubscriptionCreated, t0, "sub_1", "ctm_1", nil),
		subtest.PaddleSubscription(t, "evt_3", schema.PaddleSubscriptionCanceled, t0.Add(2*time.Minute), "sub_1", "ctm_1", nil),
		subtest.PaddleSubscription(t, "evt_2", schema.PaddleSubscriptionUpdated, t0.Add(time.Minute), "sub_1", "ctm_1", nil),    // late
		subtest.PaddleSubscription(t, "evt_2b", schema.PaddleSubscriptionUpdated, t0.Add(2*time.Minute), "sub_1", "ctm_1", nil), // same time
		subtest.PaddleSubscription(t, "evt_4", schema.PaddleSubscriptionUpdated, t0.Add(time.Minute), "sub_2", "ctm_2", nil),    // other entity
	}
	for _, m := range msgs {
		env.Publish(t, m)
	}
	eventually(t, func() bool { s := sub.Stats(); return s.Processed+s.SkippedStale == 5 })
	env.WaitAllAcked(t, name)
	require.EqualValues(t, 3, sub.Stats().Processed)
	require.EqualValues(t, 2, sub.Stats().SkippedStale)

	var state string
	require.NoError(t, env.Pool.QueryRow(context.Background(), "SELECT value FROM ordering.entities WHERE id = 'sub_1'").Scan(&state))
	require.Equal(t, "subscription.canceled", state)
	for _, id := range []string{"evt_2", "evt_2b"} {
		require.Zero(t, effects(t, env, name, id), "writes of a stale event are undone")
		var outcome string
		require.NoError(t, env.Pool.QueryRow(context.Background(), "SELECT outcome FROM ordering.processed_messages WHERE event_id = $1", id).Scan(&outcome))
		require.Equal(t, "skipped_stale", outcome)
	}
	var last time.Time
	require.NoError(t, env.Pool.QueryRow(context.Background(), "SELECT last_occurred_at FROM ordering.entity_versions WHERE kind = 'paddle.subscription' AND id = 'sub_1'").Scan(&last))
	require.True(t, last.Equal(t0.Add(2*time.Minute)))
}

func TestApplyIfNewerErrors(t *testing.T) {
	t.Parallel()
	_, err := subscriber.ApplyIfNewer(context.Background(), nil, "k", "id", time.Now())
	require.ErrorIs(t, err, subscriber.ErrNotInHandler)

	env := subtest.New(t)
	const name = "no_time"
	sub := newSub(t, env, name, nil)
	sub.Handle("clerk.>", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		_, err := subscriber.ApplyIfNewer(ctx, tx, "clerk.user", "user_1", time.Time{})
		return err
	})
	subtest.Start(t, sub)
	m := subtest.ClerkUserCreated(t, "msg_1", "user_1", "ada@example.com", time.Now())
	m.OccurredAt = time.Time{}
	env.Publish(t, m)
	eventually(t, func() bool { return sub.Stats().DeadLettered == 1 })
	require.EqualValues(t, 1, sub.Stats().Failed, "permanent: no retries")
	dls, err := subscriber.ListDeadLetters(context.Background(), env.Pool, name)
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Contains(t, dls[0].Error, subscriber.ErrNoOccurredAt.Error())
}

// Graceful shutdown with messages in flight: Run keeps going until the
// in-flight handlers finish, commits and acks them, and returns nil. The
// messages it had pulled but not started are handed back. A restarted
// subscriber processes the rest and sees no redelivery of the finished
// ones (they were acked).
func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	env := subtest.NewParallel(t)
	const name, total, concurrency = "graceful", 12, 4
	var c calls
	started := make(chan string, total)
	release := make(chan struct{})
	record := effectHandler(name, &c)
	sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.Concurrency = concurrency })
	sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		started <- ev.EventID
		<-release
		return record(ctx, tx, ev)
	})
	r := subtest.Start(t, sub)
	for i := range total {
		env.Publish(t, event(t, fmt.Sprintf("evt_%02d", i)))
	}
	inFlight := map[string]bool{}
	for range concurrency {
		select {
		case id := <-started:
			inFlight[id] = true
		case <-time.After(subtest.Timeout):
			t.Fatal("handlers did not start")
		}
	}

	stopped := make(chan error, 1)
	go func() { stopped <- r.Stop() }()
	eventually(t, func() bool { return sub.Healthy() != nil }, "stopping")
	select {
	case err := <-stopped:
		t.Fatalf("Run returned with handlers in flight: %v", err)
	default:
	}
	close(release)
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(subtest.Timeout):
		t.Fatal("Run did not return")
	}
	// Every handler that started finished and committed: the in-flight
	// ones, and any a worker freed by the release may have taken while the
	// fetcher was stopping.
	close(started)
	for id := range started {
		inFlight[id] = true
	}
	done := sub.Stats().Processed
	require.EqualValues(t, len(inFlight), done)
	for id := range inFlight {
		require.Equal(t, 1, effects(t, env, name, id))
	}

	next := newSub(t, env, name, nil)
	next.Handle("paddle.subscription.created", record)
	subtest.Start(t, next)
	eventually(t, func() bool { return next.Stats().Processed == total-done })
	env.WaitAllAcked(t, name)
	require.Zero(t, next.Stats().SkippedDuplicate, "the in-flight messages were acked before Run returned")
	require.Equal(t, total, env.Count(t, "SELECT count(*) FROM graceful.effects"))
}

// Past ShutdownTimeout, Run cancels the handlers and returns
// ErrShutdownTimeout; the message is rolled back and processed by the next
// run.
func TestShutdownTimeout(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "timeout"
	var c calls
	started := make(chan struct{}, 1)
	sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.ShutdownTimeout = 200 * time.Millisecond })
	sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		started <- struct{}{}
		<-ctx.Done() // a handler stuck until cancelled
		return ctx.Err()
	})
	r := subtest.Start(t, sub)
	m := event(t, "evt_stuck")
	env.Publish(t, m)
	<-started
	require.ErrorIs(t, r.Stop(), subscriber.ErrShutdownTimeout)
	require.Zero(t, sub.Stats().DeadLettered)

	next := newSub(t, env, name, nil)
	next.Handle("paddle.subscription.created", effectHandler(name, &c))
	subtest.Start(t, next)
	eventually(t, func() bool { return effects(t, env, name, m.EventID) == 1 })
	env.WaitAllAcked(t, name)
}

// A handler slower than AckWait keeps its message: InProgress every
// AckWait/3 stops JetStream from redelivering it meanwhile.
func TestSlowHandlerKeepsItsMessage(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "slow"
	var c calls
	var deliveries atomic.Int64
	record := effectHandler(name, &c)
	sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.AckWait = 600 * time.Millisecond })
	sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		deliveries.Add(1)
		select { // work that takes 4 AckWaits
		case <-time.After(2400 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		return record(ctx, tx, ev)
	})
	subtest.Start(t, sub)
	m := event(t, "evt_slow")
	env.Publish(t, m)
	eventually(t, func() bool { return sub.Stats().Processed == 1 })
	env.WaitAllAcked(t, name)
	require.EqualValues(t, 1, deliveries.Load())
	require.Zero(t, sub.Stats().SkippedDuplicate)
	require.Zero(t, sub.Stats().Failed)
}

// Background tasks run while Run runs and stop with it; one that fails
// stops Run with its error.
func TestBackground(t *testing.T) {
	env := subtest.NewParallel(t)
	t.Run("stops with Run", func(t *testing.T) {
		sub := newSub(t, env, "bg_ok", nil)
		sub.Handle("clerk.user.created", effectHandler("bg_ok", &calls{}))
		running, stopped := make(chan struct{}), make(chan struct{})
		sub.Background("tick", func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			close(stopped)
			return nil
		})
		r := subtest.Start(t, sub)
		<-running
		require.NoError(t, r.Stop())
		<-stopped
	})
	t.Run("failure stops Run", func(t *testing.T) {
		sub := newSub(t, env, "bg_fail", nil)
		sub.Handle("clerk.user.created", effectHandler("bg_fail", &calls{}))
		boom := errors.New("boom")
		fail := make(chan struct{})
		sub.Background("fail", func(ctx context.Context) error {
			<-fail
			return boom
		})
		r := subtest.Start(t, sub)
		close(fail)
		require.ErrorIs(t, r.Wait(), boom)
	})
	t.Run("panic stops Run, not the process", func(t *testing.T) {
		sub := newSub(t, env, "bg_panic", nil)
		sub.Handle("clerk.user.created", effectHandler("bg_panic", &calls{}))
		fail := make(chan struct{})
		sub.Background("panic", func(ctx context.Context) error {
			<-fail
			panic("task \x00 broke")
		})
		r := subtest.Start(t, sub)
		close(fail)
		err := r.Wait()
		require.ErrorContains(t, err, "background task panic: panic: task \uFFFD broke")
	})
}

// The tables are created once however many replicas migrate at once, and
// migrating again changes nothing.
func TestMigrateConcurrentReplicas(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "replicas"
	errs := make(chan error, 3)
	for range cap(errs) {
		go func() { errs <- subscriber.Migrate(context.Background(), env.Pool, name, effectsMigrations(name)) }()
	}
	for range cap(errs) {
		require.NoError(t, <-errs)
	}
	require.NoError(t, subscriber.Migrate(context.Background(), env.Pool, name, effectsMigrations(name)))
	require.NoError(t, subscriber.Migrate(context.Background(), env.Pool, "no_migrations", nil))
	for _, table := range []string{"replicas.processed_messages", "replicas.dead_letters", "replicas.entity_versions", "replicas.effects", "no_migrations.processed_messages"} {
		require.Zero(t, env.Count(t, "SELECT count(*) FROM "+table), table)
	}
	require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM replicas.schema_version WHERE version_id = 1"))
	require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM replicas.subscriber_schema_version WHERE version_id = 1"))
}

func TestDeadLetterFunctionsUnknownSubscriber(t *testing.T) {
	env := subtest.NewParallel(t)
	ctx := context.Background()
	_, err := subscriber.ListDeadLetters(ctx, env.Pool, "nobody")
	require.ErrorIs(t, err, subscriber.ErrUnknownSubscriber)
	_, err = subscriber.RequestRedriveAll(ctx, env.Pool, "nobody")
	require.ErrorIs(t, err, subscriber.ErrUnknownSubscriber)
	_, err = subscriber.RequestRedrive(ctx, env.Pool, `x"; DROP TABLE y; --`, 1)
	require.ErrorIs(t, err, subscriber.ErrUnknownSubscriber)
	_, err = subscriber.GetDeadLetter(ctx, env.Pool, "nobody", 1)
	require.ErrorIs(t, err, subscriber.ErrUnknownSubscriber)
}

// A NATS server restart (same port and store) does not stop the
// subscriber: the connection reconnects, the pull resumes, and events
// published after the restart are processed.
func TestSurvivesNATSRestart(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "restart"
	var c calls
	sub := newSub(t, env, name, nil)
	sub.Handle("paddle.subscription.created", effectHandler(name, &c))
	r := subtest.Start(t, sub)
	env.Publish(t, event(t, "evt_before"))
	eventually(t, func() bool { return sub.Stats().Processed == 1 })

	env.NATS.Stop()
	env.NATS.Start()
	eventually(t, func() bool { return env.NC.IsConnected() && sub.Healthy() == nil })
	env.Publish(t, event(t, "evt_after"))
	eventually(t, func() bool { return sub.Stats().Processed == 2 })
	env.WaitAllAcked(t, name)
	require.Equal(t, 1, effects(t, env, name, "evt_after"))
	require.NoError(t, r.Stop())
}

// A subscriber started before the hub created the stream waits for it
// (unhealthy meanwhile) and consumes once it exists.
func TestWaitsForTheStream(t *testing.T) {
	env := subtest.NewParallel(t)
	ctx := context.Background()
	require.NoError(t, env.JS.DeleteStream(ctx, subtest.Stream))
	const name = "early"
	var c calls
	sub := newSub(t, env, name, nil)
	sub.Handle("paddle.subscription.created", effectHandler(name, &c))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sub.Run(runCtx) }()
	eventually(t, func() bool { err := sub.Healthy(); return err != nil && strings.Contains(err.Error(), "starting") })

	_, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: subtest.Stream, Subjects: []string{"paddle.>", "clerk.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	eventually(t, func() bool { return sub.Healthy() == nil })
	env.Publish(t, event(t, "evt_late"))
	eventually(t, func() bool { return effects(t, env, name, "evt_late") == 1 })
	cancel()
	require.NoError(t, <-done)
}
