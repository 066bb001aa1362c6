package ops_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Figures of BenchmarkReadsBesideIngest: webhooks arrive at
// benchRate a second for benchPhase, first alone, then while
// benchSessions read-only sessions loop the most expensive reads (an
// admin replay starts in the middle of it), benchRounds times, after an unmeasured warm-up phase.
const (
	benchRate     = 200
	benchPhase    = 10 * time.Second
	benchSessions = 8
	benchArchive  = 30_000 // archive rows over the last 7 days, 2 KB bodies
	benchRounds   = 3
)

// BenchmarkReadsBesideIngest measures what read-only sessions cost
// ingest: the p99 latency of webhooks at a fixed rate alone and beside 8
// sessions looping payload filters over 7 days, bulk plans, replay dry
// runs, audit exports and charts through one Ops (one admission), and
// whether an admin replay started meanwhile is admitted at once. Run it
// once: go test -run '^$' -bench BenchmarkReadsBesideIngest -benchtime 1x ./hub/ops/
func BenchmarkReadsBesideIngest(b *testing.B) {
	h := testhub.New(b, service.Deps{}, func(c *service.Config) { c.SetSecrets("paddle", paddleSecret) })
	ctx := context.Background()
	pool, js := h.Pool(), h.JetStream()
	st := store.New(pool)
	r, err := relay.New(st, js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: 2 * time.Minute})
	require.NoError(b, err)
	o := ops.New(ops.Config{Archive: st, Subscribers: pool, JetStream: js, Stream: schema.DefaultStream, Republisher: r, ReadBudget: benchBudget()})
	require.NoError(b, subscriber.Migrate(ctx, pool, "benchsub", nil))
	_, err = js.CreateConsumer(ctx, schema.DefaultStream, jetstream.ConsumerConfig{Durable: "benchsub",
		FilterSubjects: []string{"paddle.>"}, AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(b, err)
	preloadArchive(b, st, benchArchive)
	// Settle what the preload left (autovacuum, a cold cache) and warm
	// the hub before anything is measured: else the first phase, alone,
	// paid for it.
	_, err = pool.Exec(ctx, "VACUUM ANALYZE")
	require.NoError(b, err)
	start := time.Now()
	ingestAtRate(b, h, "warmup")

	for b.Loop() {
		// Alone and beside the reads, interleaved: the machine's
		// other load weighs on both alike.
		var alone, reads []time.Duration
		var done, refused, failed atomic.Int64
		var replays []string
		admitted := true
		for round := range benchRounds {
			alone = append(alone, ingestAtRate(b, h, fmt.Sprint("alone", round))...)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for i := range benchSessions {
				wg.Go(func() { readLoop(o, start, i, stop, &done, &refused, &failed) })
			}
			replayed := make(chan error, 1)
			go func() {
				time.Sleep(benchPhase / 2)
				t0 := time.Now()
				// The last two seconds' events (about 400): the action's own
				// load is not what is measured.
				_, err := o.Replay(ctx, ops.ReplayRequest{Subscriber: "benchsub", Since: time.Now().Add(-2 * time.Second), Wait: time.Second})
				replays = append(replays, fmt.Sprintf("took %s, err %v", time.Since(t0).Round(time.Millisecond), err))
				replayed <- err
			}()
			reads = append(reads, ingestAtRate(b, h, fmt.Sprint("reads", round))...)
			close(stop)
			wg.Wait()
			if err := <-replayed; errors.Is(err, ops.ErrBusy) {
				admitted = false
			}
		}
		pa, pr := p99(alone), p99(reads)
		ratio := float64(pr) / float64(pa)
		b.ReportMetric(float64(pa.Microseconds())/1000, "p99-alone-ms")
		b.ReportMetric(float64(pr.Microseconds())/1000, "p99-reads-ms")
		b.ReportMetric(ratio, "p99-ratio")
		b.ReportMetric(float64(done.Load()), "reads-done")
		b.ReportMetric(float64(refused.Load()), "reads-refused")
		b.ReportMetric(map[bool]float64{true: 1}[admitted], "replay-admitted")
		require.Zero(b, failed.Load(), "a read failed other than refused")
		b.Logf("ingest p99 alone %s, beside %d read sessions %s (%.2fx); reads done %d, refused %d; admin replays admitted at once: %v (%s)",
			pa, benchSessions, pr, ratio, done.Load(), refused.Load(), admitted, strings.Join(replays, "; "))
	}
}

// p99 is the nearest-rank 99th percentile of ds (sorted in place).
func p99(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[(len(ds)*99+99)/100-1]
}

// preloadArchive archives n published deliveries of 2 KB bodies over the
// last 7 days, as a week of traffic leaves them.
func preloadArchive(b *testing.B, st *store.Store, n int) {
	ctx := context.Background()
	now := time.Now()
	pad := strings.Repeat("x", 2000)
	step := (7*24*time.Hour - time.Hour) / time.Duration(n)
	for from := 0; from < n; from += 1000 {
		var ds []hub.Delivery
		for i := from; i < min(from+1000, n); i++ {
			at := now.Add(-time.Duration(i) * step)
			ds = append(ds, hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: fmt.Sprintf("evt_pre_%d", i),
				EventType: "subscription.created", Body: []byte(`{"data":{"customer_id":"cus_` + fmt.Sprint(i%500) + `","pad":"` + pad + `"}}`),
				Signature: "ts=1;h1=ab", ReceivedAt: at})
		}
		_, err := st.Ingest(ctx, ds)
		require.NoError(b, err)
		var res []hub.PublishResult // as the relay records them (the sequences are not on the stream)
		for i, d := range ds {
			res = append(res, hub.PublishResult{ArchiveID: d.ArchiveID, Seq: uint64(1_000_000 + from + i), PublishedAt: d.ReceivedAt})
		}
		require.NoError(b, st.RecordPublished(ctx, res))
	}
	var pending int
	require.NoError(b, st.Pool().QueryRow(ctx, `SELECT count(*) FROM processed_webhook_events WHERE stream_seq IS NULL`).Scan(&pending))
	require.Zero(b, pending, "the preloaded events are published")
}

// ingestAtRate POSTs signed webhooks at benchRate a second for
// benchPhase (each on its own goroutine, so a slow answer delays no
// other) and returns their latencies.
func ingestAtRate(b *testing.B, h *testhub.Hub, phase string) []time.Duration {
	n := int(benchRate * benchPhase / time.Second)
	hooks := make([]testhub.Webhook, n)
	for i := range hooks {
		id := fmt.Sprintf("evt_%s_%d", phase, i)
		body, err := samples.Body("paddle", id, "subscription.created", []byte(`{"customer_id":"cus_new"}`), time.Now())
		require.NoError(b, err)
		hooks[i] = h.SignBody("paddle", id, "subscription.created", body)
	}
	lat := make([]time.Duration, n)
	var failed atomic.Int64
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / benchRate)
	defer tick.Stop()
	for i, w := range hooks {
		<-tick.C
		wg.Go(func() {
			t0 := time.Now()
			if !post(h.URL+"/webhooks/paddle", w) {
				failed.Add(1)
			}
			lat[i] = time.Since(t0)
		})
	}
	wg.Wait()
	require.Zero(b, failed.Load(), "%s: every webhook is answered 200", phase)
	return lat
}

func post(url string, w testhub.Webhook) bool {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(w.Body)))
	if err != nil {
		return false
	}
	for k, v := range w.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// readLoop is one read-only session: it loops the most expensive reads
// (a payload filter over 7 days that matches nothing, a bulk plan over 7
// days, a replay dry run and a bulk replay plan over the run, an audit
// export, 24 h of charts) until stop, counting those done and refused (a
// refused one is tried again after 50 ms, sooner than Retry-After says).
func readLoop(o *ops.Ops, start time.Time, i int, stop <-chan struct{}, done, refused, failed *atomic.Int64) {
	ctx := context.Background()
	now := o.Now()
	week := now.Add(-7 * 24 * time.Hour)
	where := []ops.PayloadMatch{{Path: "data.customer_id", Value: "cus_none"}}
	reads := []func() error{
		func() error {
			_, err := o.ListEventPage(ctx, ops.EventFilter{Since: week, Where: where, Limit: 100, Now: now})
			return err
		},
		func() error {
			_, err := o.Bulk(ctx, ops.BulkRequest{Action: ops.BulkRepublish, DryRun: true, Filter: ops.EventFilter{Since: week, Where: where, Now: now}})
			return err
		},
		func() error {
			_, err := o.Bulk(ctx, ops.BulkRequest{Action: ops.BulkReplay, Subscriber: "benchsub", DryRun: true, Filter: ops.EventFilter{Since: start}})
			return err
		},
		func() error {
			_, err := o.Replay(ctx, ops.ReplayRequest{Subscriber: "benchsub", Since: start, DryRun: true})
			return err
		},
		func() error {
			_, err := o.AuditExportPage(ctx, ops.AuditFilter{Limit: ops.MaxAuditLimit})
			return err
		},
		func() error {
			_, err := o.ProcessingCharts(ctx, ops.MaxChartHours)
			return err
		},
	}
	if only := os.Getenv("BENCH_READS"); only != "" { // e.g. 0,3: the reads to loop, by index in reads
		reads = pickReads(reads, only)
	}
	for n := i; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		err := reads[n%len(reads)]()
		switch {
		case errors.Is(err, ops.ErrBusy):
			refused.Add(1)
			time.Sleep(50 * time.Millisecond)
		case err == nil || errors.Is(err, ops.ErrNotFound):
			done.Add(1)
		default:
			if failed.Add(1) == 1 {
				fmt.Fprintln(os.Stderr, "read failed:", err)
			}
		}
	}
}

// benchBudget is the reads' budget: BENCH_READ_BUDGET=slots,rows,rows-a-second
// (e.g. 8,100000000,100000000: no bound to speak of; 1,1,1: no read
// admitted), else the hub's default.
func benchBudget() ops.Budget {
	var b ops.Budget
	_, _ = fmt.Sscanf(os.Getenv("BENCH_READ_BUDGET"), "%d,%d,%d", &b.Slots, &b.Rows, &b.RowsPerSecond)
	return b
}

// pickReads is the reads of list (indexes, comma-separated).
func pickReads(reads []func() error, list string) []func() error {
	var picked []func() error
	for _, f := range strings.Split(list, ",") {
		var k int
		if _, err := fmt.Sscan(f, &k); err == nil && k >= 0 && k < len(reads) {
			picked = append(picked, reads[k])
		}
	}
	return picked
}
