package ops_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Real subscribers behind a real hub: the flaky one dead-letters half the
// events, credits processes all of them, and a destination records HTTP
// attempts. The charts count each per bucket, measure latency from the
// hub's acceptance, and put the one with failures first.
func TestProcessingCharts(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	const events = 10
	s.halfDeadLettered(events)
	ctx := context.Background()
	require.NoError(t, subscriber.Migrate(ctx, s.Pool(), "webhooks_out", destination.Migrations("webhooks_out")))
	now := time.Now()
	for i, st := range []int{200, 200, 503} {
		outcome := deststate.OutcomeDelivered
		if st != 200 {
			outcome = deststate.OutcomeFailed
		}
		require.NoError(t, deststate.RecordAttempt(ctx, s.Pool(), deststate.Attempt{Destination: "webhooks_out", Provider: "paddle",
			EventID: fmt.Sprint("evt_ops_", i), At: now, Status: st, Latency: time.Duration(i+1) * 10 * time.Millisecond, Outcome: outcome}))
	}

	pc, err := s.ops.ProcessingCharts(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, time.Minute, pc.Step)
	require.Equal(t, time.Hour, pc.Until.Sub(pc.From))
	require.Zero(t, pc.More)
	names := []string{}
	for _, c := range pc.Subscribers {
		names = append(names, c.Name)
		require.Len(t, c.Buckets, 60, c.Name)
		require.False(t, c.Partial)
	}
	require.Equal(t, []string{"flaky", "webhooks_out", "credits"}, names, "the most failures first, then by name")
	flaky, out, credits := pc.Subscribers[0], pc.Subscribers[1], pc.Subscribers[2]
	require.Equal(t, int64(events/2), flaky.Processed)
	require.Equal(t, int64(events/2), flaky.DeadLettered)
	require.False(t, flaky.Destination)
	require.Equal(t, int64(events), credits.Processed)
	require.Zero(t, credits.DeadLettered)
	require.Equal(t, events, credits.Samples, "every processed event sampled (fewer than the per-step bound)")
	require.Positive(t, credits.P50)
	require.Less(t, credits.P99, time.Minute, "processed within seconds of the hub's acceptance")
	require.LessOrEqual(t, credits.P50, credits.P99)
	var bucketSum int64
	for _, b := range credits.Buckets {
		bucketSum += b.Processed
	}
	require.Equal(t, int64(events), bucketSum)

	require.True(t, out.Destination)
	require.Equal(t, int64(3), out.Attempts)
	require.Equal(t, int64(1), out.FailedAttempts)
	last := out.Buckets[len(out.Buckets)-1]
	require.Equal(t, int64(3), last.Attempts)
	require.Equal(t, 20*time.Millisecond, last.AttemptP50)
	require.InDelta(t, float64(30*time.Millisecond), float64(last.AttemptP99), float64(time.Millisecond))

	day, err := s.ops.ProcessingCharts(ctx, 24)
	require.NoError(t, err)
	require.Equal(t, 20*time.Minute, day.Step)
	require.Len(t, day.Subscribers[0].Buckets, 72)
	require.Equal(t, int64(events/2), day.Subscribers[0].DeadLettered)

	for _, h := range []int{0, -1, 25} {
		_, err := s.ops.ProcessingCharts(ctx, h)
		var input *ops.InputError
		require.ErrorAs(t, err, &input, "hours %d", h)
		require.Equal(t, "hours", input.Field)
	}
}

// Many subscribers: the chart keeps MaxChartSubscribers and counts the
// others; none has data, and nothing is NaN or partial.
func TestProcessingChartsBounded(t *testing.T) {
	ctx, pool, o := newDBOps(t)
	// Setup: the subscribers' tables, created side by side (each schema
	// has its own migration lock).
	errs := make([]error, ops.MaxChartSubscribers+2)
	slots := make(chan struct{}, hubtest.PoolMaxConns)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			errs[i] = subscriber.Migrate(ctx, pool, fmt.Sprintf("sub_%02d", i), nil)
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	pc, err := o.ProcessingCharts(ctx, 6)
	require.NoError(t, err)
	require.Len(t, pc.Subscribers, ops.MaxChartSubscribers)
	require.Equal(t, 2, pc.More)
	require.Equal(t, "sub_00", pc.Subscribers[0].Name)
	require.Len(t, pc.Subscribers[0].Buckets, 72)
	require.Zero(t, pc.Subscribers[0].Samples)
}

func TestChartHours(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{{"", 1, true}, {"1", 1, true}, {"6h", 6, true}, {"24", 24, true}, {"0", 0, false}, {"25", 0, false},
		{"-1", 0, false}, {"1.5", 0, false}, {"abc", 0, false}, {"99999999999999999999", 0, false}} {
		got, err := ops.ChartHours(tc.in)
		if !tc.ok {
			require.ErrorIs(t, err, ops.ErrInvalid, tc.in)
			require.Contains(t, err.Error(), "from 1 to 24")
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
	require.Equal(t, time.Minute, ops.ChartStep(1))
	require.Equal(t, 5*time.Minute, ops.ChartStep(6))
	require.Equal(t, 20*time.Minute, ops.ChartStep(24))
	from, until, step := ops.ChartWindow(time.Date(2026, 1, 1, 10, 30, 45, 0, time.UTC), 6)
	require.Equal(t, time.Date(2026, 1, 1, 10, 31, 0, 0, time.UTC), until)
	require.Equal(t, 6*time.Hour, until.Sub(from))
	require.Equal(t, 5*time.Minute, step)
}

// Any text as the hours of a chart: a span within the bounds, or an
// InputError on "hours" with a bounded message; never a panic.
func FuzzChartHours(f *testing.F) {
	for _, s := range []string{"", "1", "6h", "24", "0", "25", "-1", "1e3", "٣", "9999999999999999999999", "1h1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ops.ChartHours(s)
		if err != nil {
			var input *ops.InputError
			require.ErrorAs(t, err, &input)
			require.Equal(t, "hours", input.Field)
			require.Less(t, len(err.Error()), 200)
			return
		}
		require.True(t, h >= 1 && h <= ops.MaxChartHours, "%q: %d", s, h)
		from, until, step := ops.ChartWindow(time.Now(), h)
		require.LessOrEqual(t, int(until.Sub(from)/step), ops.MaxChartSteps)
	})
}
