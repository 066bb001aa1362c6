package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/redact"
	"github.com/hookhub/hookhub/migrations"
)

// maxBackfillRate bounds --rate: above every provider's documented limit.
const maxBackfillRate = 1000

func runBackfill(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("backfill", `Usage: hub backfill --provider stripe|paddle|github [--since T] [--until T] [--dry-run] [--rate N/s] [--restart] [--redeliver] [--json]

Lists the provider's events of the range through its API (Stripe GET /v1/events,
Paddle GET /events, GitHub the webhook's deliveries), finds those the hub never
received as webhooks, and ingests them as a webhook is ingested (archive row with
origin api and no signature, dedup row, outbox), so a late webhook of one of them
is answered as a duplicate and the stream gets each event once. The running hub's
relay publishes them within about a second (this command needs no NATS
connection; without a running hub they wait in the outbox, see `+"`hub status`"+`).
GitHub's API gives a payload re-encoded, not the bytes GitHub signed; with
--redeliver (GitHub only) the command instead asks GitHub to send each missing
webhook again, signed and byte for byte, to the hook's URL, and ingests nothing
itself: fix the endpoint first, or the redeliveries fail like the originals.

Progress is saved after each page: an interrupted run (Ctrl-C, a failure) is
continued by the next one, on its own range, from the page after the last one
saved; --restart starts over instead. A missing event found means webhooks are
failing (wrong secret, endpoint down): look at hub_deliveries_total.

Credentials: HUB_STRIPE_API_KEY, HUB_PADDLE_API_KEY, HUB_GITHUB_TOKEN with
HUB_GITHUB_HOOK (base URLs HUB_*_API_URL); the provider's webhook secrets must be
set too. Times are durations before now (90m, 36h, 7d) or times (2026-11-30, RFC
3339). Exits 1 when the run fails or some events could not be ingested.
`, stdout)
	name := fs.String("provider", "", "the provider: "+strings.Join(service.BackfillProviders, ", ")+" (required)")
	since := fs.String("since", "72h", "start of the range: when the events occurred")
	until := fs.String("until", "", "end of the range (default: now)")
	dryRun := fs.Bool("dry-run", false, "list the missing events, ingest nothing (the saved progress is left alone)")
	rateFlag := fs.String("rate", "0", fmt.Sprintf("at most N API requests a second, e.g. 10 or 10/s (0: no bound but the API's 429s), up to %d", maxBackfillRate))
	restart := fs.Bool("restart", false, "start over on the range instead of continuing an interrupted run")
	redeliver := fs.Bool("redeliver", false, "ask the provider to send the missing webhooks again instead of ingesting the API's copy (github)")
	asJSON := fs.Bool("json", false, "print the counts as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("backfill takes no arguments; the provider and the range are flags")
	}
	if *name == "" {
		return usageErr("--provider is required (" + strings.Join(service.BackfillProviders, ", ") + ")")
	}
	if !slices.Contains(service.BackfillProviders, *name) {
		return usageErr(fmt.Sprintf("--provider: %q has no backfill (want %s)", *name, strings.Join(service.BackfillProviders, ", ")))
	}
	rate, err := parseRate(*rateFlag)
	if err != nil {
		return err
	}
	if *dryRun && *restart {
		return usageErr("--dry-run and --restart contradict each other: a dry run leaves the saved progress alone")
	}
	s, u, err := parseWindow(*since, *until, time.Now())
	if err != nil {
		return err
	}
	if s.IsZero() {
		return usageErr("--since must not be empty")
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	src, err := cfg.BackfillSource(*name, backfill.RateLimited(nil, rate))
	if err != nil {
		return err
	}
	if _, ok := src.(backfill.Redeliverer); *redeliver && !ok {
		return usageErr(fmt.Sprintf("--redeliver: %s cannot be asked to send a webhook again (only github can); without --redeliver the API's copy is ingested", *name))
	}
	pool, err := openDatabase(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := checkSchema(ctx, pool); err != nil {
		return err
	}
	st := store.New(pool) // no relay grace: the running hubs' relays take the rows at once
	log := slog.New(redact.Handler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}), cfg.BackfillSecrets()...))
	eng, err := backfill.New(backfill.Config{Store: st, Ingester: st, MaxBodyBytes: cfg.MaxBodyBytes, Logger: log})
	if err != nil {
		return err
	}
	req := backfill.Request{Since: s, Until: u, DryRun: *dryRun, Restart: *restart, Redeliver: *redeliver}
	bar := newProgressBar(stderr, !*asJSON)
	if bar != nil {
		req.Progress = bar.update
	}
	res, runErr := eng.Run(ctx, src, req)
	bar.done()
	if *asJSON {
		if err := printJSON(stdout, res); err != nil {
			return err
		}
	} else {
		printBackfill(stdout, res)
	}
	switch {
	case runErr != nil && ctx.Err() != nil:
		return fmt.Errorf("interrupted after %d pages: run the same command again to continue where it stopped", res.Pages)
	case errors.Is(runErr, store.ErrBackfillBusy):
		return fmt.Errorf("%w: wait for it, or, if it was killed, for its lease to expire (15 minutes after its last page)", runErr)
	case runErr != nil:
		return runErr
	case res.Failed > 0 && *redeliver:
		return fmt.Errorf("%d missing events could not be redelivered (see the messages above); they are tried again by the next run", res.Failed)
	case res.Failed > 0:
		return fmt.Errorf("%d missing events could not be ingested (see the messages above); they are retried by the next run", res.Failed)
	}
	return nil
}

// parseRate reads --rate: N or N/s, 0..maxBackfillRate.
func parseRate(v string) (float64, error) {
	n, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), "/s"), 64)
	if err != nil || n < 0 || n > maxBackfillRate || n != n {
		return 0, usageErr(fmt.Sprintf("--rate: must be 0 (no bound) or a number of requests a second up to %d, e.g. 10/s, got %q", maxBackfillRate, v))
	}
	return n, nil
}

// checkSchema fails unless the hub's migrations are applied.
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	m, err := migrations.Hub(pool)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Check(ctx); err != nil {
		if errors.Is(err, migrations.ErrPending) {
			return fmt.Errorf("%w; run `hub migrate up` first", err)
		}
		return fmt.Errorf("connect to the hub's database (HUB_DATABASE_URL): %w", err)
	}
	return nil
}

func printBackfill(w io.Writer, r backfill.Result) {
	window := r.Since.UTC().Format(time.RFC3339) + " .. " + r.Until.UTC().Format(time.RFC3339)
	if r.Resumed {
		fmt.Fprintf(w, "%s: continued an interrupted backfill of %s\n", r.Provider, window)
	}
	if r.DryRun {
		missing, would := r.Ingested, "ingested"
		if r.Redeliver {
			missing, would = r.Redelivered, "redelivered"
		}
		fmt.Fprintf(w, "%s: dry run over %s: %d events listed, %d already received, %d missing (would be %s), %d unusable\n",
			r.Provider, window, r.Listed, r.Already, missing, would, r.Failed)
		for _, m := range r.Missing {
			at := "-"
			if !m.OccurredAt.IsZero() {
				at = m.OccurredAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(w, "  missing %s:%s  %s  occurred %s\n", r.Provider, m.EventID, m.EventType, at)
		}
		if int64(len(r.Missing)) < missing {
			fmt.Fprintf(w, "  … and %d more\n", missing-int64(len(r.Missing)))
		}
		return
	}
	if r.Redeliver {
		fmt.Fprintf(w, "%s: %d pages over %s: %d events listed, %d already received, %d redelivered (asked the provider to send the webhook again), %d ingested (origin api), %d failed\n",
			r.Provider, r.Pages, window, r.Listed, r.Already, r.Redelivered, r.Ingested, r.Failed)
		if t := r.Total; t != nil {
			fmt.Fprintf(w, "%s: the whole range so far: %d pages, %d listed, %d already received, %d redelivered, %d ingested, %d failed\n",
				r.Provider, t.Pages, t.Listed, t.Already, t.Redelivered, t.Ingested, t.Failed)
		}
		fmt.Fprintln(w, "the provider sends the redelivered webhooks to the hook's URL; the hub ingests them as they arrive (see hub_deliveries_total)")
		return
	}
	fmt.Fprintf(w, "%s: %d pages over %s: %d events listed, %d already received, %d ingested (origin api), %d failed\n",
		r.Provider, r.Pages, window, r.Listed, r.Already, r.Ingested, r.Failed)
	if t := r.Total; t != nil {
		fmt.Fprintf(w, "%s: the whole range so far: %d pages, %d listed, %d already received, %d ingested, %d failed\n",
			r.Provider, t.Pages, t.Listed, t.Already, t.Ingested, t.Failed)
	}
	if r.Ingested > 0 {
		fmt.Fprintln(w, "the running hub's relay publishes the ingested events to the stream (see `hub status`)")
	}
}

// progressBar draws a run's progress on a terminal, on one line of stderr.
type progressBar struct {
	w     io.Writer
	drawn bool
}

// newProgressBar returns a bar on w when w is a terminal and want is true,
// nil otherwise (a nil bar draws nothing).
func newProgressBar(w io.Writer, want bool) *progressBar {
	if !want || !isTerminal(w) {
		return nil
	}
	return &progressBar{w: w}
}

// isTerminal reports whether w is a character device (a terminal), not a
// pipe or a file. The standard library's file mode is enough here: the bar
// is only drawn, never read back, so a character device that is not a
// terminal (/dev/null) costs nothing.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (b *progressBar) update(p backfill.Progress) {
	if b == nil {
		return
	}
	const width = 30
	filled := int(p.Covered * width)
	done, verb := p.Ingested, "ingested"
	if p.Redelivered > 0 {
		done, verb = p.Redelivered, "redelivered"
	}
	fmt.Fprintf(b.w, "\r%s [%s%s] %3.0f%%  page %d  listed %d  already %d  %s %d  failed %d ",
		p.Provider, strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.Covered*100,
		p.Pages, p.Listed, p.Already, verb, done, p.Failed)
	b.drawn = true
}

func (b *progressBar) done() {
	if b != nil && b.drawn {
		fmt.Fprintln(b.w)
	}
}
