package backfill

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/internal/redact"
)

// Store is what the engine reads and writes in the hub's tables:
// hub/store's *Store, their only owner.
type Store interface {
	// KnownEvents returns which of ids the hub already accepted.
	KnownEvents(ctx context.Context, provider string, ids []string) (map[string]bool, error)
	AcquireBackfill(ctx context.Context, provider, owner string, since, until time.Time, restart bool, lease time.Duration) (hub.BackfillCheckpoint, error)
	SaveBackfill(ctx context.Context, owner string, c hub.BackfillCheckpoint, lease time.Duration) error
	RenewBackfill(ctx context.Context, provider, owner string, lease time.Duration) error
	ReleaseBackfill(ctx context.Context, provider, owner string) error
}

// Ingester commits deliveries: the webhook's own path (hub/store's Store,
// or the hub's group committer in front of it). The engine commits through
// hub.Ingest, which hands what is publishable to Config.Relay.
type Ingester interface {
	Ingest(ctx context.Context, ds []hub.Delivery) ([]hub.Outcome, error)
}

// Config configures an Engine.
type Config struct {
	Store    Store    // required
	Ingester Ingester // required
	// Relay takes each event committed PENDING for publishing, as it
	// takes a webhook's (hub.Ingest): in `hub serve`, hub/relay's Relay,
	// whose fast path publishes it at once. Optional: without it the
	// claiming relay publishes the event once the store's relay grace has
	// passed (`hub backfill` uses a store without grace, so a running
	// hub's relay takes it at its next poll).
	Relay hub.Enqueuer
	// MaxBodyBytes bounds an event's body, as HUB_MAX_BODY_BYTES and the
	// NATS server's max_payload bound a webhook's: a larger event is
	// counted failed, never committed (it could not be published). Default
	// hub.DefaultMaxBodyBytes.
	MaxBodyBytes int
	// MaxPublishBytes reports the largest body the stream can take now
	// (the NATS server's max_payload and the stream's max_msg_size, less
	// room for headers; 0 when unknown), as it bounds a webhook's: a larger
	// event is counted failed, never committed. Optional.
	MaxPublishBytes func() int
	// Owner names this process in checkpoint leases (default: host, pid
	// and a random suffix).
	Owner string
	// Lease is how long a run holds a provider's checkpoint without
	// renewing it (default DefaultLease): a run renews it every third of
	// it while it works, so a run that died blocks its provider for at
	// most Lease; past it, another run may take the checkpoint over.
	Lease time.Duration
	// MaxPages, MaxEvents and MaxRunTime bound one run (defaults
	// DefaultMaxPages, DefaultMaxEvents, DefaultMaxRunTime): the pages it
	// reads, the events those pages hold (in the window or not) and its
	// wall time. Past one, the run stops with an error wrapping ErrBound
	// that names it; what it ingested until then is kept and saved, and
	// the next run continues from there.
	MaxPages   int
	MaxEvents  int
	MaxRunTime time.Duration
	Now        func() time.Time
	Logger     *slog.Logger
	Metrics    *metrics.Metrics // optional

	// minLease, when positive, replaces MinLease in Validate: set by
	// tests only (export_test.go), for a lease whose renewals a test
	// waits through.
	minLease time.Duration
	// acquireTimeout, when positive, replaces AcquireTimeout: set by
	// tests only (export_test.go), for a lease statement whose answer is
	// lost.
	acquireTimeout time.Duration
}

// Config's defaults.
const (
	DefaultLease = 2 * time.Minute
	// DefaultMaxPages is 100,000 Stripe or GitHub events a run, 200,000
	// Paddle events: far more than a busy account's 72 hours.
	DefaultMaxPages   = 1000
	DefaultMaxEvents  = 200_000
	DefaultMaxRunTime = 30 * time.Minute
	// MinLease is the shortest Lease: a renewal every third of it.
	MinLease = 3 * time.Second
)

// ingestTimeout bounds a page's ingestion and the checkpoint's save, which
// a stopped run lets finish.
const ingestTimeout = time.Minute

// MaxFailuresListed bounds Result.Failures: the first failures of a run,
// with their reasons (all are counted in Failed and logged).
const MaxFailuresListed = 20

// ErrBound wraps the error of a run stopped by one of its bounds
// (Config.MaxPages, MaxEvents, MaxRunTime): an API that keeps paging, or a
// window too large for one run. The error names the bound.
var ErrBound = errors.New("backfill: run bound reached")

// ErrPanic is returned when a run panicked (a bug, met on some answer):
// the run is ended, the panic logged with its stack.
var ErrPanic = errors.New("backfill: run panicked")

// ErrCursorCycle is returned when the API gives a cursor the run has
// already read: its listing loops and would never end.
var ErrCursorCycle = errors.New("backfill: the api's cursors loop")

// WithDefaults returns a copy of c with every zero field that has a
// default set to it. New calls it, then Validate.
func (c Config) WithDefaults() Config {
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, hub.DefaultMaxBodyBytes)
	c.Lease = cmp.Or(c.Lease, DefaultLease)
	c.MaxPages = cmp.Or(c.MaxPages, DefaultMaxPages)
	c.MaxEvents = cmp.Or(c.MaxEvents, DefaultMaxEvents)
	c.MaxRunTime = cmp.Or(c.MaxRunTime, DefaultMaxRunTime)
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.Owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		c.Owner = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	return c
}

// Validate checks c as it is (a zero field that has a default fails until
// WithDefaults fills it in) and names every field at fault.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("backfill: %s %s", field, fmt.Sprintf(format, args...)))
	}
	if c.Store == nil {
		bad("Store", "is required")
	}
	if c.Ingester == nil {
		bad("Ingester", "is required")
	}
	if c.MaxBodyBytes < 1 {
		bad("MaxBodyBytes", "must be at least 1, got %d", c.MaxBodyBytes)
	}
	minLease := MinLease
	if c.minLease > 0 {
		minLease = c.minLease
	}
	if c.Lease < minLease {
		bad("Lease", "must be at least %s, got %s", minLease, c.Lease)
	}
	if c.MaxPages < 1 {
		bad("MaxPages", "must be at least 1, got %d", c.MaxPages)
	}
	if c.MaxEvents < 1 {
		bad("MaxEvents", "must be at least 1, got %d", c.MaxEvents)
	}
	if c.MaxRunTime <= 0 {
		bad("MaxRunTime", "must be positive, got %s", c.MaxRunTime)
	}
	if c.Owner == "" {
		bad("Owner", "is required")
	}
	if c.Now == nil {
		bad("Now", "is required")
	}
	if c.Logger == nil {
		bad("Logger", "is required")
	}
	return errors.Join(errs...)
}

// Engine backfills providers' events into the hub.
type Engine struct {
	cfg    Config
	ingest *hub.Ingest // commits, and hands publishable events to cfg.Relay
}

// New returns an Engine.
func New(cfg Config) (*Engine, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, ingest: hub.NewIngest(cfg.Ingester, cfg.Relay)}, nil
}

// Request is one run.
type Request struct {
	// Since and Until bound the window [Since, Until) of when the events
	// occurred; Since is required, Until defaults to now.
	Since, Until time.Time
	// DryRun lists the missing events without ingesting them; it neither
	// reads nor writes the checkpoint.
	DryRun bool
	// Restart drops an unfinished checkpoint and starts over on the
	// window; without it an unfinished run of the provider is continued,
	// on its own window, from the page after the last one ingested.
	Restart bool
	// MaxResumes, when positive, bounds how many runs continue one
	// unfinished run: the run that would continue it once more starts
	// over on its own window instead, and logs (warn) the part of the old
	// window it leaves unchecked (Result.Abandoned). Periodic runs set it
	// (DefaultMaxResumes), so a page the API or the parser keeps failing
	// cannot wedge a provider's backfill on a stale window; 0 always
	// continues (`hub backfill`, where the operator sees each failure).
	MaxResumes int
	// Redeliver asks the provider to send each missing event's webhook
	// again (the source must be a Redeliverer, else ErrNoRedeliver)
	// instead of ingesting the API's copy: the hub then receives the
	// original, signed bytes through its webhook endpoint. Nothing is
	// fetched or ingested by the run; the checkpoint applies as usual (a
	// page whose redeliveries were all asked for is not asked again), and a
	// dry run only counts what it would ask for. A page interrupted
	// mid-way may ask for some redeliveries twice: the hub answers the
	// second webhook as a duplicate. A later run asks again for an event
	// whose redelivered webhook has not arrived (yet, or failed again).
	Redeliver bool
	// Progress, when set, is called after each page.
	Progress func(Progress)
	// MaxListed bounds the missing events a dry run returns (default
	// 10,000); they are all counted.
	MaxListed int
}

// DefaultMaxResumes is the Request.MaxResumes of `hub serve`'s periodic
// runs.
const DefaultMaxResumes = 3

// Counts are what a run found.
type Counts struct {
	Pages    int64 `json:"pages"`
	Listed   int64 `json:"listed"`   // events of the window the API listed
	Already  int64 `json:"already"`  // already received (as webhooks, or by an earlier backfill)
	Ingested int64 `json:"ingested"` // missing, now ingested (0 in a dry run)
	// Redelivered: missing, and the provider was asked to send the webhook
	// again (Request.Redeliver; 0 in a dry run).
	Redelivered int64 `json:"redelivered"`
	Failed      int64 `json:"failed"` // missing, but unusable: malformed, no id or type, too large, fetch or redelivery failed, type cannot form a subject
	// WouldIngest and WouldRedeliver are what a dry run found missing: what
	// it would have ingested (or asked to redeliver).
	WouldIngest    int64 `json:"would_ingest,omitempty"`
	WouldRedeliver int64 `json:"would_redeliver,omitempty"`
}

// Progress is a run's state after a page.
type Progress struct {
	Provider string
	Counts
	// Covered is the part of the window listed so far, 0..1, from the
	// oldest event seen (sources list newest first).
	Covered float64
}

// MissingEvent is an event a dry run would ingest.
type MissingEvent struct {
	EventID    string    `json:"event_id"`
	EventType  string    `json:"event_type"`
	OccurredAt time.Time `json:"occurred_at,omitzero"`
}

// Failure is a missing event a run could not ingest (or redeliver), and
// why. EventID is empty when the API gave none the hub could use.
type Failure struct {
	EventID string `json:"event_id"`
	Reason  string `json:"reason"`
}

// Abandoned is an unfinished run a run gave up instead of continuing it
// (Request.MaxResumes): its window, and how far it had got.
type Abandoned struct {
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
	Pages   int64     `json:"pages"`
	Cursor  string    `json:"cursor"`
	Resumes int       `json:"resumes"`
	// UncheckedSince..UncheckedUntil is the part of its window the
	// current window does not cover (zero when it covers it all): no run
	// looks there again unless an operator does (`hub backfill --since
	// --until`).
	UncheckedSince time.Time `json:"unchecked_since,omitzero"`
	UncheckedUntil time.Time `json:"unchecked_until,omitzero"`
}

// Result is a run's outcome.
type Result struct {
	Provider string    `json:"provider"`
	Since    time.Time `json:"since"`
	Until    time.Time `json:"until"`
	DryRun   bool      `json:"dry_run"`
	// Redeliver: the run asked the provider to send the missing webhooks
	// again (Request.Redeliver) instead of ingesting them.
	Redeliver bool `json:"redeliver,omitempty"`
	// Resumed: the run continued an interrupted one (its window, from its
	// cursor); Total then adds that run's counts to this one's.
	Resumed bool `json:"resumed,omitempty"`
	// Abandoned: the run gave up an unfinished run and started over.
	Abandoned *Abandoned `json:"abandoned,omitempty"`
	Counts
	Total *Counts `json:"total,omitempty"`
	// Complete: the whole window was listed.
	Complete bool `json:"complete"`
	// Missing lists what a dry run found missing (at most MaxListed).
	Missing []MissingEvent `json:"missing,omitempty"`
	// Failures lists the first MaxFailuresListed events counted in
	// Failed, with their reasons.
	Failures []Failure `json:"failures,omitempty"`
}

// ErrWindow is returned for a window without a start, or whose end is not
// after its start.
var ErrWindow = errors.New("backfill: bad window")

// Run lists src's events of the window, page by page, and ingests those
// the hub never received, each through the webhook's own statement (archive
// row with origin api and no signature, dedup row, outbox entry, in one
// transaction), so a late webhook of one of them is answered as a
// duplicate and the stream gets each event once. After each page is fully
// ingested the checkpoint is saved, so a run interrupted anywhere (an
// error, a cancelled ctx, a crash, a bound) is continued by the next one
// from the page after the last one saved: a page ingested but not saved is
// listed again, and its events are then found present. The Result holds
// the counts so far, also with an error.
//
// A run is bounded (Config.MaxPages, MaxEvents, MaxRunTime: ErrBound), and
// fails on a cursor it has already read (ErrCursorCycle). Sources list
// newest first: a page whose events all occurred before the window ends
// the listing. Another run holding the provider's checkpoint fails it with
// hub.ErrBackfillBusy (outcome skipped).
func (e *Engine) Run(ctx context.Context, src Source, req Request) (res Result, err error) {
	name := src.Provider()
	res = Result{Provider: name, Since: req.Since, Until: req.Until, DryRun: req.DryRun, Redeliver: req.Redeliver}
	if res.Until.IsZero() {
		res.Until = e.cfg.Now()
	}
	if res.Since.IsZero() || !res.Until.After(res.Since) {
		return res, fmt.Errorf("%w: since %s, until %s", ErrWindow, res.Since.Format(time.RFC3339), res.Until.Format(time.RFC3339))
	}
	if req.MaxListed <= 0 {
		req.MaxListed = 10000
	}
	if _, ok := src.(Redeliverer); req.Redeliver && !ok {
		return res, fmt.Errorf("%w: %s", ErrNoRedeliver, name)
	}
	skipped := false
	if e.cfg.Metrics != nil {
		defer func() { e.observeRun(name, res, err, skipped) }()
	}
	// A panic (a source's parser meeting an answer it did not foresee)
	// ends this run only: `hub serve`'s webhooks and other providers go
	// on. It runs before observeRun (an error, never a success) and after
	// the lease is released.
	defer func() {
		if v := recover(); v != nil {
			text := redact.Answer([]byte(fmt.Sprint(v)), maxErrorText)
			e.cfg.Logger.Error("backfill: run panicked", "provider", name, "panic", text, "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %s: %s", ErrPanic, name, text)
		}
	}()
	// The run's own context: its wall-time bound, and a lease lost while
	// it works (the heartbeat) stop it with their cause.
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	runCtx, stopTimer := context.WithTimeoutCause(runCtx, e.cfg.MaxRunTime,
		fmt.Errorf("%w: %s ran for %s, the longest a run may (max run time)", ErrBound, name, e.cfg.MaxRunTime))
	defer stopTimer()
	defer func() {
		if err != nil && ctx.Err() == nil && runCtx.Err() != nil {
			if cause := context.Cause(runCtx); cause != nil && !errors.Is(err, cause) {
				err = cause
			}
		}
	}()
	var cp hub.BackfillCheckpoint
	if !req.DryRun {
		// Taking the lease is bounded by AcquireTimeout, not by the run
		// time: cut off by the run's end, the statement could still commit
		// after the release below had run, and leave the lease taken (seen
		// beside a second suite). A run whose time is up by then ends at
		// its first page, and gives the lease back.
		actx, cancel := context.WithTimeout(ctx, cmp.Or(e.cfg.acquireTimeout, AcquireTimeout))
		cp, err = e.acquire(actx, name, &res, req)
		cancel()
		if err != nil {
			skipped = errors.Is(err, hub.ErrBackfillBusy)
			if !skipped && actx.Err() != nil {
				// The lease may be taken (the statement committed) though
				// its answer was lost to the timeout or the caller's end:
				// give it back, or the next run is refused as busy until it
				// expires.
				e.release(ctx, name)
			}
			return res, err
		}
		heartbeat := e.heartbeat(runCtx, name, stop)
		defer func() {
			heartbeat()
			if !cp.Done() { // saving the last page released the lease
				e.release(ctx, name)
			}
		}()
	}
	err = e.list(runCtx, src, req, &res, &cp)
	return e.finish(res, cp), err
}

// AcquireTimeout bounds taking a provider's lease at the start of a run:
// a database that does not answer within it ends the run (and the lease,
// if it was taken all the same, is given back).
const AcquireTimeout = 10 * time.Second

// release gives back the provider's lease if this engine's owner holds
// it, within 5 s of its own (ctx may be done: the run ended).
func (e *Engine) release(ctx context.Context, name string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := e.cfg.Store.ReleaseBackfill(rctx, name, e.cfg.Owner); err != nil {
		e.cfg.Logger.Warn("backfill: release checkpoint", "provider", name, "err", err)
	}
}

// list is Run's listing: page after page from cp's cursor, each ingested
// (page), then saved in cp (save), until the listing ends, a cursor comes
// round again or a bound is reached.
func (e *Engine) list(ctx context.Context, src Source, req Request, res *Result, cp *hub.BackfillCheckpoint) error {
	name := src.Provider()
	cursor, covered := cp.Cursor, 0.0
	// The cursors read, as hashes: an API's cursor may be long.
	seen := map[[sha256.Size]byte]struct{}{}
	if cursor != "" {
		seen[sha256.Sum256([]byte(cursor))] = struct{}{}
	}
	var events int64
	for pages := 1; ; pages++ {
		page, err := src.List(ctx, res.Since, res.Until, cursor)
		if err != nil {
			return err
		}
		events += int64(len(page.Events))
		if pastWindow(page, res.Since) {
			// Newest first: what follows is older still.
			page.Next = ""
		}
		// A cursor read before: the page is ingested (its events are
		// real), but not saved, and the run stops.
		next := sha256.Sum256([]byte(page.Next))
		_, cycle := seen[next]
		cycle = cycle && page.Next != ""
		seen[next] = struct{}{}
		pc, oldest, err := e.page(ctx, src, req, res, page)
		res.Counts.add(pc)
		if err != nil {
			return err
		}
		if !req.DryRun && !cycle {
			if err := e.save(ctx, cp, pc, page.Next); err != nil {
				return err
			}
		}
		switch {
		case page.Next == "":
			covered = 1
		case !oldest.IsZero():
			covered = min(1, max(covered, float64(res.Until.Sub(oldest))/float64(res.Until.Sub(res.Since))))
		}
		if req.Progress != nil {
			req.Progress(Progress{Provider: name, Counts: res.Counts, Covered: covered})
		}
		switch {
		case page.Next == "":
			res.Complete = true
			return nil
		case cycle:
			return fmt.Errorf("%w: %s: page %d gave the cursor %q, which this run has already read",
				ErrCursorCycle, name, pages, snippet([]byte(page.Next)))
		case pages >= e.cfg.MaxPages:
			return fmt.Errorf("%w: %s: read %d pages, the most a run may (max pages); the next run continues from there",
				ErrBound, name, pages)
		case events >= int64(e.cfg.MaxEvents):
			return fmt.Errorf("%w: %s: the api listed %d events, the most a run may (max events); the next run continues from there",
				ErrBound, name, events)
		}
		cursor = page.Next
	}
}

// save adds a page's counts pc to cp and saves it with the cursor of the
// next page (none: the run is complete). It saves even when the run is
// being stopped (its time is up, Ctrl-C): the page is ingested, and the
// checkpoint says so.
func (e *Engine) save(ctx context.Context, cp *hub.BackfillCheckpoint, pc Counts, next string) error {
	addCounts(cp, pc)
	cp.Cursor = next
	if next == "" {
		cp.CompletedAt = e.cfg.Now()
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ingestTimeout)
	defer cancel()
	if err := e.cfg.Store.SaveBackfill(sctx, e.cfg.Owner, *cp, e.cfg.Lease); err != nil {
		cp.CompletedAt = time.Time{}
		return err
	}
	return nil
}

// pastWindow reports whether every event of page occurred before since
// (and the page has some): a newest-first listing has nothing more inside
// the window.
func pastWindow(page Page, since time.Time) bool {
	return len(page.Events) > 0 && !slices.ContainsFunc(page.Events, func(ev Event) bool {
		return ev.OccurredAt.IsZero() || !ev.OccurredAt.Before(since)
	})
}

// acquire takes the provider's checkpoint for the run: the unfinished run
// to continue, unless it was continued req.MaxResumes times already, or a
// fresh one on res's window.
func (e *Engine) acquire(ctx context.Context, name string, res *Result, req Request) (hub.BackfillCheckpoint, error) {
	cp, err := e.cfg.Store.AcquireBackfill(ctx, name, e.cfg.Owner, res.Since, res.Until, req.Restart, e.cfg.Lease)
	if err != nil {
		return cp, err
	}
	if cp.Pages > 0 && req.MaxResumes > 0 && cp.Resumes > req.MaxResumes {
		ab := &Abandoned{Since: cp.Since, Until: cp.Until, Pages: cp.Pages, Cursor: cp.Cursor, Resumes: cp.Resumes - 1}
		if cp.Since.Before(res.Since) {
			ab.UncheckedSince, ab.UncheckedUntil = cp.Since, res.Since
			if cp.Until.Before(res.Since) {
				ab.UncheckedUntil = cp.Until
			}
		}
		res.Abandoned = ab
		e.cfg.Logger.Warn("backfill: gave up an unfinished run that kept failing, starting over on the current window; the part of its window before the current one is not checked",
			"provider", name, "since", cp.Since, "until", cp.Until, "pages_done", cp.Pages, "cursor", cp.Cursor,
			"continued", ab.Resumes, "unchecked_since", ab.UncheckedSince, "unchecked_until", ab.UncheckedUntil)
		if e.cfg.Metrics != nil {
			e.cfg.Metrics.BackfillAbandoned.WithLabelValues(name).Inc()
		}
		if cp, err = e.cfg.Store.AcquireBackfill(ctx, name, e.cfg.Owner, res.Since, res.Until, true, e.cfg.Lease); err != nil {
			return cp, err
		}
	}
	if cp.Pages > 0 {
		res.Resumed, res.Since, res.Until = true, cp.Since, cp.Until
		e.cfg.Logger.Info("backfill: continuing an interrupted run", "provider", name,
			"since", cp.Since, "until", cp.Until, "pages_done", cp.Pages, "continued", cp.Resumes)
	}
	return cp, nil
}

// heartbeat renews the run's lease every third of it until the returned
// func is called; a lease lost (taken back by an operator) stops the run.
func (e *Engine) heartbeat(ctx context.Context, name string, stop context.CancelCauseFunc) (done func()) {
	hbCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(e.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-t.C:
			}
			err := e.cfg.Store.RenewBackfill(hbCtx, name, e.cfg.Owner, e.cfg.Lease)
			switch {
			case err == nil || hbCtx.Err() != nil:
			case errors.Is(err, hub.ErrBackfillBusy):
				stop(fmt.Errorf("%s: %w", name, err))
				return
			default:
				e.cfg.Logger.Warn("backfill: renew the lease", "provider", name, "err", err)
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

func (c *Counts) add(o Counts) {
	c.Pages += o.Pages
	c.Listed += o.Listed
	c.Already += o.Already
	c.Ingested += o.Ingested
	c.Redelivered += o.Redelivered
	c.Failed += o.Failed
	c.WouldIngest += o.WouldIngest
	c.WouldRedeliver += o.WouldRedeliver
}

// checkpointCounts is a checkpoint's totals.
func checkpointCounts(cp hub.BackfillCheckpoint) Counts {
	return Counts{Pages: cp.Pages, Listed: cp.Listed, Already: cp.Already, Ingested: cp.Ingested,
		Redelivered: cp.Redelivered, Failed: cp.Failed}
}

// addCounts adds c to a checkpoint's totals.
func addCounts(cp *hub.BackfillCheckpoint, c Counts) {
	t := checkpointCounts(*cp)
	t.add(c)
	cp.Pages, cp.Listed, cp.Already, cp.Ingested, cp.Redelivered, cp.Failed = t.Pages, t.Listed, t.Already, t.Ingested, t.Redelivered, t.Failed
}

// finish adds the checkpoint's totals to a resumed run's result.
func (e *Engine) finish(res Result, cp hub.BackfillCheckpoint) Result {
	if res.Resumed {
		t := checkpointCounts(cp)
		res.Total = &t
	}
	return res
}

func (e *Engine) observeRun(name string, res Result, err error, skipped bool) {
	m := e.cfg.Metrics
	outcome := metrics.BackfillOK
	switch {
	case skipped:
		outcome = metrics.BackfillSkipped
	case errors.Is(err, ErrBound) || errors.Is(err, ErrCursorCycle):
		outcome = metrics.BackfillBounded
	case err != nil:
		outcome = metrics.BackfillError
	case res.Failed > 0:
		outcome = metrics.BackfillPartial
	}
	m.BackfillRuns.WithLabelValues(name, outcome).Inc()
	if err == nil && res.Complete {
		m.BackfillLastSuccess.WithLabelValues(name).Set(float64(e.cfg.Now().Unix()))
	}
}
