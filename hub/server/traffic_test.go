package server_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/server"
)

func TestTrafficMinutes(t *testing.T) {
	tr := server.NewTraffic()
	now := time.Date(2026, 11, 30, 8, 30, 30, 0, time.UTC)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				tr.Record(now, 200)
				tr.Record(now.Add(-time.Minute), 404)
				tr.Record(now.Add(-59*time.Minute), 503)
				tr.Record(now.Add(-60*time.Minute), 200) // an hour ago: out of the window
				tr.Record(now, 302)                      // not counted
			}
		})
	}
	wg.Wait()
	m := tr.Minutes(now)
	require.Len(t, m, server.TrafficMinutes)
	require.Equal(t, now.Truncate(time.Minute), m[59].Start)
	require.Equal(t, server.TrafficMinute{Start: m[59].Start, OK: 800}, m[59])
	require.Equal(t, uint64(800), m[58].ClientErr)
	require.Equal(t, uint64(800), m[0].SrvErr)
	// An hour on, the bucket is reused: old counts are gone.
	later := now.Add(time.Hour)
	tr.Record(later, 500)
	m = tr.Minutes(later)
	require.Equal(t, server.TrafficMinute{Start: later.Truncate(time.Minute), SrvErr: 1}, m[59])
	for _, x := range m[:59] {
		require.Zero(t, x.OK+x.ClientErr+x.SrvErr)
	}
}

func BenchmarkTrafficRecord(b *testing.B) {
	tr := server.NewTraffic()
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tr.Record(now, 200)
		}
	})
}
