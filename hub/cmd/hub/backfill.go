package main

import (
	"cmp"
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

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/migrate"
	"github.com/hookhub/hookhub/internal/redact"
	"github.com/hookhub/hookhub/migrations"
)

// maxBackfillRate bounds --rate: above every provider's documented limit.
const maxBackfillRate = 1000

// backfillProviders lists the providers with a backfill source in the
// registry's order, for the usage: stripe|paddle|github.
func backfillProviders() string {
	var names []string
	for _, src := range backfill.Sources() {
		names = append(names, src.Provider)
	}
	return strings.Join(names, "|")
}

func runBackfill(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlags("backfill", backfillUsage(), stdout)
	name := fs.String("provider", "", "the provider: "+strings.Join(backfill.Providers(), ", ")+" (required)")
	since := fs.String("since", "72h", "start of the range: when the events occurred")
	until := fs.String("until", "", "end of the range (default: now)")
	dryRun := fs.Bool("dry-run", false, "list the missing events, ingest nothing (the saved progress is left alone)")
	rateFlag := fs.String("rate", "0", fmt.Sprintf("at most N API requests a second, e.g. 10 or 10/s (0: no bound but the API's 429s), up to %d", maxBackfillRate))
	restart := fs.Bool("restart", false, "start over on the range instead of continuing an interrupted run")
	redeliver := fs.Bool("redeliver", false, "ask the provider to send the missing webhooks again instead of ingesting the API's copy (github)")
	asJSON := fs.Bool("json", false, "print the counts as one JSON object")
	maxPages := fs.Int("max-pages", 0, "most API pages the run reads (0: HUB_BACKFILL_MAX_PAGES)")
	maxEvents := fs.Int("max-events", 0, "most events the API may list to the run (0: HUB_BACKFILL_MAX_EVENTS)")
	maxTime := fs.Duration("max-time", 0, "longest the run may take (0: HUB_BACKFILL_MAX_RUN_TIME)")
	releaseLease := fs.Bool("release-lease", false, "take back the provider's lease from a run that was killed, and exit")
	force := fs.Bool("force", false, "with --release-lease: release it even while its holder on another machine still renews it")
	if err := parseNoArgs(fs, args, "backfill takes no arguments; the provider and the range are flags"); err != nil {
		return err
	}
	if *name == "" {
		return usageErr("--provider is required (" + strings.Join(backfill.Providers(), ", ") + ")")
	}
	if !slices.Contains(backfill.Providers(), *name) {
		return usageErr(fmt.Sprintf("--provider: %q has no backfill (want %s)", *name, strings.Join(backfill.Providers(), ", ")))
	}
	if *maxPages < 0 || *maxEvents < 0 || *maxTime < 0 {
		return usageErr("--max-pages, --max-events and --max-time must not be negative")
	}
	if *force && !*releaseLease {
		return usageErr("--force goes with --release-lease")
	}
	if *releaseLease {
		return releaseBackfillLease(ctx, *name, *force, stdout)
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
	// What the run prints carries what the provider's API wrote (ids,
	// reasons): the API credentials are hidden in all of it.
	secrets := cfg.BackfillSecrets()
	stdout = redact.Writer(stdout, secrets...)
	defer func() {
		if err != nil {
			err = redact.Hide(err, redact.Text(err.Error(), secrets...))
		}
	}()
	src, err := cfg.BackfillSource(*name, backfill.RateLimited(nil, rate))
	if err != nil {
		return err
	}
	if _, ok := src.(backfill.Redeliverer); *redeliver && !ok {
		return usageErr(fmt.Sprintf("--redeliver: %s cannot be asked to send a webhook again (only github can); without --redeliver the API's copy is ingested", *name))
	}
	st, closeDB, err := openStore(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer closeDB()
	log := slog.New(redact.Handler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}), cfg.BackfillSecrets()...))
	// The flags (not negative) override the configuration when set.
	bcfg := backfill.Config{Store: st, Ingester: st, MaxBodyBytes: cfg.MaxBodyBytes, Logger: log,
		MaxPages: cmp.Or(*maxPages, cfg.BackfillMaxPages), MaxEvents: cmp.Or(*maxEvents, cfg.BackfillMaxEvents),
		MaxRunTime: cmp.Or(*maxTime, cfg.BackfillMaxRunTime)}
	eng, err := backfill.New(bcfg)
	if err != nil {
		return err
	}
	req := backfill.Request{Since: s, Until: u, DryRun: *dryRun, Restart: *restart, Redeliver: *redeliver}
	bar := newProgressBar(stderr, !*asJSON)
	if bar != nil {
		req.Progress = bar.update
	}
	res, runErr := auditedBackfill(ctx, auditor(st, log), eng, src, req, *name, rate, bcfg)
	bar.done()
	if *asJSON {
		if err := printJSON(stdout, res); err != nil {
			return err
		}
	} else {
		printBackfill(stdout, res)
	}
	return backfillError(ctx, runErr, res, *name, *redeliver)
}

// backfillUsage is the help of `hub backfill`.
func backfillUsage() string {
	return `Usage: hub backfill --provider ` + backfillProviders() + ` [--since T] [--until T] [--dry-run] [--rate N/s] [--restart] [--redeliver] [--json]
                    [--max-pages N] [--max-events N] [--max-time D]
       hub backfill --provider ` + backfillProviders() + ` --release-lease [--force]

Lists the provider's events of the range through its API (Stripe GET /v1/events,
Paddle GET /events, GitHub the webhook's deliveries), finds those the hub never
received as webhooks, and ingests them as a webhook is ingested (archive row with
origin api and no signature, dedup row, outbox), so a late webhook of one of them
is answered as a duplicate and the stream gets each event once. The running hub's
relay publishes them within about a second (this command needs no NATS
connection; without a running hub they wait in the outbox, see ` + "`hub status`" + `).
GitHub's API gives a payload re-encoded, not the bytes GitHub signed; with
--redeliver (GitHub only) the command instead asks GitHub to send each missing
webhook again, signed and byte for byte, to the hook's URL, and ingests nothing
itself: fix the endpoint first, or the redeliveries fail like the originals.

Progress is saved after each page: an interrupted run (Ctrl-C, a failure) is
continued by the next one, on its own range, from the page after the last one
saved; --restart starts over instead. A missing event found means webhooks are
failing (wrong secret, endpoint down): look at hub_deliveries_total.

A run is bounded (--max-pages, --max-events, --max-time; defaults
HUB_BACKFILL_MAX_PAGES, HUB_BACKFILL_MAX_EVENTS, HUB_BACKFILL_MAX_RUN_TIME): past
one it stops with an error naming it, keeps what it ingested, and the next run
continues. A run holds the provider's lease while it works (renewed every 40 s);
one that was killed holds it until it lapses (2 minutes). --release-lease takes
it back at once: refused while its holder runs on this machine, or, on another
machine, while it still renews it (unless --force).

Credentials: ` + service.BackfillCredentialVars() + `
(base URLs HUB_*_API_URL); the provider's webhook secrets must be set too. Times
are durations before now (90m, 36h, 7d) or times (2026-11-30, RFC 3339). Exits 1
when the run fails or some events could not be ingested.
`
}

// backfillError is what `hub backfill` answers to how the run ended: how
// to go on after an interruption, a busy lease or a bound, and the events
// that failed.
func backfillError(ctx context.Context, runErr error, res backfill.Result, name string, redeliver bool) error {
	switch {
	case runErr != nil && ctx.Err() != nil:
		return fmt.Errorf("interrupted after %d pages: run the same command again to continue where it stopped", res.Pages)
	case errors.Is(runErr, store.ErrBackfillBusy) && res.Pages == 0:
		return fmt.Errorf("%w: wait for it, or, if it was killed, for its lease to lapse (%s after it last renewed it), or take it back: hub backfill --provider %s --release-lease",
			runErr, backfill.DefaultLease, name)
	case errors.Is(runErr, backfill.ErrBound):
		return fmt.Errorf("%w\nwhat it ingested is kept: run the same command again to continue, or raise the bound (--max-pages, --max-events, --max-time)%s", runErr, failuresText(res))
	case runErr != nil:
		return fmt.Errorf("%w%s", runErr, failuresText(res))
	case res.Failed > 0 && redeliver:
		return fmt.Errorf("%d missing events could not be redelivered; they are tried again by the next run:%s", res.Failed, failuresText(res))
	case res.Failed > 0:
		return fmt.Errorf("%d missing events could not be ingested; they are retried by the next run:%s", res.Failed, failuresText(res))
	}
	return nil
}

// failuresText lists a run's failures (the first backfill.MaxFailuresListed),
// one a line, "" when there are none.
func failuresText(res backfill.Result) string {
	if len(res.Failures) == 0 {
		return ""
	}
	var b strings.Builder
	for _, f := range res.Failures {
		id := cmp.Or(f.EventID, "(no usable id)")
		fmt.Fprintf(&b, "\n  %s:%s  %s", res.Provider, id, f.Reason)
	}
	if n := res.Failed - int64(len(res.Failures)); n > 0 {
		fmt.Fprintf(&b, "\n  … and %d more (in the hub's log at warn level)", n)
	}
	return b.String()
}

// releaseBackfillLease takes provider's backfill lease back from a run
// that died (`--release-lease`), saying who held it. It refuses while the
// holder is known to live: a process of this machine that still runs, or
// a lease still renewed (a run renews it every third of its length) unless
// force.
func releaseBackfillLease(ctx context.Context, provider string, force bool, stdout io.Writer) error {
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	st, closeDB, err := openStore(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer closeDB()
	cp, found, err := st.BackfillCheckpoint(ctx, provider)
	if err != nil {
		return err
	}
	now := time.Now()
	if !found || !cp.LeaseUntil.After(now) {
		fmt.Fprintf(stdout, "%s: no backfill holds the lease; nothing to release\n", provider)
		return nil
	}
	holder := fmt.Sprintf("%q (lease renewed until %s)", cp.LeaseOwner, cp.LeaseUntil.UTC().Format(time.RFC3339))
	// Taking a lease back is recorded in the audit trail, refused or not.
	o := auditor(st, nil)
	params := map[string]any{"force": force, "holder": cp.LeaseOwner, "lease_until": cp.LeaseUntil.UTC().Format(time.RFC3339)}
	target := "provider " + provider
	var refused error
	switch alive, known := leaseHolderAlive(cp.LeaseOwner); {
	case known && alive:
		refused = fmt.Errorf("%s: the lease is held by %s, a process of this machine that is still running: stop it (Ctrl-C or SIGTERM releases the lease)", provider, holder)
	case !known && !force:
		refused = fmt.Errorf("%s: the lease is held by %s on another machine, which may still be running (a running backfill renews it every %s): stop it, wait for the lease to lapse, or use --force if you know it is dead",
			provider, holder, backfill.DefaultLease/3)
	}
	if refused != nil {
		if err := o.Refuse(ctx, ops.ActionBackfillRelease, target, params, refused); err != nil {
			return fmt.Errorf("%w (and: %w)", refused, err)
		}
		return refused
	}
	var prev hub.BackfillCheckpoint
	err = o.RunAudited(ctx, ops.ActionBackfillRelease, target, params, func() (any, error) {
		var err error
		prev, _, err = st.TakeBackfillLease(ctx, provider)
		return map[string]any{"released": prev.LeaseOwner, "pages": prev.Pages}, err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: released the lease of %q (held until %s); the next run continues its unfinished window from page %d\n",
		provider, prev.LeaseOwner, prev.LeaseUntil.UTC().Format(time.RFC3339), prev.Pages+1)
	return nil
}

// auditedBackfill runs req, recorded in the audit trail (a dry run, which
// changes nothing, is not).
func auditedBackfill(ctx context.Context, o *ops.Ops, eng *backfill.Engine, src backfill.Source, req backfill.Request,
	name string, rate float64, bcfg backfill.Config) (backfill.Result, error) {
	if req.DryRun {
		return eng.Run(ctx, src, req)
	}
	params := map[string]any{"provider": name, "since": req.Since.UTC().Format(time.RFC3339), "until": windowEnd(req.Until),
		"restart": req.Restart, "redeliver": req.Redeliver, "rate": rate,
		"max_pages": bcfg.MaxPages, "max_events": bcfg.MaxEvents, "max_time": bcfg.MaxRunTime.String()}
	var res backfill.Result
	err := o.RunAudited(ctx, ops.ActionBackfill, "provider "+name, params, func() (any, error) {
		var err error
		res, err = eng.Run(ctx, src, req)
		return res, err
	})
	return res, err
}

// auditor is the Ops that records the command's actions in the audit
// trail (hub/ops is its one writer); it runs no operation of its own.
func auditor(st *store.Store, log *slog.Logger) *ops.Ops {
	return ops.New(ops.Config{Archive: st, Logger: log})
}

// windowEnd is a window's end for the audit trail: RFC 3339, "" when open.
func windowEnd(u time.Time) string {
	if u.IsZero() {
		return ""
	}
	return u.UTC().Format(time.RFC3339)
}

// leaseHolderAlive tells whether a lease owner ("host:pid:suffix", as
// backfill.Config.Owner defaults to) is a process of this machine that is
// still running; known is false when the owner is on another machine or
// its name is not of that form.
func leaseHolderAlive(owner string) (alive, known bool) {
	parts := strings.Split(owner, ":")
	if len(parts) < 3 {
		return false, false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil || pid <= 0 || strings.Join(parts[:len(parts)-2], ":") != host {
		return false, false
	}
	return processAlive(pid), true
}

// parseRate reads --rate: N or N/s, 0..maxBackfillRate.
func parseRate(v string) (float64, error) {
	n, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), "/s"), 64)
	if err != nil || n < 0 || n > maxBackfillRate || n != n {
		return 0, usageErr(fmt.Sprintf("--rate: must be 0 (no bound) or a number of requests a second up to %d, e.g. 10/s, got %q", maxBackfillRate, v))
	}
	return n, nil
}

// openStore opens the hub's database, checks its migrations are applied,
// and returns its store (without relay grace: the running hubs' relays
// take the rows it ingests at once) and how to close it.
func openStore(ctx context.Context, url string) (*store.Store, func(), error) {
	pool, err := openDatabase(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	if err := checkSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, nil, err
	}
	return store.New(pool), pool.Close, nil
}

// checkSchema fails unless the hub's migrations are applied.
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	m, err := migrations.Hub(pool)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Check(ctx); err != nil {
		if errors.Is(err, migrate.ErrPending) {
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
		missing, would := r.WouldIngest, "ingested"
		if r.Redeliver {
			missing, would = r.WouldRedeliver, "redelivered"
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
	if t, ok := w.(*redact.TerminalWriter); ok {
		w = t.Raw() // the bar is the hub's own text; its \r must reach the terminal
	}
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
	switch {
	case p.Redelivered > 0:
		done, verb = p.Redelivered, "redelivered"
	case p.WouldIngest > 0:
		done, verb = p.WouldIngest, "would ingest"
	case p.WouldRedeliver > 0:
		done, verb = p.WouldRedeliver, "would redeliver"
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
