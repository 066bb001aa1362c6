package backoff_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/backoff"
)

func TestExp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		first, max time.Duration
		n          int
		want       time.Duration
	}{
		{100 * time.Millisecond, time.Second, -1, 100 * time.Millisecond},
		{100 * time.Millisecond, time.Second, 0, 100 * time.Millisecond},
		{100 * time.Millisecond, time.Second, 1, 200 * time.Millisecond},
		{100 * time.Millisecond, time.Second, 3, 800 * time.Millisecond},
		{100 * time.Millisecond, time.Second, 4, time.Second},
		{100 * time.Millisecond, time.Second, 1 << 30, time.Second},
		{time.Minute, time.Second, 0, time.Second},
		{time.Duration(1<<62) + 1, time.Duration(1<<63 - 1), 10, time.Duration(1<<63 - 1)},
	}
	for _, c := range cases {
		require.Equal(t, c.want, backoff.Exp(c.first, c.max, c.n), "Exp(%v, %v, %d)", c.first, c.max, c.n)
	}
}

func TestDoubling(t *testing.T) {
	t.Parallel()
	b := backoff.New(250*time.Millisecond, time.Second)
	var got []time.Duration
	for range 5 {
		got = append(got, b.Next())
	}
	require.Equal(t, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second, time.Second}, got)
	b.Reset()
	require.Equal(t, 250*time.Millisecond, b.Next())

	// The first delay is handed out as given, the next ones capped.
	b = backoff.New(time.Second, 300*time.Millisecond)
	require.Equal(t, time.Second, b.Next())
	require.Equal(t, 300*time.Millisecond, b.Next())
}

// Sleep waits exactly d of the bubble's fake time, and ends at once with
// its context, however long d is.
func TestSleep(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		require.NoError(t, backoff.Sleep(context.Background(), time.Hour))
		require.Equal(t, time.Hour, time.Since(start))

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		start = time.Now()
		require.ErrorIs(t, backoff.Sleep(ctx, time.Hour), context.Canceled)
		require.Zero(t, time.Since(start))

		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start = time.Now()
		require.ErrorIs(t, backoff.Sleep(ctx, time.Hour), context.DeadlineExceeded)
		require.Equal(t, time.Minute, time.Since(start), "ended by its context, not by d")
	})
}

func TestJitter(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    time.Duration
		r    float64
		want time.Duration
	}{
		{10 * time.Second, 0, 5 * time.Second},
		{10 * time.Second, 0.5, 7500 * time.Millisecond},
		{10 * time.Second, 0.999999, 9999995 * time.Microsecond},
		{10 * time.Second, 1, 5 * time.Second},
		{10 * time.Second, -0.1, 5 * time.Second},
		{10 * time.Second, math.NaN(), 5 * time.Second},
		{3, 0.9, 2},
		{0, 0.5, 0},
	} {
		require.Equal(t, c.want, backoff.Jitter(c.d, c.r), "Jitter(%v, %v)", c.d, c.r)
	}
}
