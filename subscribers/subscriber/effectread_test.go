package subscriber_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

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
			old := make([]subtest.Message, events)
			for i := range old {
				old[i] = event(t, fmt.Sprintf("old_%d", i))
				env.Publish(t, old[i])
			}
			eventually(t, func() bool { return sub.Stats().Processed == events })
			env.WaitAllAcked(t, name)
			// Interleaved: each copy of a processed event next to a new one.
			for i := range old {
				env.Republish(t, old[i], 1)
				env.Publish(t, event(t, fmt.Sprintf("new_%d", i)))
			}
			eventually(t, func() bool { s := sub.Stats(); return s.Processed == 2*events && s.SkippedDuplicate == events })
			env.WaitAllAcked(t, name)
			require.Zero(t, sub.Stats().Failed)
			for i := range events {
				for _, id := range []string{fmt.Sprintf("old_%d", i), fmt.Sprintf("new_%d", i)} {
					require.Equal(t, 1, c.get(id), id)
					require.Equal(t, 1, effects(t, env, name, id), id)
				}
			}
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
	for i := range events {
		env.Publish(t, event(t, fmt.Sprintf("evt_%d", i)))
	}
	eventually(t, func() bool { return sub.Stats().Failed >= events })
	for i := range events {
		require.Zero(t, c.get(fmt.Sprintf("evt_%d", i)), "an effect ran without its read")
	}
	_, err = env.Pool.Exec(ctx, "ALTER TABLE "+name+".processed_messages_away RENAME TO processed_messages")
	require.NoError(t, err)
	eventually(t, func() bool { return sub.Stats().Processed == events })
	env.WaitAllAcked(t, name)
	require.Zero(t, sub.Stats().DeadLettered)
	for i := range events {
		id := fmt.Sprintf("evt_%d", i)
		require.Equal(t, 1, c.get(id), id)
		require.Equal(t, 1, effects(t, env, name, id), id)
	}
}
