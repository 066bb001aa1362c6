package subscriber_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// effectRecord is what the test effects return: one effects row.
type effectRecord struct{ provider, eventID, subject string }

// recordEffects writes a batch of effectRecords with one INSERT.
func recordEffects(name string) func(ctx context.Context, tx pgx.Tx, records []any) error {
	return func(ctx context.Context, tx pgx.Tx, records []any) error {
		var p, e, s []string
		for _, r := range records {
			rec := r.(effectRecord)
			p, e, s = append(p, rec.provider), append(e, rec.eventID), append(s, rec.subject)
		}
		_, err := tx.Exec(ctx, "INSERT INTO "+name+".effects (provider, event_id, subject) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])", p, e, s)
		return err
	}
}

// countingEffect counts its calls and returns the event's record.
func countingEffect(c *calls) subscriber.EffectFunc {
	return func(_ context.Context, ev subscriber.Event) (any, error) {
		c.add(ev.EventID)
		return effectRecord{ev.Provider, ev.EventID, ev.Subject}, nil
	}
}

// Every event delivered ten times (re-publications, a rewind, once the
// first delivery was recorded): the effect runs once per event, duplicates are skipped without calling it, and the
// processed rows were written in batches of more than one event.
func TestEffectOnceInBatches(t *testing.T) {
	env := subtest.NewParallel(t)
	const name, events = "effect_once", 40
	const together = 16 // the first calls wait for one another, so they finish together
	var c calls
	var started atomic.Int32
	all := make(chan struct{})
	sub := newSub(t, env, name, func(cfg *subscriber.Config) {
		cfg.Concurrency = together
		cfg.RecordBatch = recordEffects(name)
	})
	count := countingEffect(&c)
	sub.HandleEffect("paddle.subscription.created", func(ctx context.Context, ev subscriber.Event) (any, error) {
		if n := started.Add(1); n == together {
			close(all)
		} else if n < together {
			select {
			case <-all:
			case <-time.After(subtest.Timeout):
			}
		}
		return count(ctx, ev)
	})
	subtest.Start(t, sub)

	msgs := publishEvents(t, env, "evt", events)
	eventually(t, func() bool { return sub.Stats().Processed == events })
	env.WaitAllAcked(t, name)
	// The copies come once the events are recorded: copies handled at the
	// same time as the first would each run the effect (at least once).
	for _, m := range msgs {
		env.Republish(t, m, 4)
	}
	eventually(t, func() bool { return sub.Stats().SkippedDuplicate == 4*events })
	env.WaitAllAcked(t, name)
	env.Rewind(t, name)
	eventually(t, func() bool { return sub.Stats().SkippedDuplicate == 9*events })
	env.WaitAllAcked(t, name)

	s := sub.Stats()
	require.EqualValues(t, events, s.Processed)
	require.EqualValues(t, 9*events, s.SkippedDuplicate)
	require.Zero(t, s.Failed)
	requireOnce(t, env, name, &c, msgs)
	require.Equal(t, events, env.Count(t, "SELECT count(*) FROM "+name+".processed_messages WHERE outcome = 'processed'"))
	// A batch's rows share their processed_at.
	largest := env.Count(t, "SELECT max(n) FROM (SELECT count(*) AS n FROM "+name+".processed_messages GROUP BY processed_at) b")
	require.Greater(t, largest, 1, "no batch held more than one event")
}

// An effect's errors follow a handler's rules.
func TestEffectErrors(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	cases := []struct {
		name string
		// fail returns the error of the n-th call (1-based), nil for success.
		fail         func(n int) error
		panics       bool
		calls        int
		dead         bool
		processed    int
		stale        int
		dlErrorHas   string
		attemptsLeft int
	}{
		{name: "retry_after", fail: func(n int) error {
			if n <= 4 { // past MaxDeliver (3): RetryAfter is not counted
				return subscriber.RetryAfter(20*time.Millisecond, errBoom)
			}
			return nil
		}, calls: 5, processed: 1},
		{name: "permanent", fail: func(int) error { return subscriber.Permanent(errBoom) }, calls: 1, dead: true, dlErrorHas: "boom"},
		{name: "max_deliver", fail: func(int) error { return errBoom }, calls: 3, dead: true, dlErrorHas: "boom"},
		{name: "panic", panics: true, calls: 3, dead: true, dlErrorHas: "panic"},
		{name: "stale", fail: func(int) error { return fmt.Errorf("old: %w", subscriber.ErrStale) }, calls: 1, stale: 1},
		{name: "fails_once", fail: func(n int) error {
			if n == 1 {
				return errBoom
			}
			return nil
		}, calls: 2, processed: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := subtest.New(t)
			name := "effect_" + tc.name
			var c calls
			sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.RecordBatch = recordEffects(name) })
			sub.HandleEffect("paddle.subscription.created", func(_ context.Context, ev subscriber.Event) (any, error) {
				n := c.add(ev.EventID)
				if tc.panics {
					panic("effect exploded")
				}
				if err := tc.fail(n); err != nil {
					return nil, err
				}
				return effectRecord{ev.Provider, ev.EventID, ev.Subject}, nil
			})
			subtest.Start(t, sub)
			m := event(t, "evt_1")
			env.Publish(t, m)
			eventually(t, func() bool {
				s := sub.Stats()
				return s.Processed+s.SkippedStale+s.DeadLettered == 1
			})
			env.WaitAllAcked(t, name)
			s := sub.Stats()
			require.Equal(t, tc.calls, c.get(m.EventID))
			require.EqualValues(t, tc.processed, s.Processed)
			require.EqualValues(t, tc.stale, s.SkippedStale)
			require.Equal(t, tc.processed, effects(t, env, name, m.EventID))
			dls, err := subscriber.ListDeadLetters(context.Background(), env.Pool, name)
			require.NoError(t, err)
			if tc.dead {
				require.Len(t, dls, 1)
				require.Contains(t, dls[0].Error, tc.dlErrorHas)
				require.Zero(t, env.Count(t, "SELECT count(*) FROM "+name+".processed_messages"))
			} else {
				require.Empty(t, dls)
				require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM "+name+".processed_messages"))
			}
			if tc.stale > 0 {
				require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM "+name+".processed_messages WHERE outcome = 'skipped_stale'"))
			}
			if tc.panics {
				require.EqualValues(t, tc.calls, s.Panics)
			}
			require.Zero(t, env.Count(t, "SELECT count(*) FROM "+name+".handler_attempts WHERE unfinished > 0"), "every call returned")
		})
	}
}

// An event whose earlier calls never returned (counted in
// handler_attempts, as a crashed process leaves them) is dead-lettered on
// its redelivery without calling the effect.
func TestEffectCrashLoop(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "effect_crash"
	var c calls
	sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.RecordBatch = recordEffects(name) })
	sub.HandleEffect("paddle.subscription.created", func(_ context.Context, ev subscriber.Event) (any, error) {
		c.add(ev.EventID)
		return nil, errors.New("down") // the first delivery fails: the next is a redelivery
	})
	subtest.Start(t, sub)
	m := event(t, "evt_crash")
	// MaxDeliver 3: crashLimit 2 unfinished calls.
	_, err := env.Pool.Exec(context.Background(), "INSERT INTO "+name+".handler_attempts (provider, event_id, unfinished, last_started_at) VALUES ($1, $2, 2, now())", m.Provider, m.EventID)
	require.NoError(t, err)
	env.Publish(t, m)
	eventually(t, func() bool { return sub.Stats().DeadLettered == 1 })
	require.Equal(t, 1, c.get(m.EventID), "the redelivery did not call the effect")
	require.EqualValues(t, 1, sub.Stats().CrashLoops)
	dls, err := subscriber.ListDeadLetters(context.Background(), env.Pool, name)
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Contains(t, dls[0].Error, "the handler may crash the process")
}

// A batch whose transaction fails (its records refused) is retried: the
// events are naked, their effects run again, and they are processed later.
func TestEffectBatchCommitFails(t *testing.T) {
	env := subtest.NewParallel(t)
	const name, events = "effect_commit", 8
	var c calls
	var failures atomic.Int32
	record := recordEffects(name)
	sub := newSub(t, env, name, func(cfg *subscriber.Config) {
		cfg.RecordBatch = func(ctx context.Context, tx pgx.Tx, records []any) error {
			if failures.Add(1) <= 2 {
				return errors.New("disk full")
			}
			return record(ctx, tx, records)
		}
	})
	sub.HandleEffect("paddle.subscription.created", countingEffect(&c))
	subtest.Start(t, sub)
	publishEvents(t, env, "evt", events)
	eventually(t, func() bool { return sub.Stats().Processed == events })
	env.WaitAllAcked(t, name)
	s := sub.Stats()
	require.NotZero(t, s.Failed)
	require.Zero(t, s.DeadLettered, "a failed batch is never dead-lettered")
	again := 0
	for i := range events {
		id := fmt.Sprintf("evt_%d", i)
		require.Equal(t, 1, effects(t, env, name, id), id)
		if c.get(id) > 1 {
			again++
		}
	}
	require.NotZero(t, again, "the failed batch's effects ran again")
	require.Equal(t, events, env.Count(t, "SELECT count(*) FROM "+name+".processed_messages"))
	require.Zero(t, env.Count(t, "SELECT count(*) FROM "+name+".handler_attempts WHERE unfinished > 0"))
}

// Run returns only once the events whose effect succeeded are recorded
// and acked: the committer flushes its queue on shutdown.
func TestEffectShutdownFlushes(t *testing.T) {
	env := subtest.NewParallel(t)
	const name, events = "effect_flush", 12
	var c calls
	entered, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	record := recordEffects(name)
	sub := newSub(t, env, name, func(cfg *subscriber.Config) {
		cfg.RecordBatch = func(ctx context.Context, tx pgx.Tx, records []any) error {
			if first.CompareAndSwap(false, true) {
				close(entered)
				<-release
			}
			return record(ctx, tx, records)
		}
	})
	var called atomic.Int32
	sub.HandleEffect("paddle.subscription.created", func(ctx context.Context, ev subscriber.Event) (any, error) {
		called.Add(1)
		return countingEffect(&c)(ctx, ev)
	})
	r := subtest.Start(t, sub)
	publishEvents(t, env, "evt", events)
	<-entered
	// The first batch is held; the other effects queue behind it.
	eventually(t, func() bool { return called.Load() == events })
	stopped := make(chan error, 1)
	go func() { stopped <- r.Stop() }()
	require.Equal(t, int32(events), called.Load())
	close(release)
	require.NoError(t, <-stopped)
	require.EqualValues(t, events, sub.Stats().Processed)
	require.Equal(t, events, env.Count(t, "SELECT count(*) FROM "+name+".processed_messages"))
	require.Equal(t, events, env.Count(t, "SELECT count(*) FROM "+name+".effects"))
	require.Zero(t, env.ConsumerInfo(t, name).NumAckPending, "every event acked before Run returned")
}

// A dead letter of an effect's subject is redriven through the effect:
// processed and redriven in one transaction, with its record.
func TestEffectRedrive(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "effect_redrive"
	var c calls
	var fixed atomic.Bool
	sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.RecordBatch = recordEffects(name) })
	sub.HandleEffect("paddle.subscription.created", func(_ context.Context, ev subscriber.Event) (any, error) {
		c.add(ev.EventID)
		if !fixed.Load() {
			return nil, subscriber.Permanent(errors.New("receiver refuses"))
		}
		return effectRecord{ev.Provider, ev.EventID, ev.Subject}, nil
	})
	subtest.Start(t, sub)
	m := event(t, "evt_redrive")
	env.Publish(t, m)
	eventually(t, func() bool { return sub.Stats().DeadLettered == 1 })
	dls, err := subscriber.ListDeadLetters(context.Background(), env.Pool, name)
	require.NoError(t, err)
	require.Len(t, dls, 1)
	fixed.Store(true)
	_, err = subscriber.RequestRedrive(context.Background(), env.Pool, name, dls[0].ID)
	require.NoError(t, err)
	eventually(t, func() bool { return sub.Stats().Redriven == 1 })
	require.Equal(t, 2, c.get(m.EventID))
	require.Equal(t, 1, effects(t, env, name, m.EventID))
	require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM "+name+".processed_messages WHERE dead_letter_id = $1", dls[0].ID))
}

// Copies of processed events and new events arriving together: the
// "processed already?" reads that serve many workers at once (the group
// reader) answer each event right, so every new event's effect runs once
// and no copy's runs, with many workers and with one (no waiting).
func TestEffectReadsAnswerEachEvent(t *testing.T) {
	for _, tc := range []struct {
		name        string
		concurrency int
	}{
		{"many_workers", 16},
		{"one_worker", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := subtest.NewParallel(t)
			name := "effect_reads_" + tc.name
			const events = 24
			var c calls
			sub := newSub(t, env, name, func(cfg *subscriber.Config) {
				cfg.Concurrency = tc.concurrency
				cfg.RecordBatch = recordEffects(name)
			})
			sub.HandleEffect("paddle.subscription.created", countingEffect(&c))
			subtest.Start(t, sub)
			old := publishEvents(t, env, "old", events)
			eventually(t, func() bool { return sub.Stats().Processed == events })
			env.WaitAllAcked(t, name)
			// Interleaved: each copy of a processed event next to a new one.
			fresh := make([]subtest.Message, events)
			for i := range old {
				env.Republish(t, old[i], 1)
				fresh[i] = event(t, fmt.Sprintf("new_%d", i))
				env.Publish(t, fresh[i])
			}
			eventually(t, func() bool { s := sub.Stats(); return s.Processed == 2*events && s.SkippedDuplicate == events })
			env.WaitAllAcked(t, name)
			require.Zero(t, sub.Stats().Failed)
			requireOnce(t, env, name, &c, old)
			requireOnce(t, env, name, &c, fresh)
		})
	}
}

// While the "processed already?" read fails (the table is gone), no
// effect runs: the events are retried with the backoff, never
// dead-lettered, and once the read works each effect runs once.
func TestEffectReadFails(t *testing.T) {
	env := subtest.NewParallel(t)
	const name, events = "effect_read_fails", 8
	var c calls
	sub := newSub(t, env, name, func(cfg *subscriber.Config) {
		cfg.Concurrency = 4
		cfg.RecordBatch = recordEffects(name)
	})
	sub.HandleEffect("paddle.subscription.created", countingEffect(&c))
	subtest.Start(t, sub)
	ctx := context.Background()
	eventually(t, func() bool {
		return env.Count(t, "SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = 'processed_messages'", name) == 1
	})
	_, err := env.Pool.Exec(ctx, "ALTER TABLE "+name+".processed_messages RENAME TO processed_messages_away")
	require.NoError(t, err)
	msgs := publishEvents(t, env, "evt", events)
	eventually(t, func() bool { return sub.Stats().Failed >= events })
	for _, m := range msgs {
		require.Zero(t, c.get(m.EventID), "an effect ran without its read")
	}
	_, err = env.Pool.Exec(ctx, "ALTER TABLE "+name+".processed_messages_away RENAME TO processed_messages")
	require.NoError(t, err)
	eventually(t, func() bool { return sub.Stats().Processed == events })
	env.WaitAllAcked(t, name)
	require.Zero(t, sub.Stats().DeadLettered)
	requireOnce(t, env, name, &c, msgs)
}
