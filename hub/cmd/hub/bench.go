package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"text/tabwriter"

	"github.com/hookhub/hookhub/hub/bench"
	"github.com/hookhub/hookhub/hub/service"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "destinations" {
		return runBenchDestinations(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "purge" {
		return runBenchPurge(ctx, args[1:], stdout, stderr)
	}
	fs := newFlags("bench", benchUsage, stdout)
	count := fs.Int("count", 20000, "measured deliveries per run")
	warmup := fs.Int("warmup", 2000, "deliveries sent to each fresh hub (and database) before the measured ones, left out of the figures but checked for loss")
	concurrency := fs.Int("concurrency", 64, "concurrent HTTP clients (keep-alive connections)")
	dups := fs.Float64("duplicates", 0.10, "share of deliveries that repeat an earlier event (0..0.9)")
	batchMax := fs.Int("batch-max", 64, "HUB_BATCH_MAX of the measured hub")
	baseline := fs.Bool("baseline", true, "also measure the hub with batching disabled (HUB_BATCH_MAX=1)")
	ceiling := fs.Bool("ceiling", true, "also measure the raw batched insert (no HTTP, no publish)")
	keep := fs.Bool("keep", false, "keep the bench databases")
	asJSON := fs.Bool("json", false, "print only the final JSON report on stdout (progress goes to stderr)")
	rounds := fs.Int("rounds", 1, "repeat the runs, interleaved, and report each run's median round and the median ratios")
	preload := fs.String("preload", "0", "archive sizes to measure with, comma-separated (e.g. 0,2000000): each run's fresh database first holds that many archive rows of published past deliveries, copied from a template filled once")
	hubAdminAddr := fs.String("hub-admin-addr", "", "HUB_ADMIN_ADDR of the measured hubs (/metrics, /debug/pprof/); empty picks a free port for each hub and prints it")
	hubs := fs.Int("hubs", 1, "hub processes on the same database and JetStream server (1..8); the load generator sends the deliveries round robin over them, with the same --concurrency in all")
	natsServer := fs.String("nats-server", "", "a nats-server binary: run the JetStream server as a process of its own and report its CPU per delivery apart (default: embedded in the bench's process)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the benchmark process (load generator and embedded NATS server, pprof label \"bench\") during each hub run's measured load: this file for the first run, then name.2.ext, name.3.ext, …")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkBenchFlags(*count, *warmup, *concurrency, *batchMax, *rounds, *hubs, *dups); err != nil {
		return err
	}
	sizes, err := bench.ParsePreload(*preload)
	if err != nil {
		return usageErr("--preload: " + err.Error())
	}
	cfg, self, logw, err := benchSetup(*asJSON, stdout, stderr)
	if err != nil {
		return err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// The bench holds its signed workload in memory (about 2 KB a
		// delivery): past about 150,000 deliveries the hub's soft limit
		// (tuneGC) would keep its GC running through the measured load,
		// and in its CPU per delivery.
		debug.SetMemoryLimit(math.MaxInt64)
	}
	var profile func(string) func()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile) // fail now rather than after the preload
		if err != nil {
			return err
		}
		f.Close()
		profile = profiler(*cpuProfile, logw)
	}
	rep, err := bench.Run(ctx, bench.Config{
		AdminURL: cfg.DatabaseURL, HubCommand: []string{self},
		Count: *count, Warmup: *warmup, Concurrency: *concurrency, Duplicates: *dups, BatchMax: *batchMax,
		Baseline: *baseline, Ceiling: *ceiling, Keep: *keep, Log: logw, Rounds: *rounds,
		Preload: sizes, HubAdminAddr: *hubAdminAddr, Profile: profile, Hubs: *hubs, NATSServer: *natsServer,
	})
	if err != nil {
		return err
	}
	if !*asJSON {
		printBenchReport(stdout, rep)
		printHubShares(stdout, rep)
	}
	if !*asJSON { // with --json, JSON lines only
		fmt.Fprint(stdout, "BENCH ")
	}
	_ = printJSON(stdout, rep)
	if !rep.NothingLostOrDuped {
		return fmt.Errorf("the run lost or duplicated events")
	}
	return nil
}

// benchUsage is the help of `hub bench`.
const benchUsage = `Usage: hub bench [flags]
       hub bench destinations [flags]   (the destinations process; see its --help)
       hub bench purge [flags]          (ingest while a purge runs; see its --help)

Measures the hub end to end on this machine. It starts this binary's
` + "`hub serve`" + ` against a fresh database (created next to HUB_DATABASE_URL,
dropped afterwards) and an embedded JetStream server, sends pre-signed
Paddle deliveries over keep-alive connections, and reports accepted
deliveries/s, p50/p90/p99/max latency of the 2xx (from writing the request
to reading the whole answer), end-to-end latency (from sending an event
until JetStream stored it, by the message's timestamp), and the hub's peak
RSS. In the same run it measures the hub with batching disabled and a raw
batched insert of the same rows (64 per commit over 2 connections, no HTTP,
no publish) as the ceiling, and prints the ratios. Each run starts with a
warm-up (--warmup deliveries to the fresh hub and database, left out of the
figures) and ends with a check of the stream and the tables, warm-up
included: nothing lost, nothing duplicated, nothing left in the outbox. For
every run it reports the CPU time per delivery of the hub, of Postgres and
of the bench itself (load generator and embedded NATS server), and the WAL
Postgres wrote per delivery. CPU and WAL count the whole machine and the
whole Postgres server: run it where nothing else runs. The last line is
JSON.

--preload 0,2000000 measures every configuration with an empty archive and
with one of 2,000,000 rows, interleaved, and prints how deliveries/s and
Postgres CPU per delivery change. The preloaded rows are past deliveries of
the workload's body size, the --duplicates share of them duplicates,
received over the last 90 days, every event published. They are written
once per invocation into a template database and each run's database is a
file copy of it: about 4 KB of disk a row, twice (on a 2-vCPU development
machine, 2,000,000 rows took 4 minutes to write and 32 s to copy).

Extra HUB_* variables in the environment (pool size, relay settings) apply
to the measured hubs; their addresses, stream (one replica: the bench's
JetStream server is a single node), secrets and database are the bench's
own, and they run no periodic backfill. Each hub serves /metrics, where the bench reads the commit
batches, and /debug/pprof/ on its own admin listener: --hub-admin-addr, or
a free port printed for each run.

--hubs N starts N hub processes on each run's database and the one
JetStream server; the load generator sends delivery i to hub i mod N (the
same --concurrency in all), and the report gives the hubs' CPU per delivery
summed and each hub's share. --nats-server runs the JetStream server as a
process of its own (a nats-server binary, e.g. go build -o nats-server
github.com/nats-io/nats-server/v2), so that its CPU per delivery is
reported apart from the load generator's.
`

// benchSetup is what both benchmarks need: the configuration (for the
// database URL), this binary (the hubs they start), and where progress
// goes (stderr with --json, whose stdout is the report alone).
func benchSetup(asJSON bool, stdout, stderr io.Writer) (cfg service.Config, self string, logw io.Writer, err error) {
	if cfg, err = loadConfig(); err != nil {
		return cfg, "", nil, err
	}
	if self, err = os.Executable(); err != nil {
		return cfg, "", nil, err
	}
	logw = stdout
	if asJSON {
		logw = stderr
	}
	return cfg, self, logw, nil
}

// printBenchReport prints the text answer of `hub bench`.
func printBenchReport(stdout io.Writer, rep bench.Report) {
	fmt.Fprintf(stdout, "\nmachine: %d CPUs, %s/%s; body ~%d B, concurrency %d, %.0f%% duplicates\n",
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, rep.BodyBytes, rep.Concurrency, rep.DuplicateShare*100)
	for _, p := range rep.Preloads {
		if p.ArchiveRows == 0 {
			fmt.Fprintln(stdout, "archive before each run: empty")
			continue
		}
		fmt.Fprintf(stdout, "archive before each run: %d rows (%d events, %.0f MB database), written once in %.1f s; each run's copy of it took %.1f s (median)\n",
			p.ArchiveRows, p.Events, p.DatabaseMB, p.FillSeconds, p.CopySeconds)
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	self := "bench+nats"
	if len(rep.Runs) > 0 && rep.Runs[0].NATSCPUus > 0 {
		self = "bench" // the nats-server process's is printed below the table
	}
	fmt.Fprintln(tw, "run\tdeliveries/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\te2e p50\te2e p99\tpeak RSS MB\tbatch\tCPU µs/dlv hub\tpostgres\t"+self+"\tWAL B/dlv\thub alloc B/dlv\tnon-2xx\tlost\tduplicated\t")
	for _, r := range rep.Runs {
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%d\t%d\t%d\t\n",
			r.Name, r.PerSecond, r.P50ms, r.P90ms, r.P99ms, r.MaxMs, r.E2EP50ms, r.E2EP99ms, r.PeakRSSMB, r.MeanCommitBatch, r.HubCPUus, r.PostgresCPUus, r.SelfCPUus, r.WALBytes, r.HubAllocBytes, r.Non2xx, r.Lost, r.Duplicated)
	}
	_ = tw.Flush()
	if len(rep.Rounds) > 1 {
		fmt.Fprintf(stdout, "\n(each run: the median of %d interleaved rounds by deliveries/s; ratios: the median of the rounds' ratios)\n", len(rep.Rounds))
		for n, r := range rep.Rounds {
			fmt.Fprintf(stdout, "round %d:", n+1)
			for _, run := range r.Runs {
				fmt.Fprintf(stdout, "  %s %.0f/s", run.Name, run.PerSecond)
			}
			sizes := r.Sizes
			if sizes == nil {
				sizes = []bench.Ratios{{VsUnbatched: r.VsUnbatched, VsCeiling: r.VsCeiling}}
			}
			for _, z := range sizes {
				if len(r.Sizes) > 1 {
					fmt.Fprintf(stdout, ";  archive %d:", z.PreloadRows)
				}
				if z.VsUnbatched > 0 {
					fmt.Fprintf(stdout, "  vs unbatched %.2fx", z.VsUnbatched)
				}
				if z.VsCeiling > 0 {
					fmt.Fprintf(stdout, "  vs ceiling %.0f%%", z.VsCeiling*100)
				}
				if z.ThroughputVsFirst > 0 {
					fmt.Fprintf(stdout, "  vs first size %.2fx", z.ThroughputVsFirst)
				}
			}
			fmt.Fprintln(stdout)
		}
	}
	fmt.Fprintln(stdout)
	for i, p := range rep.Preloads {
		at := ""
		if len(rep.Preloads) > 1 {
			at = fmt.Sprintf(" (archive %d)", p.ArchiveRows)
		}
		if p.VsUnbatched > 0 {
			fmt.Fprintf(stdout, "throughput vs batching disabled%s: %.2fx\n", at, p.VsUnbatched)
		}
		if p.VsCeiling > 0 {
			fmt.Fprintf(stdout, "throughput vs raw batched insert ceiling%s: %.0f%%\n", at, p.VsCeiling*100)
		}
		if i > 0 {
			fmt.Fprintf(stdout, "batched hub with an archive of %d rows vs %d: %.2fx deliveries/s, %.2fx Postgres CPU per delivery\n",
				p.ArchiveRows, rep.Preloads[0].ArchiveRows, p.ThroughputVsFirst, p.PostgresCPUVsFirst)
		}
	}
	fmt.Fprintf(stdout, "nothing lost or duplicated: %t\n", rep.NothingLostOrDuped)
}

// Bounds of the bench's flags: the workload is signed ahead of time and
// held in memory (about 2 KB a delivery), and each client is a connection.
const (
	maxBenchCount       = 1_000_000
	maxBenchWarmup      = 100_000
	maxBenchConcurrency = 4096
	maxBenchBatch       = 10_000 // HUB_BATCH_MAX's own bound
	maxBenchRounds      = 99
)

// checkBenchFlags refuses a flag out of its range, naming it. NaN fails
// every comparison, so ranges are written as "not within".
func checkBenchFlags(count, warmup, concurrency, batchMax, rounds, hubs int, dups float64) error {
	for _, f := range []struct {
		name      string
		v, lo, hi int
	}{
		{"--count", count, 1, maxBenchCount},
		{"--warmup", warmup, 0, maxBenchWarmup},
		{"--concurrency", concurrency, 1, maxBenchConcurrency},
		{"--batch-max", batchMax, 1, maxBenchBatch},
		{"--rounds", rounds, 1, maxBenchRounds},
		{"--hubs", hubs, 1, bench.MaxHubs},
	} {
		if f.v < f.lo || f.v > f.hi {
			return usageErr(fmt.Sprintf("%s must be within %d..%d, got %d", f.name, f.lo, f.hi, f.v))
		}
	}
	if !(dups >= 0 && dups <= 0.9) {
		return usageErr(fmt.Sprintf("--duplicates must be within 0..0.9, got %g", dups))
	}
	return nil
}

// profiler returns a bench.Config.Profile that writes a CPU profile of
// each measured load: to path for the first, then to path's name with .2,
// .3, … before its extension.
func profiler(path string, log io.Writer) func(run string) func() {
	n := 0
	return func(run string) func() {
		n++
		name := path
		if n > 1 {
			ext := filepath.Ext(path)
			name = fmt.Sprintf("%s.%d%s", strings.TrimSuffix(path, ext), n, ext)
		}
		f, err := os.Create(name)
		if err != nil {
			fmt.Fprintf(log, "cpu profile: %v\n", err)
			return func() {}
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(log, "cpu profile: %v\n", err)
			f.Close()
			return func() {}
		}
		return func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				fmt.Fprintf(log, "cpu profile: %v\n", err)
				return
			}
			fmt.Fprintf(log, "cpu profile of %s's measured load: %s\n", run, name)
		}
	}
}
