// Package bench measures the hub end to end: it starts the hub binary
// against a fresh database and an embedded JetStream server, sends signed
// Paddle deliveries over keep-alive connections, and reports accepted
// deliveries per second, the latency of the 2xx, the end-to-end latency
// until JetStream stored each event, the hub's peak RSS, the CPU time per
// delivery of the hub, Postgres and the bench itself, and the WAL written
// per delivery. In the same run it measures the same hub with batching
// disabled (one transaction per delivery) and a raw batched insert of the
// same rows without HTTP (the ceiling), and reports ratios; with a preload,
// it measures each of them again against an archive of past deliveries. At
// the end of every run it checks the stream and the tables, through the
// hub's store: nothing lost, nothing duplicated, nothing left in the
// outbox.
//
// Destinations (`hub bench destinations`) measures the destinations
// process instead: the rate at which it drains a backlog to a trivial
// receiver, its latency from stream to receiver at a fixed rate, its RSS,
// and the hub's ingest latency at a fixed open-loop rate with and without
// it forwarding every event; CPU per delivery for every process.
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
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/valyala/fasthttp"

	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/natsembed"
	"github.com/hookhub/hookhub/schema"
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
	Concurrency int     // concurrent HTTP clients
	Duplicates  float64 // share of deliveries that repeat an earlier event
	BatchMax    int     // HUB_BATCH_MAX of the batched run
	Baseline    bool    // also run the hub with HUB_BATCH_MAX=1
	Ceiling     bool    // also run the raw batched insert
	// Preload lists archive sizes (default: 0). For each size above 0, one
	// template database is filled once with that many archive rows of
	// published past deliveries (see preloadEvents) and every run's
	// database is copied from it; each size gets its own runs, interleaved
	// with the others' in every round.
	Preload []int
	// HubAdminAddr is the measured hubs' HUB_ADMIN_ADDR, where the bench
	// reads /metrics (and an operator can profile the hub); empty picks a
	// free port of 127.0.0.1 for each hub. Whatever the environment says,
	// the hubs get this one.
	HubAdminAddr string
	ExtraEnv     []string // more HUB_* variables for the hub runs
	// Rounds repeats the runs, interleaved (batched, unbatched, ceiling,
	// batched, …), so a machine whose speed drifts affects all alike; the
	// report keeps each run's median round and the median of the rounds'
	// ratios. Default 1.
	Rounds int
	Keep   bool // keep the bench databases
	Log    io.Writer
	// Profile, when set, is called right before the measured load of each
	// hub run with the run's name, and the function it returns right
	// after: for a CPU profile of exactly the measured part. The bench's
	// goroutines carry the pprof label "bench": loadgen (the HTTP
	// clients), nats-server (the embedded JetStream server; those of its
	// goroutines that label themselves, with "account", "stream" or
	// "consumer", lose it) and nats-client (the bench's own connection).
	Profile func(run string) (stop func())
}

// Result is one measured run.
type Result struct {
	Name string `json:"name"`
	// PreloadRows is how many archive rows the run's database held before
	// its first delivery. ArchiveRows and DedupRows count only the rows
	// the run wrote (its warm-up included).
	PreloadRows int64   `json:"preload_rows"`
	Deliveries  int     `json:"deliveries"`
	Events      int     `json:"events"`
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"per_second"`
	P50ms       float64 `json:"p50_ms"`
	P90ms       float64 `json:"p90_ms"`
	P99ms       float64 `json:"p99_ms"`
	MaxMs       float64 `json:"max_ms"`
	E2EP50ms    float64 `json:"e2e_p50_ms,omitempty"`
	E2EP99ms    float64 `json:"e2e_p99_ms,omitempty"`
	PeakRSSMB   float64 `json:"peak_rss_mb,omitempty"`
	// HubCPUus is the hub process's CPU time (user + system) per accepted
	// delivery during the load, in microseconds: a figure other processes
	// on the machine disturb far less than throughput.
	HubCPUus float64 `json:"hub_cpu_us_per_delivery,omitempty"`
	// PostgresCPUus is the CPU time of every postgres process on the
	// machine per accepted delivery, and SelfCPUus that of the benchmark's
	// own process (load generator and embedded NATS server).
	PostgresCPUus float64 `json:"postgres_cpu_us_per_delivery,omitempty"`
	SelfCPUus     float64 `json:"bench_cpu_us_per_delivery,omitempty"`
	// WALBytes is the WAL the Postgres server wrote per accepted delivery
	// during the load (pg_current_wal_lsn before and after; the same window
	// as the CPU figures). It is the whole server's WAL: anything else
	// writing to it meanwhile counts too.
	WALBytes float64 `json:"wal_bytes_per_delivery"`
	// MeanCommitBatch is the hub's mean deliveries per group-commit
	// transaction during the measured load (hub_commit_batch_deliveries);
	// 1 without batching.
	MeanCommitBatch float64 `json:"mean_commit_batch,omitempty"`
	// CopySeconds is how long creating the run's database from the
	// preloaded template took (0 without a preload).
	CopySeconds float64 `json:"database_copy_seconds,omitempty"`
	Non2xx      int     `json:"non_2xx"`
	Lost        int     `json:"lost"`
	Duplicated  int     `json:"duplicated"`
	StreamMsgs  int     `json:"stream_msgs,omitempty"`
	ArchiveRows int     `json:"archive_rows"`
	DedupRows   int     `json:"dedup_rows"`
}

// OK reports whether the run lost and duplicated nothing.
func (r Result) OK() bool { return r.Lost == 0 && r.Duplicated == 0 && r.Non2xx == 0 }

// Report is every run of one invocation, with the ratios.
type Report struct {
	// Runs holds, per configuration, the round with the median throughput:
	// for each archive size in the order of Preloads, the batched hub, then
	// the unbatched one and the ceiling when they ran.
	Runs []Result `json:"runs"`
	// Rounds holds every round's results when there was more than one, in
	// the order of Runs, with the ratios measured within each round.
	Rounds []Round `json:"rounds,omitempty"`
	// Preloads describes each archive size, in the order of Config.Preload.
	Preloads       []Preload `json:"preloads"`
	BodyBytes      int       `json:"body_bytes"`
	Warmup         int       `json:"warmup_deliveries"`
	Concurrency    int       `json:"concurrency"`
	DuplicateShare float64   `json:"duplicate_share"`
	// VsUnbatched and VsCeiling are at the first archive size; Preloads
	// has them for every size.
	VsUnbatched        float64 `json:"throughput_vs_unbatched,omitempty"`
	VsCeiling          float64 `json:"throughput_vs_ceiling,omitempty"`
	NothingLostOrDuped bool    `json:"nothing_lost_or_duplicated"`
}

// Round is one pass over every configuration.
type Round struct {
	Runs []Result `json:"runs"`
	// VsUnbatched and VsCeiling are at the first archive size.
	VsUnbatched float64 `json:"throughput_vs_unbatched,omitempty"`
	VsCeiling   float64 `json:"throughput_vs_ceiling,omitempty"`
	// Sizes has the round's ratios at every archive size when there are
	// several.
	Sizes []Ratios `json:"by_archive_size,omitempty"`
}

// Ratios compares the runs of one round at one archive size.
type Ratios struct {
	PreloadRows        int64   `json:"preload_rows"`
	VsUnbatched        float64 `json:"throughput_vs_unbatched,omitempty"`
	VsCeiling          float64 `json:"throughput_vs_ceiling,omitempty"`
	ThroughputVsFirst  float64 `json:"throughput_vs_first_size,omitempty"`
	PostgresCPUVsFirst float64 `json:"postgres_cpu_vs_first_size,omitempty"`
}

const benchSecret = "pdl_ntfset_01bench000000000000000000000_BenchmarkSecretNotSecret0"

// workload is the pre-built, pre-signed sequence of deliveries; the first
// warmup of them are the warm-up.
type workload struct {
	warmup  int
	events  int
	eventOf []int // delivery index → event index
	bodies  [][]byte
	// signatures are the deliveries' Paddle-Signature headers; every
	// request also says Content-Type: application/json.
	signatures [][]byte
	bodyBytes  int
	// paddle signs the deliveries (sign), with the events' bodies.
	paddle      *provider.Paddle
	eventBodies [][]byte
}

// sign signs every delivery at now. Paddle rejects a signature older than
// the hub's tolerance (5 minutes), and a benchmark with rounds and a
// preload lasts longer than that: each hub run signs afresh before its
// load (22,000 HMACs, milliseconds).
func (w *workload) sign(now time.Time) error {
	for i, e := range w.eventOf {
		h, _, err := w.paddle.Sign(eventID(e), "", w.eventBodies[e], now)
		if err != nil {
			return err
		}
		if len(h) != 1 || h.Get(provider.PaddleSignatureHeader) == "" {
			return fmt.Errorf("workload: Paddle signs with %d headers, the load generator sends one", len(h))
		}
		w.signatures[i] = []byte(h.Get(provider.PaddleSignatureHeader))
	}
	return nil
}

func newWorkload(count int, dupShare float64) (*workload, error) {
	p, err := provider.NewPaddle([]string{benchSecret}, provider.Options{})
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
			body, err := samples.Body(p.Name(), eventID(w.events), "subscription.created", nil, now)
			if err != nil {
				return nil, err
			}
			eventBodies = append(eventBodies, body)
			w.eventOf[i] = w.events
			w.events++
		}
	}
	w.bodies = make([][]byte, count)
	w.signatures = make([][]byte, count)
	w.paddle, w.eventBodies = p, eventBodies
	for i, e := range w.eventOf {
		w.bodies[i] = eventBodies[e]
		w.bodyBytes += len(eventBodies[e])
	}
	w.bodyBytes /= max(1, count)
	return w, w.sign(now)
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

// labelled runs f with the pprof label bench=what: every goroutine f
// starts carries it too.
func labelled(what string, f func()) {
	pprof.Do(context.Background(), pprof.Labels("bench", what), func(context.Context) { f() })
}

// Run runs the benchmark.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	sizes := cfg.Preload
	if len(sizes) == 0 {
		sizes = []int{0}
	}
	preloading := false
	for _, n := range sizes {
		if n < 0 {
			return Report{}, fmt.Errorf("preload %d: an archive size is not negative", n)
		}
		preloading = preloading || n > 0
	}
	w, err := newWorkload(cfg.Warmup+cfg.Count, cfg.Duplicates)
	if err != nil {
		return Report{}, err
	}
	w.warmup = cfg.Warmup
	rep := Report{BodyBytes: w.bodyBytes, Concurrency: cfg.Concurrency, DuplicateShare: cfg.Duplicates, Warmup: cfg.Warmup}
	fmt.Fprintf(cfg.Log, "workload: %d deliveries (after %d of warm-up) of %d events, ~%d-byte bodies, concurrency %d\n",
		cfg.Count, cfg.Warmup, w.events, w.bodyBytes, cfg.Concurrency)

	srv, err := connectServer(ctx, cfg.AdminURL)
	if err != nil {
		return rep, err
	}
	defer srv.close()
	rep.Preloads = make([]Preload, len(sizes))
	for i, n := range sizes {
		if n == 0 {
			continue
		}
		if j := slices.Index(sizes, n); j < i { // listed twice: one template
			rep.Preloads[i] = rep.Preloads[j]
			continue
		}
		fmt.Fprintf(cfg.Log, "preloading a template database with %d archive rows …\n", n)
		pl, err := srv.fillTemplate(ctx, n, cfg.Duplicates, cfg.Log)
		if err != nil {
			return rep, err
		}
		if cfg.Keep {
			defer srv.thaw(pl.template)
		} else {
			defer srv.drop(pl.template)
		}
		rep.Preloads[i] = pl
	}

	dir, err := os.MkdirTemp("", "hub-bench-nats-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	var ns *natsembed.Server
	labelled("nats-server", func() {
		ns, err = natsembed.Start(natsembed.Options{Port: -1, StoreDir: dir, MaxStore: 4 << 30})
	})
	if err != nil {
		return rep, err
	}
	defer ns.Shutdown()

	type run struct {
		name string
		fn   func(name string) (Result, error)
	}
	var runs []run
	for i := range sizes {
		pl := &rep.Preloads[i]
		suffix := ""
		if preloading {
			suffix = fmt.Sprintf(", archive %d", sizes[i])
		}
		runs = append(runs, run{fmt.Sprintf("hub (batch %d)", cfg.BatchMax) + suffix, func(name string) (Result, error) {
			return runHub(ctx, cfg, srv, w, ns.ClientURL(), cfg.BatchMax, pl, name)
		}})
		if cfg.Baseline {
			runs = append(runs, run{"hub (batch 1)" + suffix, func(name string) (Result, error) {
				return runHub(ctx, cfg, srv, w, ns.ClientURL(), 1, pl, name)
			}})
		}
		if cfg.Ceiling {
			runs = append(runs, run{"raw batched insert" + suffix, func(string) (Result, error) { return runCeiling(ctx, cfg, srv, w, pl) }})
		}
	}
	perSize := len(runs) / len(sizes)
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
			res, err := r.fn(r.name)
			if err != nil {
				return rep, fmt.Errorf("%s: %w", r.name, err)
			}
			res.Name = r.name
			round.Runs = append(round.Runs, res)
			rep.NothingLostOrDuped = rep.NothingLostOrDuped && res.OK()
		}
		for i := range sizes {
			round.Sizes = append(round.Sizes, roundRatios(cfg, round.Runs, perSize, i))
		}
		round.VsUnbatched, round.VsCeiling = round.Sizes[0].VsUnbatched, round.Sizes[0].VsCeiling
		if len(sizes) == 1 {
			round.Sizes = nil
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
	for i := range sizes {
		pl := &rep.Preloads[i]
		median := func(f func(Ratios) float64) float64 {
			return medianOf(rep.Rounds, func(r Round) float64 {
				if r.Sizes == nil {
					return f(roundRatios(cfg, r.Runs, perSize, i))
				}
				return f(r.Sizes[i])
			})
		}
		pl.VsUnbatched = median(func(r Ratios) float64 { return r.VsUnbatched })
		pl.VsCeiling = median(func(r Ratios) float64 { return r.VsCeiling })
		pl.ThroughputVsFirst = median(func(r Ratios) float64 { return r.ThroughputVsFirst })
		pl.PostgresCPUVsFirst = median(func(r Ratios) float64 { return r.PostgresCPUVsFirst })
		var copies []float64
		for _, round := range rep.Rounds {
			for _, r := range round.Runs[i*perSize : (i+1)*perSize] {
				copies = append(copies, r.CopySeconds)
			}
		}
		slices.Sort(copies)
		pl.CopySeconds = copies[len(copies)/2]
	}
	rep.VsUnbatched, rep.VsCeiling = rep.Preloads[0].VsUnbatched, rep.Preloads[0].VsCeiling
	if rounds == 1 {
		rep.Rounds = nil
	}
	return rep, nil
}

// roundRatios compares the runs of one round at archive size i: runs
// holds perSize runs per size (batched hub, unbatched hub, ceiling).
func roundRatios(cfg Config, runs []Result, perSize, i int) Ratios {
	at := runs[i*perSize : (i+1)*perSize]
	r := Ratios{PreloadRows: at[0].PreloadRows}
	if cfg.Baseline {
		r.VsUnbatched = ratio(at[0].PerSecond, at[1].PerSecond)
	}
	if cfg.Ceiling {
		r.VsCeiling = ratio(at[0].PerSecond, at[len(at)-1].PerSecond)
	}
	if i > 0 {
		r.ThroughputVsFirst = ratio(at[0].PerSecond, runs[0].PerSecond)
		r.PostgresCPUVsFirst = ratio(at[0].PostgresCPUus, runs[0].PostgresCPUus)
	}
	return r
}

// ratio is a/b, or 0 when b is 0 (a run without a single 2xx): JSON has no
// infinity.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
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

// hubEnv is a measured hub's environment: the bench's own (base), what
// the bench sets, then extra. When a variable is listed twice the last
// value wins (os/exec), so what must match the bench's own setup never
// reaches the hub from an operator's shell (its addresses, its database,
// its single-node JetStream server and stream: HUB_STREAM_REPLICAS 1; no
// periodic backfill calling providers' APIs), while HUB_* tuning
// variables do.
func hubEnv(base []string, dbURL, natsURL, addr, adminAddr string, batchMax int, extra []string) []string {
	env := append(slices.Clip(base),
		"HUB_DATABASE_URL="+dbURL, "HUB_NATS_URL="+natsURL, "HUB_HTTP_ADDR="+addr, "HUB_ADMIN_ADDR="+adminAddr,
		"HUB_STREAM="+schema.DefaultStream, "HUB_STREAM_REPLICAS=1", "HUB_BACKFILL_INTERVAL=0",
		"HUB_PADDLE_SECRETS="+benchSecret, "HUB_CLERK_SECRETS=", "HUB_LOG_LEVEL=warn",
		"HUB_BATCH_MAX="+strconv.Itoa(batchMax))
	return append(env, extra...)
}

func runHub(ctx context.Context, cfg Config, srv *server, w *workload, natsURL string, batchMax int, pl *Preload, name string) (Result, error) {
	db, err := srv.create(ctx, fmt.Sprintf("b%d", batchMax), pl.template)
	if err != nil {
		return Result{}, err
	}
	if err := w.sign(time.Now()); err != nil {
		return Result{}, err
	}
	if !cfg.Keep {
		defer srv.drop(db.name)
	}
	pcfg, err := pgxpool.ParseConfig(db.url)
	if err != nil {
		return Result{}, err
	}
	pcfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return Result{}, err
	}
	defer pool.Close()
	st := store.New(pool)

	var nc *nats.Conn
	labelled("nats-client", func() { nc, err = nats.Connect(natsURL) })
	if err != nil {
		return Result{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return Result{}, err
	}
	if err := js.DeleteStream(ctx, schema.DefaultStream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return Result{}, err
	}

	hp, err := startHub(ctx, cfg, db.url, natsURL, batchMax)
	if err != nil {
		return Result{}, err
	}
	defer hp.stop()
	cmd, base, adminBase := hp.cmd, hp.base, hp.adminBase
	stream, err := waitStream(ctx, js, 30*time.Second)
	if err != nil {
		return Result{}, err
	}

	firstSent := make([]int64, w.events)
	noteSent := func(i int, at time.Time) {
		atomic.CompareAndSwapInt64(&firstSent[w.eventOf[i]], 0, at.UnixNano())
	}
	_, warmNon2xx, _ := load(ctx, base, w, cfg.Concurrency, 0, w.warmup, noteSent)
	batchSum0, batches0, _ := commitBatches(adminBase)
	wal0, err := srv.walPosition(ctx)
	if err != nil {
		return Result{}, err
	}
	stopProfile := func() {}
	if cfg.Profile != nil {
		stopProfile = cfg.Profile(name)
	}
	measuredFrom := time.Now().UnixNano()
	cpu0, pg0, self0 := cpuTime(cmd.Process.Pid), postgresCPU(), cpuTime(os.Getpid())
	lat, non2xx, elapsed := load(ctx, base, w, cfg.Concurrency, w.warmup, len(w.bodies), noteSent)
	cpu, pg, self := cpuTime(cmd.Process.Pid)-cpu0, postgresCPU()-pg0, cpuTime(os.Getpid())-self0
	stopProfile()
	wal1, err := srv.walPosition(ctx)
	if err != nil {
		return Result{}, err
	}
	peak := peakRSS(cmd.Process.Pid)

	// Wait for the outbox to drain: every event on the stream and none
	// left in the outbox (the last PubAcks and marks may still be in
	// flight).
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if info, err := stream.Info(ctx); err == nil && info.State.Msgs >= uint64(w.events) {
			if b, err := st.OutboxBacklog(ctx); err == nil && b.Pending == 0 {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	res := summarize(lat, elapsed, len(w.bodies)-w.warmup, w.events)
	res.PreloadRows, res.CopySeconds = pl.ArchiveRows, db.copySeconds
	res.Non2xx = warmNon2xx + non2xx
	res.PeakRSSMB = peak
	if len(lat) > 0 {
		res.HubCPUus = perDelivery(cpu, len(lat))
		res.PostgresCPUus = perDelivery(pg, len(lat))
		res.SelfCPUus = perDelivery(self, len(lat))
		res.WALBytes = float64(wal1-wal0) / float64(len(lat))
	}
	if batchMax == 1 {
		res.MeanCommitBatch = 1
	} else if sum, n, err := commitBatches(adminBase); err != nil {
		fmt.Fprintf(cfg.Log, "mean commit batch: %v\n", err)
	} else if n > batches0 {
		res.MeanCommitBatch = (sum - batchSum0) / (n - batches0)
	}
	// End-to-end: from the first time an event was sent until JetStream
	// stored it (the message's timestamp; the server runs in this process,
	// on the same clock), for the events first sent after the warm-up.
	stored := make([]int64, w.events) // unix nanos
	if err := verify(ctx, &res, st, pl.since, js, stored); err != nil {
		return res, err
	}
	var e2e []time.Duration
	for i, at := range stored {
		if at != 0 && firstSent[i] >= measuredFrom {
			e2e = append(e2e, time.Duration(at-firstSent[i]))
		}
	}
	slices.Sort(e2e)
	res.E2EP50ms, res.E2EP99ms = ms(pct(e2e, 0.50)), ms(pct(e2e, 0.99))
	return res, nil
}

// hubProcess is a running hub started by startHub.
type hubProcess struct {
	cmd             *exec.Cmd
	base, adminBase string // http://host:port of its webhook and admin listeners
}

// startHub starts the hub (cfg.HubCommand serve) on the database dbURL and
// the NATS server natsURL, and waits until its webhook and admin listeners
// are ready. stop interrupts it and waits for it to exit.
func startHub(ctx context.Context, cfg Config, dbURL, natsURL string, batchMax int) (*hubProcess, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	adminAddr := cfg.HubAdminAddr
	if adminAddr == "" {
		if adminAddr, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, cfg.HubCommand[0], append(cfg.HubCommand[1:], "serve")...)
	cmd.Env = hubEnv(os.Environ(), dbURL, natsURL, addr, adminAddr, batchMax, cfg.ExtraEnv)
	cmd.Stdout, cmd.Stderr = cfg.Log, cfg.Log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start hub: %w", err)
	}
	hp := &hubProcess{cmd: cmd, base: "http://" + addr, adminBase: "http://" + adminAddr}
	if err := waitReady(ctx, hp.base, 30*time.Second); err != nil {
		hp.stop()
		return nil, err
	}
	if err := waitReady(ctx, hp.adminBase, 5*time.Second); err != nil {
		hp.stop()
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	fmt.Fprintf(cfg.Log, "hub pid %d: webhooks on %s, admin (/metrics, /debug/pprof/) on %s\n", cmd.Process.Pid, hp.base, hp.adminBase)
	return hp, nil
}

func (h *hubProcess) stop() {
	_ = h.cmd.Process.Signal(os.Interrupt)
	_ = h.cmd.Wait()
}

// load sends deliveries [from, to) of w with concurrency clients over
// keep-alive connections and returns the latencies of the 2xx answers,
// each from writing the request until its whole answer is read. It uses
// fasthttp's client, and each client builds its request once and changes
// only the signature and the body from one delivery to the next: the load
// generator shares the machine with the hub, Postgres and NATS, and the
// lighter it is the more the figures say about the hub.
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
		labelled("loadgen", func() {
			wg.Go(func() {
				req := fasthttp.AcquireRequest()
				resp := fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.SetRequestURI(url)
				req.Header.SetMethod(http.MethodPost)
				req.Header.SetContentType("application/json")
				lats[c] = make([]time.Duration, 0, (to-from)/concurrency+1)
				for ctx.Err() == nil {
					i := int(next.Add(1) - 1)
					if i >= to {
						return
					}
					req.Header.SetBytesV(provider.PaddleSignatureHeader, w.signatures[i])
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

// verify checks the tables and the stream after a run: every event
// recorded once, each on the stream once (hub runs) and none left in the
// outbox. It counts only rows received at or after since: not a preload.
// With a stream, it notes in stored when each event's first message was
// stored (unix nanos).
func verify(ctx context.Context, r *Result, st *store.Store, since time.Time, js jetstream.JetStream, stored []int64) error {
	c, err := st.Counts(ctx, since)
	if err != nil {
		return err
	}
	r.ArchiveRows, r.DedupRows = int(c.ArchiveRows), int(c.DedupRows)
	seen := make([]int, r.Events)
	if js != nil {
		// Every message the stream holds, to its last when the read starts.
		read, err := relay.Scan{Stream: schema.DefaultStream, HeadersOnly: true}.Run(ctx, js, func(m relay.ScanMsg) error {
			i, ok := eventIndex(m.Msg.Headers().Get(schema.HeaderMsgID))
			if !ok || i >= len(seen) {
				return nil
			}
			if seen[i]++; seen[i] == 1 && i < len(stored) {
				stored[i] = m.Meta.Timestamp.UnixNano()
			}
			return nil
		})
		if err != nil {
			return err
		}
		r.StreamMsgs = read.Msgs
	} else {
		ids, err := st.EventIDs(ctx, "paddle", since)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if i, ok := eventIndex("paddle:" + id); ok && i < len(seen) {
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
	r.Lost += max(0, r.Events-r.DedupRows)
	if js != nil {
		// Every event's publish recorded: none left in the outbox (the
		// ceiling publishes nothing, so its events stay there), none
		// given up.
		r.Lost += int(max(c.Pending, c.DedupRows-c.Published))
	}
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// commitBatches reads hub_commit_batch_deliveries from /metrics on the
// hub's admin listener (adminBase): the deliveries and the transactions so
// far.
func commitBatches(adminBase string) (sum, count float64, err error) {
	resp, err := probe.Get(adminBase + "/metrics")
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

// probe is the client of the bench's requests to a hub other than the
// deliveries: a hub that stops answering fails them instead of hanging the
// bench.
var probe = &http.Client{Timeout: 10 * time.Second}

func waitReady(ctx context.Context, base string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := probe.Get(base + "/readyz")
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
		st, err := js.Stream(ctx, schema.DefaultStream)
		if err == nil {
			return st, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("stream %s: %w", schema.DefaultStream, err)
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
