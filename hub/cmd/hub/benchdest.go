package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/hookhub/hookhub/hub/bench"
)

// Targets of the destinations benchmark, printed next to the figures.
const (
	destTargetPerSecond = 3000
	destTargetP99ms     = 50
	destTargetRSSMB     = 100
	destTargetRatio     = 1.5
	idleTargetPercent   = 2.0
)

// benchDestUsage is the help of `hub bench destinations`.
const benchDestUsage = `Usage: hub bench destinations [flags]

Measures the destinations process (subscribers/destination/cmd/destinations)
on this machine, against an embedded JetStream server and fresh databases
(created next to HUB_DATABASE_URL, dropped afterwards), delivering to a
trivial receiver in the bench process (it notes when each webhook-id first
arrived and answers 204; it verifies nothing).

  drain    --preload events are published to the stream in the hub's message
           shape with the destinations process stopped; then it starts, and
           deliveries/s is the events over the time from the first receipt
           to the last.
  latency  the same process, fed at half the drain rate (--latency-rate) for
           --latency-for: p50/p99/max from publishing an event to its receipt.
  ingest   the hub (this binary's ` + "`hub serve`" + `) under a fixed open-loop rate
           of signed Paddle deliveries (--ingest-rate for --ingest-for, after
           --ingest-warmup), without destinations and with a destinations
           process forwarding every event: the ingest 2xx p50/p99/max, each
           from the time the request was due, and their ratio. --rounds
           repeats the pair, alternating its order; the round of the median ratio
           is reported (both its runs, as the verdict judges), and every round's.
  idle     with --idle: the hub and a destinations process on a fresh
           database, no traffic; after 5 s of start-up, the CPU of each, of
           the database's Postgres backends and of every postgres process
           over --idle, in percent of one core, and the database's
           transactions/s.

Every run reports the CPU time per delivery of each process (the hub, the
destinations process, every postgres process, for the ingest runs the run
database's backends alone, and the bench process: receiver, publisher or
load generator, embedded NATS server) from /proc,
and the destinations process's peak RSS (VmHWM). CPU counts the whole
machine's Postgres: run it where nothing else runs. The last line is JSON.

The destinations binary is --destinations-bin, or else built with the go
tool from the hookhub module the working directory is in.
`

func runBenchDestinations(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench destinations", benchDestUsage, stdout)
	bin := fs.String("destinations-bin", "", "the destinations binary; empty builds it (go build) from the module in the working directory")
	concurrency := fs.Int("concurrency", 16, "the destination's concurrency (requests in flight), 1..256")
	preload := fs.Int("preload", 30000, "events on the stream before the destinations process starts (the drain)")
	latencyFor := fs.Duration("latency-for", 15*time.Second, "how long the latency run publishes")
	latencyRate := fs.Float64("latency-rate", 0, "events/s of the latency run; 0 is half the drain rate")
	ingestRate := fs.Int("ingest-rate", 1000, "deliveries/s sent to the hub in the ingest runs (open loop)")
	ingestFor := fs.Duration("ingest-for", 20*time.Second, "measured time of each ingest run; 0 skips them")
	ingestWarmup := fs.Duration("ingest-warmup", 3*time.Second, "deliveries at the same rate before each ingest run's measured ones, left out of the figures")
	clients := fs.Int("clients", 64, "connections the ingest runs send over")
	rounds := fs.Int("rounds", 2, "ingest rounds (each: without and with destinations, the order alternating)")
	idle := fs.Duration("idle", 0, "measure the hub and a destinations process with no traffic for this long (e.g. 60s); 0 skips it")
	keep := fs.Bool("keep", false, "keep the bench databases")
	asJSON := fs.Bool("json", false, "print only the final JSON report on stdout (progress goes to stderr)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fmt.Sprintf("bench destinations takes no arguments (%q)", fs.Arg(0)))
	}
	for _, f := range []struct {
		name      string
		v, lo, hi int
	}{
		{"--concurrency", *concurrency, 1, 256},
		{"--preload", *preload, 2, maxBenchCount},
		{"--ingest-rate", *ingestRate, 1, 20000},
		{"--clients", *clients, 1, maxBenchConcurrency},
		{"--rounds", *rounds, 1, maxBenchRounds},
	} {
		if f.v < f.lo || f.v > f.hi {
			return usageErr(fmt.Sprintf("%s must be within %d..%d, got %d", f.name, f.lo, f.hi, f.v))
		}
	}
	if !(*latencyRate >= 0 && *latencyRate <= 100000) {
		return usageErr(fmt.Sprintf("--latency-rate must be within 0..100000, got %g", *latencyRate))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--latency-for", *latencyFor}, {"--ingest-for", *ingestFor}, {"--ingest-warmup", *ingestWarmup}, {"--idle", *idle}} {
		if d.v < 0 || d.v > time.Hour {
			return usageErr(fmt.Sprintf("%s must be within 0..1h, got %s", d.name, d.v))
		}
	}
	if n := float64(*ingestRate) * (*ingestFor + *ingestWarmup).Seconds(); n > maxBenchCount {
		return usageErr(fmt.Sprintf("--ingest-rate × (--ingest-for + --ingest-warmup) is %.0f deliveries: at most %d", n, maxBenchCount))
	}
	cfg, self, logw, err := benchSetup(*asJSON, stdout, stderr)
	if err != nil {
		return err
	}
	destCmd := *bin
	if destCmd == "" {
		dir, err := os.MkdirTemp("", "hub-bench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(logw, "building the destinations command …")
		if destCmd, err = bench.BuildDestinations(ctx, dir); err != nil {
			return err
		}
	}
	rep, err := bench.Destinations(ctx, bench.DestinationsConfig{
		AdminURL: cfg.DatabaseURL, HubCommand: []string{self}, DestinationsCommand: []string{destCmd},
		Concurrency: *concurrency, Preload: *preload, LatencyFor: *latencyFor, LatencyRate: *latencyRate,
		IngestRate: *ingestRate, IngestFor: *ingestFor, IngestWarmup: *ingestWarmup, IngestClients: *clients,
		Rounds: *rounds, IdleFor: *idle, Keep: *keep, Log: logw,
	})
	if err != nil {
		return err
	}
	if !*asJSON {
		printDestinationsReport(stdout, rep)
		fmt.Fprint(stdout, "BENCH ")
	}
	_ = printJSON(stdout, rep)
	if !rep.NothingLost {
		return fmt.Errorf("the run lost events")
	}
	return nil
}

func printDestinationsReport(w io.Writer, rep bench.DestinationsReport) {
	fmt.Fprintf(w, "\nmachine: %d CPUs, %s/%s, load average %.1f at the start and %.1f at the end; body ~%d B; destination concurrency %d\n\n",
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, rep.LoadBefore, rep.LoadAfter, rep.BodyBytes, rep.Concurrency)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "destinations process\tevents\tdeliveries/s\tp50 ms\tp99 ms\tmax ms\tCPU µs/dlv destinations\tpostgres\tbench\tduplicates\tlost\t")
	d, l := rep.Drain, rep.Latency
	fmt.Fprintf(tw, "drain (backlog)\t%d\t%.0f\t—\t—\t—\t%.0f\t%.0f\t%.0f\t%d\t%d\t\n", d.Events, d.PerSecond, d.DestCPUus, d.PostgresCPUus, d.BenchCPUus, d.Duplicates, d.Events-d.Received)
	if l.Events > 0 && l.Seconds > 0 {
		fmt.Fprintf(tw, "latency (fixed rate)\t%d\t%.0f\t%.1f\t%.1f\t%.1f\t%.0f\t%.0f\t%.0f\t%d\t%d\t\n", l.Events, l.PerSecond, l.P50ms, l.P99ms, l.MaxMs, l.DestCPUus, l.PostgresCPUus, l.BenchCPUus, l.Duplicates, l.Events-l.Received)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "destinations process peak RSS: %.0f MB\n", rep.PeakRSSMB)
	if len(rep.Ingest) == 2 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "ingest run\trate/s\t2xx p50 ms\tp99 ms\tmax ms\tforward p50 ms\tforward p99 ms\tCPU µs/dlv hub\tdestinations\tpostgres\tits backends\tbench\thub RSS MB\tdest RSS MB\tnon-2xx\tlost\t")
		for _, r := range rep.Ingest {
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%d\t%d\t\n",
				r.Name, r.Rate, r.P50ms, r.P99ms, r.MaxMs, r.ForwardP50ms, r.ForwardP99ms, r.HubCPUus, r.DestCPUus, r.PostgresCPUus, r.PostgresDBCPUus, r.BenchCPUus, r.HubPeakRSSMB, r.DestPeakRSSMB, r.Non2xx, r.Lost)
		}
		_ = tw.Flush()
		if len(rep.IngestRounds) > 1 {
			fmt.Fprintf(w, "the runs above are round %d, the median of %d rounds by the p99 ratio:\n", rep.IngestMedianRound, len(rep.IngestRounds))
		}
		for n, round := range rep.IngestRounds {
			mark := ""
			if n+1 == rep.IngestMedianRound {
				mark = "  (the median)"
			}
			fmt.Fprintf(w, "round %d: ingest p99 %.1f ms without, %.1f ms with destinations: %.2fx%s\n", n+1, round[0].P99ms, round[1].P99ms, bench.Ratio(round[1].P99ms, round[0].P99ms), mark)
		}
	}
	if i := rep.Idle; i != nil {
		fmt.Fprintf(w, "\nidle for %.0f s, %% of one core: hub %.2f, destinations %.2f, postgres %.2f (the database's backends %.2f); total %.2f; %.1f transactions/s\n",
			i.Seconds, i.HubCPU, i.DestCPU, i.Postgres, i.PostgresDB, i.Total, i.TransactionsPerSecond)
	}
	fmt.Fprintln(w, "\nagainst the targets:")
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintf(w, "  deliveries/s from one process ≥ %d: %.0f (%s)\n", destTargetPerSecond, d.PerSecond, verdict(d.PerSecond >= destTargetPerSecond))
	if l.Seconds > 0 {
		fmt.Fprintf(w, "  p99 stream → receiver at %.0f/s ≤ %d ms: %.1f ms (%s)\n", l.PerSecond, destTargetP99ms, l.P99ms, verdict(l.P99ms <= destTargetP99ms))
	}
	fmt.Fprintf(w, "  destinations RSS ≤ %d MB: %.0f MB (%s)\n", destTargetRSSMB, rep.PeakRSSMB, verdict(rep.PeakRSSMB <= destTargetRSSMB))
	if len(rep.Ingest) == 2 {
		fmt.Fprintf(w, "  ingest 2xx p99 with destinations ≤ %.1fx without: %.2fx (%s; %.1f / %.1f ms, the ingest runs above: the median round)\n",
			destTargetRatio, rep.IngestP99Ratio, verdict(rep.IngestP99Ratio <= destTargetRatio), rep.Ingest[1].P99ms, rep.Ingest[0].P99ms)
	}
	if i := rep.Idle; i != nil {
		fmt.Fprintf(w, "  idle: hub + destinations + postgres ≤ %.0f %% of one core: %.2f %% (%s; every postgres process on the machine)\n",
			idleTargetPercent, i.Total, verdict(i.Total <= idleTargetPercent))
	}
	fmt.Fprintf(w, "nothing lost: %t\n", rep.NothingLost)
}
