package subscriber_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// ReadActivity counts processed rows and dead letters per step of its
// window (and nothing outside it), samples at most SamplesPerStep
// processed rows per step, and says Partial when a table had more rows in
// the window than MaxRows.
func TestReadActivity(t *testing.T) {
	t.Parallel()
	env := subtest.New(t)
	ctx := context.Background()
	const name = "charted"
	require.NoError(t, subscriber.Migrate(ctx, env.Pool, name, nil))
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	until := from.Add(time.Hour)
	step := 20 * time.Minute
	for i, at := range []time.Time{from, from.Add(time.Minute), from.Add(2 * time.Minute), from.Add(50 * time.Minute),
		from.Add(-time.Second), until} { // the last two: outside the window
		_, err := env.Pool.Exec(ctx, `INSERT INTO charted.processed_messages (subscriber, provider, event_id, subject, processed_at, outcome)
			VALUES ($1, 'paddle', $2, 'paddle.x', $3, 'processed')`, name, fmt.Sprint("evt_", i), at)
		require.NoError(t, err)
	}
	for _, at := range []time.Time{from.Add(-time.Hour), from.Add(30 * time.Minute), from.Add(31 * time.Minute)} {
		_, err := env.Pool.Exec(ctx, `INSERT INTO charted.dead_letters (subscriber, provider, event_id, subject, headers, data, error, attempts, created_at)
			VALUES ($1, 'paddle', 'evt_dl', 'paddle.x', '{}', '\x7b7d', 'boom', 1, $2)`, name, at)
		require.NoError(t, err)
	}
	w := subscriber.ActivityWindow{From: from, Until: until, Step: step, MaxRows: 100, SamplesPerStep: 2}
	a, err := subscriber.ReadActivity(ctx, env.Pool, name, w)
	require.NoError(t, err)
	require.False(t, a.Partial)
	require.Equal(t, []subscriber.ActivityBucket{
		{Start: from, Processed: 3},
		{Start: from.Add(step), DeadLettered: 2},
		{Start: from.Add(2 * step), Processed: 1},
	}, a.Buckets)
	require.Len(t, a.Samples, 3, "two of the first step (its newest), one of the last")
	require.Equal(t, "evt_2", a.Samples[0].EventID)
	require.Equal(t, "evt_1", a.Samples[1].EventID)
	require.Equal(t, "evt_3", a.Samples[2].EventID)

	w.MaxRows = 2
	a, err = subscriber.ReadActivity(ctx, env.Pool, name, w)
	require.NoError(t, err)
	require.True(t, a.Partial, "more rows in the window than MaxRows")
	require.Equal(t, []int64{1, 0, 1}, []int64{a.Buckets[0].Processed, a.Buckets[1].Processed, a.Buckets[2].Processed},
		"only the newest two processed rows counted")

	_, err = subscriber.ReadActivity(ctx, env.Pool, "no_such", w)
	require.ErrorIs(t, err, subscriber.ErrUnknownSubscriber)
	_, err = subscriber.ReadActivity(ctx, env.Pool, `bad"name`, w)
	require.ErrorIs(t, err, subscriber.ErrUnknownSubscriber)
	w.Step = 0
	_, err = subscriber.ReadActivity(ctx, env.Pool, name, w)
	require.Error(t, err)
}
