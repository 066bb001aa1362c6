package bench

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
)

// The purge bench end to end on a small archive: every filled row is
// purged while the load runs, the filled events' dedup rows stay, no
// live delivery is lost, and each phase has its figures.
func TestPurgeBench(t *testing.T) {
	hubtest.Soak(t) // a hub binary, a filled database and a purge
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bin := buildHub(t)
	hubtest.Slot(t)
	rep, err := Purge(context.Background(), PurgeConfig{
		AdminURL: hubtest.AdminURL(), HubCommand: []string{bin}, Rows: 3000, Duplicates: 0.1,
		Rate: 100, Clients: 4, Warmup: 500 * time.Millisecond, Before: time.Second, After: time.Second,
		PurgeArgs: []string{"--batch", "500"}, MaxPurge: time.Minute,
	})
	require.NoError(t, err)
	require.EqualValues(t, 3000, rep.Deleted)
	require.GreaterOrEqual(t, rep.Batches, 6)
	require.True(t, rep.DedupKept)
	require.Zero(t, rep.LiveLost)
	require.Greater(t, rep.FillSeconds, 0.0)
	require.Greater(t, rep.RowsPerSec, 0.0)
	for _, p := range []PurgePhase{rep.Before, rep.During, rep.After} {
		require.Positive(t, p.Deliveries)
		require.Positive(t, p.PerSecond)
		require.Zero(t, p.Non2xx)
		require.Positive(t, p.P99ms)
	}
	require.Positive(t, rep.During.WALMB)
	require.EqualValues(t, 3000, rep.During.DeadTuples, "the purged rows, dead until vacuumed")
	require.NotEmpty(t, rep.Windows)
}

// A phase counts the deliveries due in it, each latency from its due
// time to its answer, and for the rate the answers received in it.
func TestLiveLoadPhase(t *testing.T) {
	start := time.Unix(100, 0)
	l := &liveLoad{start: start, interval: 100 * time.Millisecond, done: make([]atomic.Int64, 5)}
	at := func(ms int) int64 { return start.Add(time.Duration(ms) * time.Millisecond).UnixNano() }
	l.done[0].Store(at(50))  // due at 0: 50 ms
	l.done[1].Store(-1)      // due at 100: refused
	l.done[3].Store(at(500)) // due at 300: 200 ms; 2 was not answered
	l.sent.Store(4)          // 4 was never made
	first := l.phase(start, start.Add(250*time.Millisecond))
	require.Equal(t, PhaseLoad{Seconds: 0.25, Deliveries: 3, PerSecond: 4, Non2xx: 1, Unanswered: 1, P50ms: 50, P99ms: 50, MaxMs: 50}, first)
	second := l.phase(start.Add(250*time.Millisecond), start.Add(time.Second))
	require.Equal(t, 1, second.Deliveries)
	require.InDelta(t, 1/0.75, second.PerSecond, 1e-9)
	require.Equal(t, 200.0, second.P99ms)
	require.Len(t, l.windows(start, start.Add(time.Second), 300*time.Millisecond), 4, "the last window is cut at the end")
}
