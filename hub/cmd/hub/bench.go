package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"text/tabwriter"

	"github.com/hookhub/hookhub/hub/bench"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stdout)
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
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the benchmark process (load generator and embedded NATS server) to this file; profile the hub through HUB_ADMIN_ADDR (/debug/pprof/)")
	fs.Usage = func() {
		io.WriteString(stdout, `Usage: hub bench [flags]

Measures the hub end to end on this machine. It starts this binary's
`+"`hub serve`"+` against a fresh database (created next to HUB_DATABASE_URL,
dropped afterwards) and an embedded JetStream server, sends pre-signed
Paddle deliveries over keep-alive connections, and reports accepted
deliveries/s, p50/p90/p99/max latency of the 2xx, end-to-end latency until
each event is on the stream, and the hub's peak RSS. In the same run it
measures the hub with batching disabled and a raw batched insert of the same
rows (64 per commit over 2 connections, no HTTP, no publish) as the ceiling,
and prints the ratios. Each run starts with a warm-up (--warmup deliveries
to the fresh hub and database, left out of the figures) and ends with a
check of the stream and the tables, warm-up included: nothing lost, nothing
duplicated. The last line is JSON.

Extra HUB_* variables in the environment (pool size, relay settings) apply
to the measured hubs.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkBenchFlags(*count, *warmup, *concurrency, *batchMax, *rounds, *dups); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logw := stdout
	if *asJSON {
		logw = stderr
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := bench.Run(ctx, bench.Config{
		AdminURL: cfg.DatabaseURL, HubCommand: []string{self},
		Count: *count, Warmup: *warmup, Concurrency: *concurrency, Duplicates: *dups, BatchMax: *batchMax,
		Baseline: *baseline, Ceiling: *ceiling, Keep: *keep, Log: logw, Rounds: *rounds,
	})
	if err != nil {
		return err
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "\nmachine: %d CPUs, %s/%s; body ~%d B, concurrency %d, %.0f%% duplicates\n\n",
			runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, rep.BodyBytes, rep.Concurrency, rep.DuplicateShare*100)
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "run\tdeliveries/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\te2e p50\te2e p99\tpeak RSS MB\tbatch\tCPU µs/dlv hub\tpostgres\tbench+nats\tnon-2xx\tlost\tduplicated\t")
		for _, r := range rep.Runs {
			fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t%.0f\t%.0f\t%.0f\t%d\t%d\t%d\t\n",
				r.Name, r.PerSecond, r.P50ms, r.P90ms, r.P99ms, r.MaxMs, r.E2EP50ms, r.E2EP99ms, r.PeakRSSMB, r.MeanCommitBatch, r.HubCPUus, r.PostgresCPUus, r.SelfCPUus, r.Non2xx, r.Lost, r.Duplicated)
		}
		_ = tw.Flush()
		if len(rep.Rounds) > 1 {
			fmt.Fprintf(stdout, "\n(each run: the median of %d interleaved rounds by deliveries/s; ratios: the median of the rounds' ratios)\n", len(rep.Rounds))
			for n, r := range rep.Rounds {
				fmt.Fprintf(stdout, "round %d:", n+1)
				for _, run := range r.Runs {
					fmt.Fprintf(stdout, "  %s %.0f/s", run.Name, run.PerSecond)
				}
				if r.VsUnbatched > 0 {
					fmt.Fprintf(stdout, "  vs unbatched %.2fx", r.VsUnbatched)
				}
				if r.VsCeiling > 0 {
					fmt.Fprintf(stdout, "  vs ceiling %.0f%%", r.VsCeiling*100)
				}
				fmt.Fprintln(stdout)
			}
		}
		if rep.VsUnbatched > 0 {
			fmt.Fprintf(stdout, "\nthroughput vs batching disabled: %.2fx\n", rep.VsUnbatched)
		}
		if rep.VsCeiling > 0 {
			fmt.Fprintf(stdout, "throughput vs raw batched insert ceiling: %.0f%%\n", rep.VsCeiling*100)
		}
		fmt.Fprintf(stdout, "nothing lost or duplicated: %t\n", rep.NothingLostOrDuped)
	}
	line, _ := json.Marshal(rep)
	if *asJSON {
		fmt.Fprintf(stdout, "%s\n", line) // JSON lines only
	} else {
		fmt.Fprintf(stdout, "BENCH %s\n", line)
	}
	if !rep.NothingLostOrDuped {
		return fmt.Errorf("the run lost or duplicated events")
	}
	return nil
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
func checkBenchFlags(count, warmup, concurrency, batchMax, rounds int, dups float64) error {
	for _, f := range []struct {
		name      string
		v, lo, hi int
	}{
		{"--count", count, 1, maxBenchCount},
		{"--warmup", warmup, 0, maxBenchWarmup},
		{"--concurrency", concurrency, 1, maxBenchConcurrency},
		{"--batch-max", batchMax, 1, maxBenchBatch},
		{"--rounds", rounds, 1, maxBenchRounds},
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
