package store

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

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

// spread scrambles n (a SplitMix64 step): distinct n give distinct
// values spread over the whole range.
func spread(n int) uint64 {
	z := uint64(n) + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// backendCPU is the CPU time Postgres backend pid has used, read from
// /proc (Postgres on this machine): its scheduler's run time, in
// nanoseconds (/proc/<pid>/stat counts 10 ms ticks, too coarse for a
// batch of a few milliseconds).
func backendCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	require.NoError(b, err)
	ns, err := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
	require.NoError(b, err)
	return time.Duration(ns)
}

// BenchmarkIngestEntityCost measures what entities add to the ingest
// statement: batches of 64 first deliveries (a 1 KB body) without
// entities and with three, interleaved on one connection, each batch's
// CPU counted for the Go side (this process: encoding, the hub's half) and
// for its Postgres backend (/proc: the statement's execution; the WAL
// writer's and checkpointer's work is not counted). It reports µs per
// delivery of each and the ratio with/without.
//
//	go test -run '^$' -bench IngestEntityCost -benchtime 300x ./hub/store/
func BenchmarkIngestEntityCost(b *testing.B) {
	_, url := hubdb.Pool(b)
	pool := hubtest.NewPoolOf(b, url, 1)
	ctx := context.Background()
	var pid int
	require.NoError(b, pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	s := New(pool)
	body := `{"event_id":"%s","event_type":"subscription.updated","occurred_at":"2026-11-30T08:00:00Z","data":{"id":"sub_01hv8x","status":"active","customer_id":"ctm_01hv8y","address_id":"add_01hv8z","business_id":null,"currency_code":"USD","items":[{"status":"active","quantity":1,"recurring":true,"price":{"id":"pri_01gsz8x8sawmvhz1pv30nge1ke","description":"Monthly","product_id":"pro_01gsz4t5hdjse780zja8vvr7jg","billing_cycle":{"interval":"month","frequency":1},"unit_price":{"amount":"3000","currency_code":"USD"}}}],"custom_data":{"plan":"pro"},"collection_mode":"automatic","current_billing_period":{"starts_at":"2026-11-30T08:00:00Z","ends_at":"2026-12-30T08:00:00Z"}},"notification_id":"ntf_01hv8x"}`
	const batch = 64
	n := 0
	mk := func(entities bool) []hub.Delivery {
		ds := make([]hub.Delivery, batch)
		for i := range ds {
			n++
			id := fmt.Sprintf("evt_cost_%09d", n)
			ds[i] = hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: id, EventType: "subscription.updated",
				Body: []byte(fmt.Sprintf(body, id)), Signature: "ts=1;h1=" + strings.Repeat("ab", 32), ReceivedAt: time.Now()}
			if entities {
				// Ids spread over the key space, as providers' are (a
				// counter's would land next to each other in the index).
				ds[i].Entities = []hub.Entity{{Kind: "subscription", ID: fmt.Sprintf("sub_%016x", spread(n%100_000))},
					{Kind: "customer", ID: fmt.Sprintf("ctm_%016x", spread(n%50_000))}, {Kind: "address", ID: fmt.Sprintf("add_%016x", spread(n%50_000+1<<40))}}
			}
		}
		return ds
	}
	var goUsed, pgUsed [2]time.Duration
	var wall [2]time.Duration
	for range 20 { // warm-up: plans, caches
		for _, with := range []bool{false, true} {
			_, err := s.Ingest(ctx, mk(with))
			require.NoError(b, err)
		}
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for _, k := range []int{i % 2, 1 - i%2} { // alternate which goes first
			ds := mk(k == 1)
			g0, p0, t0 := goCPU(), backendCPU(b, pid), time.Now()
			if _, err := s.Ingest(ctx, ds); err != nil {
				b.Fatal(err)
			}
			wall[k] += time.Since(t0)
			goUsed[k] += goCPU() - g0
			pgUsed[k] += backendCPU(b, pid) - p0
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N*batch) }
	b.ReportMetric(per(goUsed[0]), "go-µs/delivery")
	b.ReportMetric(per(pgUsed[0]), "pg-µs/delivery")
	b.ReportMetric(per(goUsed[1]), "go-µs/delivery(3-entities)")
	b.ReportMetric(per(pgUsed[1]), "pg-µs/delivery(3-entities)")
	b.ReportMetric(float64(goUsed[1]+pgUsed[1])/float64(goUsed[0]+pgUsed[0]), "cpu-ratio")
	b.ReportMetric(float64(wall[1])/float64(wall[0]), "wall-ratio")
}
