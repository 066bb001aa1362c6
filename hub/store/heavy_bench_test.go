package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// BenchmarkHeavyBody: small deliveries at a fixed rate (200/s, the hub's
// default group commit: batches of up to 64, one committer) for 5 s, and
// the p99 of their commits: quiet, then with a heavy body (100,000 tiny
// JSON objects, 1.2 MB) ingested every 250 ms, committed alone (today)
// and sharing the batches (before). alone_x and shared_x are the p99s
// over the quiet one. Run it once: go test -run XXX -bench HeavyBody
// -benchtime 1x ./hub/store/
func BenchmarkHeavyBody(b *testing.B) {
	pool, _ := hubtest.Pool(b)
	var heavyJSON strings.Builder
	heavyJSON.WriteByte('[')
	for i := range 100_000 {
		if i > 0 {
			heavyJSON.WriteByte(',')
		}
		fmt.Fprintf(&heavyJSON, `{"i":%d}`, i)
	}
	heavyJSON.WriteByte(']')
	heavy := []byte(heavyJSON.String())
	var seq int
	next := func(body []byte) hub.Delivery {
		seq++
		return hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: fmt.Sprintf("evt_%d_%d", time.Now().UnixNano(), seq),
			EventType: "subscription.created", Body: body, ReceivedAt: time.Now()}
	}
	run := func(withHeavy, shared bool, d time.Duration) (p50, p99 time.Duration) {
		g := New(pool).GroupCommitter(64, 1, 30*time.Second)
		g.shareHeavy = shared
		if err := g.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = g.Stop(context.Background()) }()
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		small := time.NewTicker(5 * time.Millisecond)
		defer small.Stop()
		big := time.NewTicker(250 * time.Millisecond)
		defer big.Stop()
		end := time.After(d)
	loop:
		for {
			select {
			case <-small.C:
				d := next([]byte(`{"id":"evt","data":{"customer_id":"cus_1","items":[{"price":1}]}}`))
				wg.Go(func() {
					start := time.Now()
					if _, err := g.Ingest(context.Background(), []hub.Delivery{d}); err != nil {
						b.Error(err)
					}
					mu.Lock()
					lat = append(lat, time.Since(start))
					mu.Unlock()
				})
			case <-big.C:
				if withHeavy {
					d := next(heavy)
					wg.Go(func() {
						if _, err := g.Ingest(context.Background(), []hub.Delivery{d}); err != nil {
							b.Error(err)
						}
					})
				}
			case <-end:
				break loop
			}
		}
		wg.Wait()
		slices.Sort(lat)
		return lat[len(lat)/2], lat[len(lat)*99/100]
	}
	for b.Loop() {
		run(false, false, time.Second) // warm up: connections, caches
		_, quiet := run(false, false, 5*time.Second)
		_, alone := run(true, false, 5*time.Second)
		_, shared := run(true, true, 5*time.Second)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(quiet), "quiet_p99_ms")
		b.ReportMetric(ms(alone), "alone_p99_ms")
		b.ReportMetric(ms(shared), "shared_p99_ms")
		b.ReportMetric(float64(alone)/float64(quiet), "alone_x")
		b.ReportMetric(float64(shared)/float64(quiet), "shared_x")
	}
}
