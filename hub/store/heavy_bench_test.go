package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// BenchmarkHeavyBody: small deliveries at a fixed rate (200/s, open loop,
// through the hub's default group commit: batches of up to 64, one
// committer) for 5 s, and the p99 of their commits from the time each
// was due: quiet, then with a heavy body (100,000 tiny JSON objects,
// 1.2 MB) ingested every 250 ms, committed alone (today) and sharing the
// batches (before). alone_x and shared_x are the p99s over the quiet one.
// Run it once: go test -run XXX -bench HeavyBody -benchtime 1x ./hub/store/
func BenchmarkHeavyBody(b *testing.B) {
	pool, _ := hubdb.Pool(b)
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
	small := []byte(`{"id":"evt","data":{"customer_id":"cus_1","items":[{"price":1}]}}`)
	seq := 0
	run := func(withHeavy, shared bool, d time.Duration) time.Duration {
		g := New(pool).GroupCommitter(64, 1, 30*time.Second)
		g.shareHeavy = shared
		if err := g.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = g.Stop(context.Background()) }()
		ingest := func(body []byte) func() func() error {
			return func() func() error {
				seq++
				d := hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: fmt.Sprintf("evt_%d_%d", time.Now().UnixNano(), seq),
					EventType: "subscription.created", Body: body, ReceivedAt: time.Now()}
				return func() error {
					_, err := g.Ingest(context.Background(), []hub.Delivery{d})
					return err
				}
			}
		}
		var heavyReq func() func() error
		if withHeavy {
			heavyReq = ingest(heavy)
		}
		lat, err := hubtest.FixedRate(d, 5*time.Millisecond, 250*time.Millisecond, ingest(small), heavyReq)
		if err != nil {
			b.Fatal(err)
		}
		return hubtest.Percentile(lat, 0.99)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for b.Loop() {
		run(false, false, time.Second) // warm up: connections, caches
		quiet := run(false, false, 5*time.Second)
		alone := run(true, false, 5*time.Second)
		shared := run(true, true, 5*time.Second)
		b.ReportMetric(ms(quiet), "quiet_p99_ms")
		b.ReportMetric(ms(alone), "alone_p99_ms")
		b.ReportMetric(ms(shared), "shared_p99_ms")
		b.ReportMetric(float64(alone)/float64(quiet), "alone_x")
		b.ReportMetric(float64(shared)/float64(quiet), "shared_x")
	}
}
