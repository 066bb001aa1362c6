package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/bench"
)

// benchPurgeUsage is the help of `hub bench purge`.
const benchPurgeUsage = `Usage: hub bench purge [flags] [-- hub purge flags]

Measures what a purge of a large archive does to ingest. It fills a
database (created next to HUB_DATABASE_URL, dropped afterwards) with
--rows archive rows received one to four months ago, shaped as the hub
writes them (Paddle bodies, entities, --duplicates of them SKIPPED, every
event published, its dedup row), starts this binary's ` + "`hub serve`" + ` on a copy
of it with an embedded JetStream server, sends deliveries at --rate a
second (open loop: a stall counts for every delivery it holds up), and
after --before runs ` + "`hub purge --older-than 7d --yes`" + ` with the flags after
"--" (e.g. -- --batch 5000), then goes on for --after. It reports the
ingest's 2xx p50/p99/max and rate before, during and after the purge (and
in 5-second windows), the purge's rows/s, and for each phase the WAL
written, the CPU of Postgres (every database's), of the bench database's
backends and of the hub, and the archive's dead rows and autovacuums. At
the end it checks that every dedup row is still there. The last line is
JSON.

Filling takes minutes (about 1.5 minutes a million rows on two vCPUs);
--keep keeps the filled template (its name is printed) and --template
NAME reuses it in a later run.
`

func runBenchPurge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench purge", benchPurgeUsage, stdout)
	rows := fs.Int("rows", 2_000_000, "archive rows to purge")
	dups := fs.Float64("duplicates", 0.10, "share of the archive rows that are duplicates (0..0.5)")
	rate := fs.Int("rate", 500, "deliveries/s sent to the hub (open loop)")
	clients := fs.Int("clients", 64, "connections the deliveries are sent over")
	warmup := fs.Duration("warmup", 5*time.Second, "deliveries before the measured ones")
	before := fs.Duration("before", 30*time.Second, "measured time before the purge")
	after := fs.Duration("after", 30*time.Second, "measured time after the purge")
	maxPurge := fs.Duration("max-purge", 30*time.Minute, "the purge's time bound")
	template := fs.String("template", "", "a template kept by an earlier --keep run, instead of filling one")
	keep := fs.Bool("keep", false, "keep the databases (the filled template for --template)")
	asJSON := fs.Bool("json", false, "print only the final JSON report on stdout (progress goes to stderr)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	for _, f := range []struct {
		name      string
		v, lo, hi int
	}{{"--rows", *rows, 1, 100_000_000}, {"--rate", *rate, 1, 20000}, {"--clients", *clients, 1, maxBenchConcurrency}} {
		if f.v < f.lo || f.v > f.hi {
			return usageErr(fmt.Sprintf("%s must be within %d..%d, got %d", f.name, f.lo, f.hi, f.v))
		}
	}
	if !(*dups >= 0 && *dups <= 0.5) {
		return usageErr(fmt.Sprintf("--duplicates must be within 0..0.5, got %g", *dups))
	}
	total := *warmup + *before + *maxPurge + *after
	if *warmup < 0 || *before < 0 || *after < 0 || *maxPurge <= 0 || total > 2*time.Hour {
		return usageErr("--warmup, --before, --after and --max-purge must be positive and at most 2h together")
	}
	if n := float64(*rate) * total.Seconds(); n > 10*maxBenchCount {
		return usageErr(fmt.Sprintf("--rate × (--warmup + --before + --max-purge + --after) is %.0f deliveries: at most %d", n, 10*maxBenchCount))
	}
	cfg, self, logw, err := benchSetup(*asJSON, stdout, stderr)
	if err != nil {
		return err
	}
	rep, err := bench.Purge(ctx, bench.PurgeConfig{
		AdminURL: cfg.DatabaseURL, HubCommand: []string{self}, Rows: *rows, Duplicates: *dups,
		Rate: *rate, Clients: *clients, Warmup: *warmup, Before: *before, After: *after,
		PurgeArgs: fs.Args(), MaxPurge: *maxPurge, Template: *template, Keep: *keep, Log: logw,
	})
	if !*asJSON {
		printPurgeReport(stdout, rep)
		fmt.Fprint(stdout, "BENCH ")
	}
	_ = printJSON(stdout, rep)
	return err
}

func printPurgeReport(w io.Writer, rep bench.PurgeReport) {
	fmt.Fprintf(w, "\nmachine: %d CPUs, load average %.1f at the start and %.1f at the end; archive %d rows (%.0f MB database)",
		runtime.NumCPU(), rep.LoadBefore, rep.LoadAfter, rep.Rows, rep.DatabaseMB)
	if rep.Template != "" {
		fmt.Fprintf(w, ", kept as --template %s", rep.Template)
	}
	fmt.Fprintf(w, "\npurge %s: %d rows in %d batches, %.1f s, %.0f rows/s\n\n", strings.Join(rep.PurgeArgs, " "), rep.Deleted, rep.Batches, rep.PurgeSeconds, rep.RowsPerSec)
	for _, p := range []struct {
		name string
		p    bench.PurgePhase
	}{{"before", rep.Before}, {"during", rep.During}, {"after ", rep.After}} {
		fmt.Fprintf(w, "%s %5.0f s  %s\n", p.name, p.p.Seconds, p.p)
	}
	fmt.Fprintln(w, "\nin 5-second windows:")
	for i, p := range rep.Windows {
		fmt.Fprintf(w, "%4d s  %s\n", i*5, p)
	}
	fmt.Fprintf(w, "dedup rows kept: %t\n", rep.DedupKept)
}
