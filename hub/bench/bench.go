// Package bench measures the hub end to end: it starts the hub binary
// against a fresh database and an embedded JetStream server, sends signed
// Paddle deliveries over keep-alive connections, and reports accepted
// deliveries per second, the latency of the 2xx, the end-to-end latency
// until each event is on the stream, and the hub's peak RSS. In the same
// run it measures the same hub with batching disabled (one transaction per
// delivery) and a raw batched insert of the same rows without HTTP (the
// ceiling), and reports ratios. At the end of every run it checks the
// stream and the tables: nothing lost, nothing duplicated.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/valyala/fasthttp"

	"github.com/hookhub/hookhub/hub/natsembed"
	"github.com/hookhub/hookhub/hub/pgurl"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/migrations"
)

// Config configures a benchmark run.
type Config struct {
	AdminURL   string   // a Postgres URL; bench databases are created next to it
	HubCommand []string // how to start the hub; "serve" is appended
	Count      int      // measured deliveries per hub run
	// Warmup deliveries are sent to each fresh hub (and inserted into each
	// fresh ceiling database) before the measured ones: connections, pools,
	// prepared statements and the heap of a freshly started process are
	// not what a hub that has been running sees. They are left out of every
	// figure but checked like the others: nothing lost, nothing duplicated.
	Warmup      int
	Concurrency int      // concurrent HTTP clients
	Duplicates  float64  // share of deliveries that repeat an earlier event
	BatchMax    int      // HUB_BATCH_MAX of the batched run
	Baseline    bool     // also run the hub with HUB_BATCH_MAX=1
	Ceiling     bool     // also run the raw batched insert
	ExtraEnv    []string // more HUB_* variables for the hub runs
	// Rounds repeats the runs, interleaved (batched, unbatched, ceiling,
	// batched, …), so a machine whose speed drifts affects all alike; the
	// report keeps each run's median round and the median of the rounds'
	// ratios. Default 1.
	Rounds int
	Keep   bool // keep the bench databases
	Log    io.Writer
}

// Result is one measured run.
type Result struct {
	Name       string  `json:"name"`
	Deliveries int     `json:"deliveries"`
	Events     int     `json:"events"`
	Seconds    float64 `json:"seconds"`
	PerSecond  float64 `json:"per_second"`
	P50ms      float64 `json:"p50_ms"`
	P90ms      float64 `json:"p90_ms"`
	P99ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
	E2EP50ms   float64 `json:"e2e_p50_ms,omitempty"`
	E2EP99ms   float64 `json:"e2e_p99_ms,omitempty"`
	PeakRSSMB  float64 `json:"peak_rss_mb,omitempty"`
	// HubCPUus is the hub process's CPU time (user + system) per accepted
	// delivery during the load, in microseconds: a figure other processes
	// on the machine disturb far less than throughput.
	HubCPUus float64 `json:"hub_cpu_us_per_delivery,omitempty"`
	// PostgresCPUus is the CPU time of every postgres process on the
	// machine per accepted delivery, and SelfCPUus that of the benchmark's
	// own process (load generator and embedded NATS server).
	PostgresCPUus float64 `json:"postgres_cpu_us_per_delivery,omitempty"`
	SelfCPUus     float64 `json:"bench_cpu_us_per_delivery,omitempty"`
	// MeanCommitBatch is the hub's mean deliveries per group-commit
	// transaction during the measured load (hub_commit_batch_deliveries);
	// 1 without batching.
	MeanCommitBatch float64 `json:"mean_commit_batch,omitempty"`
	Non2xx          int     `json:"non_2xx"`
	Lost            int     `json:"lost"`
	Duplicated      int     `json:"duplicated"`
	StreamMsgs      int     `json:"stream_msgs,omitempty"`
	ArchiveRows     int     `json:"archive_rows"`
	DedupRows       int     `json:"dedup_rows"`
}

// OK reports whether the run lost and duplicated nothing.
func (r Result) OK() bool { return r.Lost == 0 && r.Duplicated == 0 && r.Non2xx == 0 }

// Report is every run of one invocation, with the ratios.
type Report struct {
	// Runs holds, per configuration, the round with the median throughput.
	Runs []Result `json:"runs"`
	// Rounds holds every round's results when there was more than one, in
	// the order of Runs, with the ratios measured within each round.
	Rounds             []Round `json:"rounds,omitempty"`
	BodyBytes          int     `json:"body_bytes"`
	Warmup             int     `json:"warmup_deliveries"`
	Concurrency        int     `json:"concurrency"`
	DuplicateShare     float64 `json:"duplicate_share"`
	VsUnbatched        float64 `json:"throughput_vs_unbatched,omitempty"`
	VsCeiling          float64 `json:"throughput_vs_ceiling,omitempty"`
	NothingLostOrDuped bool    `json:"nothing_lost_or_duplicated"`
}

// Round is one pass over every configuration.
type Round struct {
	Runs        []Result `json:"runs"`
	VsUnbatched float64  `json:"throughput_vs_unbatched,omitempty"`
	VsCeiling   float64  `json:"throughput_vs_ceiling,omitempty"`
}

const benchSecret = "pdl_ntfset_01bench000000000000000000000_BenchmarkSecretNotSecret0"

// workload is the pre-built, pre-signed sequence of deliveries; the first
// warmup of them are the warm-up.
type workload struct {
	warmup    int
	events    int
	eventOf   []int // delivery index → event index
	bodies    [][]byte
	headers   []http.Header
	bodyBytes int
}

func newWorkload(count int, dupShare float64) (*workload, error) {
	p, err := provider.NewPaddle([]string{benchSecret}, 0)
	if err != nil {
		return nil, err
	}
	w := &workload{eventOf: make([]int, count)}
	rng := rand.New(rand.NewPCG(1, 2))
	var eventBodies [][]byte
	now := time.Now()
	for i := range count {
		if w.events > 0 && rng.Float64() < dupShare {
			w.eventOf[i] = rng.IntN(w.events)
		} else {
			body, err := p.Sample(eventID(w.events), "subscription.created", nil, now)
			if err != nil {
				return nil, err
			}
			eventBodies = append(eventBodies, body)
			w.eventOf[i] = w.events
			w.events++
		}
	}
	w.bodies = make([][]byte, count)
	w.headers = make([]http.Header, count)
	for i, e := range w.eventOf {
		w.bodies[i] = eventBodies[e]
		h, err := p.Sign(eventID(e), eventBodies[e], now)
		if err != nil {
			return nil, err
		}
		h.Set("Content-Type", "application/json")
		w.headers[i] = h
		w.bodyBytes += len(eventBodies[e])
	}
	w.bodyBytes /= max(1, count)
	return w, nil
}

func eventID(i int) string { return "evt_bench_" + strconv.Itoa(i) }

func eventIndex(msgID string) (int, bool) {
	s, ok := strings.CutPrefix(msgID, "paddle:evt_bench_")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// Run runs the benchmark.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	w, err := newWorkload(cfg.Warmup+cfg.Count, cfg.Duplicates)
	if err != nil {
		return Report{}, err
	}
	w.warmup = cfg.Warmup
	rep := Report{BodyBytes: w.bodyBytes, Concurrency: cfg.Concurrency, DuplicateShare: cfg.Duplicates, Warmup: cfg.Warmup}
	fmt.Fprintf(cfg.Log, "workload: %d deliveries (after %d of warm-up) of %d events, ~%d-byte bodies, concurrency %d\n",
		cfg.Count, cfg.Warmup, w.events, w.bodyBytes, cfg.Concurrency)

	dir, err := os.MkdirTemp("", "hub-bench-nats-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	ns, err := natsembed.Start(natsembed.Options{Port: -1, StoreDir: dir, MaxStore: 4 << 30})
	if err != nil {
		return rep, err
	}
	defer ns.Shutdown()

	type run struct {
		name string
		fn   func() (Result, error)
	}
	runs := []run{{fmt.Sprintf("hub (batch %d)", cfg.BatchMax), func() (Result, error) {
		return runHub(ctx, cfg, w, ns.ClientURL(), cfg.BatchMax)
	}}}
	if cfg.Baseline {
		runs = append(runs, run{"hub (batch 1)", func() (Result, error) { return runHub(ctx, cfg, w, ns.ClientURL(), 1) }})
	}
	if cfg.Ceiling {
		runs = append(runs, run{"raw batched insert", func() (Result, error) { return runCeiling(ctx, cfg, w) }})
	}
	rounds := max(1, cfg.Rounds)
	rep.NothingLostOrDuped = true
	for n := range rounds {
		var round Round
		for _, r := range runs {
			if rounds > 1 {
				fmt.Fprintf(cfg.Log, "round %d/%d: running %s …\n", n+1, rounds, r.name)
			} else {
				fmt.Fprintf(cfg.Log, "running %s …\n", r.name)
			}
			res, err := r.fn()
			if err != nil {
				return rep, fmt.Errorf("%s: %w", r.name, err)
			}
			res.Name = r.name
			round.Runs = append(round.Runs, res)
			rep.NothingLostOrDuped = rep.NothingLostOrDuped && res.OK()
		}
		if cfg.Baseline {
			round.VsUnbatched = round.Runs[0].PerSecond / round.Runs[1].PerSecond
		}
		if cfg.Ceiling {
			round.VsCeiling = round.Runs[0].PerSecond / round.Runs[len(round.Runs)-1].PerSecond
		}
		rep.Rounds = append(rep.Rounds, round)
	}
	for k := range runs {
		results := make([]Result, rounds)
		for n, round := range rep.Rounds {
			results[n] = round.Runs[k]
		}
		slices.SortFunc(results, func(a, b Result) int { return cmp.Compare(a.PerSecond, b.PerSecond) })
		rep.Runs = append(rep.Runs, results[rounds/2])
	}
	rep.VsUnbatched = medianOf(rep.Rounds, func(r Round) float64 { return r.VsUnbatched })
	rep.VsCeiling = medianOf(rep.Rounds, func(r Round) float64 { return r.VsCeiling })
	if rounds == 1 {
		rep.Rounds = nil
	}
	return rep, nil
}

// medianOf is the median of f over rounds (the upper one of an even count).
func medianOf(rounds []Round, f func(Round) float64) float64 {
	vs := make([]float64, len(rounds))
	for i, r := range rounds {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

// freshDatabase creates and migrates a database for one run.
func freshDatabase(ctx context.Context, adminURL, name string) (string, func(), error) {
	postgresURL, err := pgurl.WithDatabase(adminURL, "postgres")
	if err != nil {
		return "", nil, err
	}
	url, err := pgurl.WithDatabase(adminURL, name)
	if err != nil {
		return "", nil, err
	}
	admin, err := pgx.Connect(ctx, postgresURL)
	if err != nil {
		return "", nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		admin.Close(ctx)
		return "", nil, err
	}
	drop := func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		admin.Close(context.Background())
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		drop()
		return "", nil, err
	}
	defer pool.Close()
	m, err := migrations.Hub(pool)
	if err != nil {
		drop()
		return "", nil, err
	}
	defer m.Close()
	if _, err := m.Up(ctx); err != nil {
		drop()
		return "", nil, err
	}
	return url, drop, nil
}

func runHub(ctx context.Context, cfg Config, w *workload, natsURL string, batchMax int) (Result, error) {
	dbName := fmt.Sprintf("hub_bench_%d_b%d", time.Now().Unix(), batchMax)
	dbURL, drop, err := freshDatabase(ctx, cfg.AdminURL, dbName)
	if err != nil {
		return Result{}, err
	}
	if !cfg.Keep {
		defer drop()
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return Result{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return Result{}, err
	}
	if err := js.DeleteStream(ctx, "WEBHOOKS"); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return Result{}, err
	}

	addr, err := freeAddr()
	if err != nil {
		return Result{}, err
	}
	cmd := exec.CommandContext(ctx, cfg.HubCommand[0], append(cfg.HubCommand[1:], "serve")...)
	cmd.Env = append(os.Environ(),
		"HUB_DATABASE_URL="+dbURL, "HUB_NATS_URL="+natsURL, "HUB_HTTP_ADDR="+addr,
		"HUB_PADDLE_SECRETS="+benchSecret, "HUB_CLERK_SECRETS=", "HUB_LOG_LEVEL=warn",
		"HUB_BATCH_MAX="+strconv.Itoa(batchMax))
	cmd.Env = append(cmd.Env, cfg.ExtraEnv...)
	cmd.Stdout, cmd.Stderr = cfg.Log, cfg.Log
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("start hub: %w", err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	base := "http://" + addr
	if err := waitReady(ctx, base, 30*time.Second); err != nil {
		return Result{}, err
	}
	stream, err := waitStream(ctx, js, 30*time.Second)
	if err != nil {
		return Result{}, err
	}

	// End-to-end: a consumer notes when each event reaches the stream.
	arrived := make([]int64, w.events) // unix nanos
	var arrivals atomic.Int64
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{HeadersOnly: true})
	if err != nil {
		return Result{}, err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		now := time.Now().UnixNano()
		if i, ok := eventIndex(m.Headers().Get("Nats-Msg-Id")); ok && i < len(arrived) {
			if atomic.CompareAndSwapInt64(&arrived[i], 0, now) {
				arrivals.Add(1)
			}
		}
	})
	if err != nil {
		return Result{}, err
	}
	defer cc.Stop()

	firstSent := make([]int64, w.events)
	noteSent := func(i int, at time.Time) {
		atomic.CompareAndSwapInt64(&firstSent[w.eventOf[i]], 0, at.UnixNano())
	}
	_, warmNon2xx, _ := load(ctx, base, w, cfg.Concurrency, 0, w.warmup, noteSent)
	batchSum0, batches0, _ := commitBatches(base)
	measuredFrom := time.Now().UnixNano()
	cpu0, pg0, self0 := cpuTime(cmd.Process.Pid), postgresCPU(), cpuTime(os.Getpid())
	lat, non2xx, elapsed := load(ctx, base, w, cfg.Concurrency, w.warmup, len(w.bodies), noteSent)
	cpu, pg, self := cpuTime(cmd.Process.Pid)-cpu0, postgresCPU()-pg0, cpuTime(os.Getpid())-self0
	peak := peakRSS(cmd.Process.Pid)

	// Wait for the outbox to drain: every event on the stream and every
	// row marked (the last PubAcks and marks may still be in flight).
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if arrivals.Load() >= int64(w.events) {
			if n, err := countPending(ctx, dbURL); err == nil && n == 0 {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	res := summarize(lat, elapsed, len(w.bodies)-w.warmup, w.events)
	res.Non2xx = warmNon2xx + non2xx
	res.PeakRSSMB = peak
	if len(lat) > 0 {
		res.HubCPUus = perDelivery(cpu, len(lat))
		res.PostgresCPUus = perDelivery(pg, len(lat))
		res.SelfCPUus = perDelivery(self, len(lat))
	}
	if batchMax == 1 {
		res.MeanCommitBatch = 1
	} else if sum, n, err := commitBatches(base); err != nil {
		fmt.Fprintf(cfg.Log, "mean commit batch: %v\n", err)
	} else if n > batches0 {
		res.MeanCommitBatch = (sum - batchSum0) / (n - batches0)
	}
	var e2e []time.Duration // events first sent after the warm-up
	for i, a := range arrived {
		if a != 0 && firstSent[i] >= measuredFrom {
			e2e = append(e2e, time.Duration(a-firstSent[i]))
		}
	}
	slices.Sort(e2e)
	res.E2EP50ms, res.E2EP99ms = ms(pct(e2e, 0.50)), ms(pct(e2e, 0.99))
	if err := verify(ctx, &res, dbURL, js); err != nil {
		return res, err
	}
	return res, nil
}

// load sends deliveries [from, to) of w with concurrency clients over
// keep-alive connections and returns the latencies of the 2xx answers. It uses
// fasthttp's client: the load generator shares the machine with the hub,
// Postgres and NATS, and the lighter it is the more the figures say about
// the hub.
func load(ctx context.Context, base string, w *workload, concurrency, from, to int, sent func(i int, at time.Time)) ([]time.Duration, int, time.Duration) {
	client := &fasthttp.HostClient{
		Addr:               strings.TrimPrefix(base, "http://"),
		MaxConns:           concurrency,
		ReadTimeout:        30 * time.Second,
		WriteTimeout:       30 * time.Second,
		MaxConnWaitTimeout: 30 * time.Second,
	}
	defer client.CloseIdleConnections()
	url := base + "/webhooks/paddle"
	var next atomic.Int64
	next.Store(int64(from))
	var non2xx atomic.Int64
	lats := make([][]time.Duration, concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range concurrency {
		wg.Go(func() {
			req := fasthttp.AcquireRequest()
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				req.Reset()
				req.SetRequestURI(url)
				req.Header.SetMethod(http.MethodPost)
				for k, v := range w.headers[i] {
					req.Header.Set(k, v[0])
				}
				req.SetBodyRaw(w.bodies[i])
				t0 := time.Now()
				sent(i, t0)
				if err := client.Do(req, resp); err != nil || resp.StatusCode()/100 != 2 {
					non2xx.Add(1)
					continue
				}
				lats[c] = append(lats[c], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	return all, int(non2xx.Load()), elapsed
}

func summarize(lat []time.Duration, elapsed time.Duration, deliveries, events int) Result {
	r := Result{Deliveries: deliveries, Events: events, Seconds: elapsed.Seconds()}
	r.PerSecond = float64(len(lat)) / elapsed.Seconds()
	r.P50ms, r.P90ms, r.P99ms = ms(pct(lat, .5)), ms(pct(lat, .9)), ms(pct(lat, .99))
	if len(lat) > 0 {
		r.MaxMs = ms(lat[len(lat)-1])
	}
	return r
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// verify checks the tables and the stream after a hub run.
func verify(ctx context.Context, r *Result, dbURL string, js jetstream.JetStream) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var pending int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE processing_status = 'PENDING') FROM webhook_events`).Scan(&r.ArchiveRows, &pending); err != nil {
		return err
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM processed_webhook_events`).Scan(&r.DedupRows); err != nil {
		return err
	}
	seen := make([]int, r.Events)
	if js != nil {
		st, err := js.Stream(ctx, "WEBHOOKS")
		if err != nil {
			return err
		}
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		r.StreamMsgs = int(info.State.Msgs)
		c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{HeadersOnly: true})
		if err != nil {
			return err
		}
		for n := 0; n < r.StreamMsgs; {
			batch, err := c.Fetch(1000, jetstream.FetchMaxWait(2*time.Second))
			if err != nil {
				return err
			}
			for m := range batch.Messages() {
				n++
				if i, ok := eventIndex(m.Headers().Get("Nats-Msg-Id")); ok && i < len(seen) {
					seen[i]++
				}
			}
			if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
				return err
			}
		}
	} else {
		rows, err := conn.Query(ctx, `SELECT event_id FROM processed_webhook_events`)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, id := range ids {
			if i, ok := eventIndex("paddle:" + id); ok {
				seen[i]++
			}
		}
	}
	for _, n := range seen {
		switch {
		case n == 0:
			r.Lost++
		case n > 1:
			r.Duplicated += n - 1
		}
	}
	if r.DedupRows != r.Events {
		r.Lost += max(0, r.Events-r.DedupRows)
	}
	if js != nil { // the ceiling publishes nothing: its rows stay PENDING
		r.Lost += pending
	}
	return nil
}

func countPending(ctx context.Context, dbURL string) (int, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM webhook_events WHERE processing_status = 'PENDING'`).Scan(&n)
	return n, err
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// commitBatches reads hub_commit_batch_deliveries from the hub's /metrics:
// the deliveries and the transactions so far.
func commitBatches(base string) (sum, count float64, err error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	found := false
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "hub_commit_batch_deliveries_sum "); ok {
			sum, err = strconv.ParseFloat(v, 64)
		} else if v, ok := strings.CutPrefix(line, "hub_commit_batch_deliveries_count "); ok {
			count, err = strconv.ParseFloat(v, 64)
			found = true
		}
		if err != nil {
			return 0, 0, fmt.Errorf("parse %q: %w", line, err)
		}
	}
	if !found {
		return 0, 0, errors.New("no hub_commit_batch_deliveries in /metrics")
	}
	return sum, count, nil
}

func waitReady(ctx context.Context, base string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("hub at %s not ready after %s", base, timeout)
}

func waitStream(ctx context.Context, js jetstream.JetStream, timeout time.Duration) (jetstream.Stream, error) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := js.Stream(ctx, "WEBHOOKS")
		if err == nil {
			return st, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("stream WEBHOOKS: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func perDelivery(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(n) }

// postgresCPU sums the CPU time of every process named postgres.
func postgresCPU() time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			// With the time of reaped children: a backend or autovacuum
			// worker that exits during the run moves its time to the
			// postmaster's instead of taking it out of the sum.
			total += procCPU(pid, true)
		}
	}
	return total
}

// cpuTime reads a process's user + system CPU time from /proc.
func cpuTime(pid int) time.Duration { return procCPU(pid, false) }

// procCPU reads a process's user + system CPU time from /proc, plus that
// of its reaped children when children is set.
func procCPU(pid int, children bool) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) < 15 {
		return 0
	}
	fields := f[11:13] // utime, stime
	if children {
		fields = f[11:15] // and cutime, cstime
	}
	var ticks int64
	for _, v := range fields {
		n, _ := strconv.ParseInt(v, 10, 64)
		ticks += n
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(ticks) * time.Second / ticksPerSecond
}

// peakRSS reads a process's peak resident set (VmHWM), in MB.
func peakRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}
