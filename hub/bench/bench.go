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
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/store"
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
	// Hubs is how many hub processes each hub run starts on its database
	// and the JetStream server (1..MaxHubs; 0 means 1). The load generator
	// sends delivery i to hub i mod Hubs, with the same Concurrency in all.
	Hubs int
	// NATSServer, when set, is a nats-server binary: the JetStream server
	// then runs as a process of its own, and the runs report its CPU per
	// delivery apart from the bench's (NATSCPUus). Empty: embedded in the
	// bench's process.
	NATSServer string
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
	// NATSCPUus is the nats-server process's (Config.NATSServer); without
	// it the embedded server's CPU is in SelfCPUus.
	NATSCPUus float64 `json:"nats_cpu_us_per_delivery,omitempty"`
	// Hubs is each hub's share (hub runs); HubCPUus, PeakRSSMB (the
	// largest), HubAllocBytes and MeanCommitBatch are of all of them.
	Hubs []HubResult `json:"hubs,omitempty"`
	// PostgresDBCPUus is the run database's backends alone (the hub's
	// connections): not what else the server runs meanwhile.
	PostgresDBCPUus float64 `json:"postgres_database_cpu_us_per_delivery,omitempty"`
	// WALBytes is the WAL the Postgres server wrote per accepted delivery
	// during the load (pg_current_wal_lsn before and after; the same window
	// as the CPU figures). It is the whole server's WAL: anything else
	// writing to it meanwhile counts too.
	WALBytes float64 `json:"wal_bytes_per_delivery"`
	// HubAllocBytes is what the hub allocated on its heap per accepted
	// delivery during the load (go_memstats_alloc_bytes_total on its
	// /metrics, before and after).
	HubAllocBytes float64 `json:"hub_alloc_bytes_per_delivery,omitempty"`
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
	Hubs           int       `json:"hubs"`
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

// Run runs the benchmark.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg.Log = cmp.Or(cfg.Log, io.Discard)
	sizes := cfg.Preload
	if len(sizes) == 0 {
		sizes = []int{0}
	}
	if cfg.Hubs < 0 || cfg.Hubs > MaxHubs {
		return Report{}, fmt.Errorf("hubs %d: want 1..%d", cfg.Hubs, MaxHubs)
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
	rep := Report{BodyBytes: w.bodyBytes, Concurrency: cfg.Concurrency, Hubs: max(1, cfg.Hubs), DuplicateShare: cfg.Duplicates, Warmup: cfg.Warmup}
	fmt.Fprintf(cfg.Log, "workload: %d deliveries (after %d of warm-up) of %d events, ~%d-byte bodies, concurrency %d over %d hub(s)\n",
		cfg.Count, cfg.Warmup, w.events, w.bodyBytes, cfg.Concurrency, rep.Hubs)

	srv, err := connectServer(ctx, cfg.AdminURL)
	if err != nil {
		return rep, err
	}
	defer srv.close()
	cleanup, err := preloadTemplates(ctx, cfg, srv, sizes, &rep)
	defer cleanup()
	if err != nil {
		return rep, err
	}

	dir, err := os.MkdirTemp("", "hub-bench-nats-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	jsrv, err := startJetStream(ctx, cfg, dir)
	if err != nil {
		return rep, err
	}
	defer jsrv.stop()

	var runs []benchRun
	for i := range sizes {
		pl := &rep.Preloads[i]
		suffix := ""
		if preloading {
			suffix = fmt.Sprintf(", archive %d", sizes[i])
		}
		runs = append(runs, benchRun{fmt.Sprintf("hub (batch %d)", cfg.BatchMax) + suffix, func(name string) (Result, error) {
			return runHub(ctx, cfg, srv, w, jsrv, cfg.BatchMax, pl, name)
		}})
		if cfg.Baseline {
			runs = append(runs, benchRun{"hub (batch 1)" + suffix, func(name string) (Result, error) {
				return runHub(ctx, cfg, srv, w, jsrv, 1, pl, name)
			}})
		}
		if cfg.Ceiling {
			runs = append(runs, benchRun{"raw batched insert" + suffix, func(string) (Result, error) { return runCeiling(ctx, cfg, srv, w, pl) }})
		}
	}
	if err := rep.runRounds(cfg, runs, len(sizes)); err != nil {
		return rep, err
	}
	rep.medians(cfg, len(runs), len(sizes))
	return rep, nil
}

// preloadTemplates fills a template database for each archive size above
// 0 (one for a size listed twice) into rep.Preloads. cleanup drops them
// (or, with cfg.Keep, keeps them usable), also after an error.
func preloadTemplates(ctx context.Context, cfg Config, srv *server, sizes []int, rep *Report) (cleanup func(), err error) {
	var undo []func()
	cleanup = func() {
		for _, f := range slices.Backward(undo) {
			f()
		}
	}
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
			return cleanup, err
		}
		tmpl := pl.template
		if cfg.Keep {
			undo = append(undo, func() { srv.thaw(tmpl) })
		} else {
			undo = append(undo, func() { srv.drop(tmpl) })
		}
		rep.Preloads[i] = pl
	}
	return cleanup, nil
}

// benchRun is one configuration the rounds measure.
type benchRun struct {
	name string
	fn   func(name string) (Result, error)
}

// runRounds measures every run cfg.Rounds times, interleaved, into
// rep.Rounds; runs holds the same runs for each of the sizes archive
// sizes.
func (rep *Report) runRounds(cfg Config, runs []benchRun, sizes int) error {
	perSize := len(runs) / sizes
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
				return fmt.Errorf("%s: %w", r.name, err)
			}
			res.Name = r.name
			round.Runs = append(round.Runs, res)
			rep.NothingLostOrDuped = rep.NothingLostOrDuped && res.OK()
		}
		for i := range sizes {
			round.Sizes = append(round.Sizes, roundRatios(cfg, round.Runs, perSize, i))
		}
		round.VsUnbatched, round.VsCeiling = round.Sizes[0].VsUnbatched, round.Sizes[0].VsCeiling
		if sizes == 1 {
			round.Sizes = nil
		}
		rep.Rounds = append(rep.Rounds, round)
	}
	return nil
}

// medians fills rep.Runs with each run's median round and rep.Preloads
// with the median ratios of the rounds, of nruns runs over sizes archive
// sizes.
func (rep *Report) medians(cfg Config, nruns, sizes int) {
	perSize, rounds := nruns/sizes, len(rep.Rounds)
	for k := range nruns {
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
}

// roundRatios compares the runs of one round at archive size i: runs
// holds perSize runs per size (batched hub, unbatched hub, ceiling).
func roundRatios(cfg Config, runs []Result, perSize, i int) Ratios {
	at := runs[i*perSize : (i+1)*perSize]
	r := Ratios{PreloadRows: at[0].PreloadRows}
	if cfg.Baseline {
		r.VsUnbatched = Ratio(at[0].PerSecond, at[1].PerSecond)
	}
	if cfg.Ceiling {
		r.VsCeiling = Ratio(at[0].PerSecond, at[len(at)-1].PerSecond)
	}
	if i > 0 {
		r.ThroughputVsFirst = Ratio(at[0].PerSecond, runs[0].PerSecond)
		r.PostgresCPUVsFirst = Ratio(at[0].PostgresCPUus, runs[0].PostgresCPUus)
	}
	return r
}

// Ratio is a/b, or 0 when b is 0 (a run without a single 2xx): JSON has no
// infinity.
func Ratio(a, b float64) float64 {
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

func runHub(ctx context.Context, cfg Config, srv *server, w *workload, jsrv *jetStreamServer, batchMax int, pl *Preload, name string) (Result, error) {
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
	pool, err := openPool(ctx, db.url)
	if err != nil {
		return Result{}, err
	}
	defer pool.Close()
	st := store.New(pool)

	hs, err := startHubSet(ctx, cfg, db.url, jsrv.url, batchMax, max(1, cfg.Hubs))
	if err != nil {
		return Result{}, err
	}
	defer hs.close()
	bases := hs.bases()

	firstSent := make([]int64, w.events)
	noteSent := func(i int, at time.Time) {
		atomic.CompareAndSwapInt64(&firstSent[w.eventOf[i]], 0, at.UnixNano())
	}
	_, warmNon2xx, _, _ := load(ctx, bases, w, cfg.Concurrency, 0, w.warmup, noteSent)
	win := hubsWindow{batchMax: batchMax, natsPID: jsrv.pid, before: hs.metrics()}
	wal0, err := srv.walPosition(ctx)
	if err != nil {
		return Result{}, err
	}
	stopProfile := func() {}
	if cfg.Profile != nil {
		stopProfile = cfg.Profile(name)
	}
	measuredFrom := time.Now().UnixNano()
	backends0, _, _ := srv.databaseActivity(ctx, db.name)
	win.cpu0 = hs.markCPU(jsrv.pid)
	lat, non2xx, elapsed, answered := load(ctx, bases, w, cfg.Concurrency, w.warmup, len(w.bodies), noteSent)
	win.cpu1 = hs.markCPU(jsrv.pid)
	backends1, _, _ := srv.databaseActivity(ctx, db.name)
	win.after, win.answered, win.elapsed = hs.metrics(), answered, elapsed
	stopProfile()
	wal1, err := srv.walPosition(ctx)
	if err != nil {
		return Result{}, err
	}
	waitDrained(ctx, hs.stream, st, w.events)
	res := summarize(lat, elapsed, len(w.bodies)-w.warmup, w.events)
	res.PreloadRows, res.CopySeconds = pl.ArchiveRows, db.copySeconds
	res.Non2xx = warmNon2xx + non2xx
	hs.figures(cfg.Log, &res, win)
	if n := len(lat); n > 0 {
		res.WALBytes = float64(wal1-wal0) / float64(n)
		res.PostgresDBCPUus = perDelivery(backendsCPU(backends0, backends1), n)
	}
	// End-to-end: from the first time an event was sent until JetStream
	// stored it (the message's timestamp; the server runs in this process,
	// on the same clock), for the events first sent after the warm-up.
	stored := make([]int64, w.events) // unix nanos
	if err := verify(ctx, &res, st, pl.since, hs.js, stored); err != nil {
		return res, err
	}
	var e2e []time.Duration
	for i, at := range stored {
		if at != 0 && firstSent[i] >= measuredFrom {
			e2e = append(e2e, time.Duration(at-firstSent[i]))
		}
	}
	slices.Sort(e2e)
	res.E2EP50ms, res.E2EP99ms, _ = percentiles(e2e)
	return res, nil
}

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
