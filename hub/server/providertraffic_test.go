package server_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/server"
)

func TestProviderTrafficBuckets(t *testing.T) {
	t.Parallel()
	tr := server.NewProviderTraffic([]string{"stripe", "paddle", "stripe"})
	now := time.Date(2026, 11, 30, 8, 30, 30, 0, time.UTC)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				tr.Record(now, "paddle", 200, 3*time.Millisecond)
				tr.Record(now, "paddle", 401, time.Millisecond)
				tr.Record(now.Add(-5*time.Minute), "stripe", 503, time.Second)
				tr.Record(now.Add(-5*time.Minute), "stripe", 404, time.Second)
				tr.Record(now, "nosuch", 404, 0)
				tr.Record(now, "paddle", 302, 0)                                // not counted
				tr.Record(now.Add(-24*time.Hour), "paddle", 200, 0)             // a day ago: out of the window
				tr.Record(now.Add(-24*time.Hour+time.Minute), "paddle", 500, 0) // the oldest minute kept
			}
		})
	}
	wg.Wait()

	s := tr.Series(now, time.Hour, 5*time.Minute)
	require.Len(t, s, 3)
	require.Equal(t, []string{"paddle", "stripe", server.UnknownProvider}, []string{s[0].Provider, s[1].Provider, s[2].Provider})
	require.Len(t, s[0].Buckets, 12)
	last := s[0].Buckets[11]
	require.Equal(t, now.Truncate(time.Minute).Add(-4*time.Minute), last.Start, "the last step ends with the current minute")
	require.Equal(t, uint64(800), last.OK)
	require.Equal(t, uint64(800), last.Auth)
	require.Equal(t, uint64(800), last.Failed())
	require.Equal(t, uint64(800), s[0].Sum.OK, "the 500 a day ago is outside the hour")
	require.Equal(t, uint64(800), s[1].Buckets[10].Server)
	require.Equal(t, uint64(800), s[1].Buckets[10].Client)
	require.Zero(t, s[1].Sum.OK)
	_, ok := s[1].Sum.Quantile(0.5)
	require.False(t, ok, "no 2xx: no latency (failures' latency is not kept)")
	require.Equal(t, uint64(800), s[2].Sum.Client)
	p50, ok := last.Quantile(0.5)
	require.True(t, ok)
	require.True(t, p50 >= 2*time.Millisecond && p50 < 4*time.Millisecond, "%s", p50)

	day := tr.Series(now, 24*time.Hour, 20*time.Minute)
	require.Len(t, day[0].Buckets, 72)
	require.Equal(t, uint64(800), day[0].Sum.Server, "the oldest minute kept")
	require.Equal(t, uint64(800), day[0].Buckets[0].Server)

	// Without any unknown request, no unknown series.
	tr2 := server.NewProviderTraffic([]string{"clerk"})
	s2 := tr2.Series(now, 0, 0) // bounded up to one minute
	require.Len(t, s2, 1)
	require.Len(t, s2[0].Buckets, 1)

	// A day on, the ring slots are reused: old counts are gone.
	later := now.Add(24 * time.Hour)
	tr.Record(later, "paddle", 500, 0)
	s = tr.Series(later, 24*time.Hour, time.Hour)
	require.Equal(t, uint64(1), s[0].Sum.Total())
	require.Equal(t, uint64(1), s[0].Buckets[23].Server)
}

func TestLatencyQuantile(t *testing.T) {
	t.Parallel()
	var h [server.LatencyBuckets]uint64
	_, ok := server.LatencyQuantile(h, 0.5)
	require.False(t, ok)
	h[0] = 100 // all under 0.5 ms
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 250 * time.Microsecond}, {1, 500 * time.Microsecond}, {0.01, 5 * time.Microsecond}} {
		got, ok := server.LatencyQuantile(h, tc.q)
		require.True(t, ok)
		require.Equal(t, tc.want, got, "q %v", tc.q)
	}
	h = [server.LatencyBuckets]uint64{}
	h[3] = 99                      // [2 ms, 4 ms)
	h[server.LatencyBuckets-1] = 1 // ≥ 8.192 s
	p99, _ := server.LatencyQuantile(h, 0.99)
	require.Equal(t, 4*time.Millisecond, p99)
	p100, _ := server.LatencyQuantile(h, 1)
	require.Equal(t, server.LatencyBound(server.LatencyBuckets-2), p100, "the open bucket: its lower bound")
	for _, q := range []float64{0, -1, 1.5} {
		_, ok := server.LatencyQuantile(h, q)
		require.False(t, ok)
	}
	// Each bound lands in its own bucket.
	tr := server.NewProviderTraffic([]string{"p"})
	now := time.Now()
	for i := range server.LatencyBuckets - 1 {
		tr.Record(now, "p", 200, server.LatencyBound(i)-1)
	}
	tr.Record(now, "p", 200, time.Hour)
	s := tr.Series(now, time.Minute, time.Minute)
	for i, n := range s[0].Sum.Latency {
		require.Equal(t, uint64(1), n, "bucket %d", i)
	}
}
