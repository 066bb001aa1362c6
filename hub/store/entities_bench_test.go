package store_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

// backendCPU is the CPU time (user + system) Postgres backend pid has
// used, read from /proc (Postgres on this machine).
func backendCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(b, err)
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100) // USER_HZ
}

// selfCPU is this process's CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(b, err)
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	ctx := context.Background()
	var pid int
	require.NoError(b, pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	s := store.New(pool)
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
				ds[i].Entities = []hub.Entity{{Kind: "subscription", ID: fmt.Sprintf("sub_%07d", n%100_000)},
					{Kind: "customer", ID: fmt.Sprintf("ctm_%07d", n%50_000)}, {Kind: "address", ID: fmt.Sprintf("add_%07d", n%50_000)}}
			}
		}
		return ds
	}
	var goCPU, pgCPU [2]time.Duration
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
			g0, p0, t0 := selfCPU(), backendCPU(b, pid), time.Now()
			if _, err := s.Ingest(ctx, ds); err != nil {
				b.Fatal(err)
			}
			wall[k] += time.Since(t0)
			goCPU[k] += selfCPU() - g0
			pgCPU[k] += backendCPU(b, pid) - p0
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N*batch) }
	b.ReportMetric(per(goCPU[0]), "go-µs/delivery")
	b.ReportMetric(per(pgCPU[0]), "pg-µs/delivery")
	b.ReportMetric(per(goCPU[1]), "go-µs/delivery(3-entities)")
	b.ReportMetric(per(pgCPU[1]), "pg-µs/delivery(3-entities)")
	b.ReportMetric(float64(goCPU[1]+pgCPU[1])/float64(goCPU[0]+pgCPU[0]), "cpu-ratio")
	b.ReportMetric(float64(wall[1])/float64(wall[0]), "wall-ratio")
}
