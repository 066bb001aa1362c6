package ops

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/hookhub/hookhub/internal/backoff"
)

// Admission: every expensive operation of Ops is admitted by
// its cost before it runs, from whichever face calls it (the command
// line, the admin API, the console). There are two pools, each with a
// budget of its own:
//
//   - PoolReads: plans and dry runs (Bulk and Replay with DryRun), payload
//     filter pages (ListEventPage with Where), audit exports and charts;
//   - PoolActions: replays and bulk actions that publish.
//
// A read never takes the actions' capacity, so read-only sessions looping
// their most expensive reads cannot keep an admin's replay out; and an
// action never takes the reads'.
//
// An operation declares the cost it holds at once: the archive rows it
// may scan (its page bound: a bounded read scans a page at a time) and the
// bytes it keeps; a read that keeps more as it goes (the headers a plan
// reads) grows its permit (Permit.Grow) and stops at the pool's bound.
// Admission never waits: past a budget the operation is refused at once
// with an error wrapping ErrBusy and carrying how long to wait
// (RetryAfter), which the admin API and the console answer 429 with
// Retry-After, and the refusal is counted (hub_admission_refused_total).

// Admission pools (the "pool" label of hub_admission_refused_total).
const (
	PoolReads   = "reads"
	PoolActions = "actions"
)

// What is admitted (the "what" label of hub_admission_refused_total).
const (
	AdmitReplay      = "replay"
	AdmitDryRun      = "dry_run"
	AdmitBulk        = "bulk"
	AdmitBulkPlan    = "bulk_plan"
	AdmitPayload     = "payload_filter"
	AdmitCharts      = "charts"
	AdmitAuditExport = "audit_export"
)

// Cost is what an operation holds at once: archive rows it may scan and
// bytes it reads or keeps.
type Cost struct {
	Rows  int64
	Bytes int64
}

// Budget bounds one pool: the operations running at once (Slots) and
// the rows and bytes they hold together, and the rows it admits a second
// (RowsPerSecond: a token bucket of Rows tokens, refilled at that rate;
// an operation takes its declared rows when admitted and settles what it
// really scanned when it ends, so a read that scanned more than it
// declared delays the next ones). A zero field is unbounded here;
// Config.ReadBudget fills its zero fields with the defaults.
type Budget struct {
	Slots         int
	Rows          int64
	Bytes         int64
	RowsPerSecond int64
	// MinRows is the least an admitted operation costs in rows, however
	// little it scans: what a request costs beyond its rows (a round trip
	// to Postgres, a page to render), so that cheap reads looped fast are
	// bounded by the rate too (ReadBudgetOf: a fortieth of RowsPerSecond,
	// at most 40 reads a second).
	MinRows int64
}

// The default budget of the expensive reads of one hub
// (HUB_READ_MAX_AT_ONCE, HUB_READ_ROWS_PER_SECOND): two at once, holding
// at most 50,000 archive rows (two and a half payload filter pages) and
// 64 MiB (the headers a few large plans keep), admitting 10,000 archive
// rows or stream messages a second on average (a payload filter page
// every two seconds) with a burst of five seconds' worth. Chosen with
// BenchmarkReadsBesideIngest (docs/performance.md): beside eight sessions
// looping their most expensive reads, ingest's p99 was 16-36 ms within
// it and 96-377 ms with reads unbounded, against 2-5 ms alone on a quiet
// 2-core machine (so not within 1.5x); with reads paced as they scan
// (Permit.Pace) and a floor per read (Budget.MinRows), 3-8 ms in most
// runs against 2 ms alone (still not within 1.5x). Actions have their own pool:
// Config.MaxConcurrentReplays and MaxReplayBytesHeld.
const (
	DefaultReadSlots         = 2
	DefaultReadRowsPerSecond = 10_000
	DefaultReadBytes         = 64 << 20
	readBurstSeconds         = 5
)

// ReadBudgetOf is the reads' budget of slots reads at once and
// rowsPerSecond rows a second, with a burst of five seconds' worth (at
// least a payload filter page) and DefaultReadBytes:
// HUB_READ_MAX_AT_ONCE and HUB_READ_ROWS_PER_SECOND.
func ReadBudgetOf(slots int, rowsPerSecond int64) Budget {
	return Budget{Slots: slots, Rows: max(readBurstSeconds*rowsPerSecond, DefaultPayloadScanRows), Bytes: DefaultReadBytes,
		RowsPerSecond: rowsPerSecond, MinRows: max(1, rowsPerSecond/maxCheapReadsPerSecond)}
}

// maxCheapReadsPerSecond bounds the reads a second, however little each
// scans (Budget.MinRows): in BenchmarkReadsBesideIngest, eight sessions
// looping charts and audit export pages, each scanning next to nothing,
// ran 3,000 reads a second and slowed ingest 3.4x.
const maxCheapReadsPerSecond = 40

// streamMsgCost is what a stream message read costs, in archive rows:
// a headers-only read of the stream (a dry run, a plan's check of what
// is still there) slowed ingest several times more per message than a
// payload filter per archive row in BenchmarkReadsBesideIngest (the
// stream's server is the one ingest publishes to).
const streamMsgCost = 5

// AdmissionRetryAfter is how long a refused operation is told to wait
// (Retry-After) when nothing better is known.
const AdmissionRetryAfter = 5 * time.Second

// BusyError is an operation refused by admission: it wraps ErrBusy (code
// EBUSY: 429) and says how long to wait.
type BusyError struct {
	Pool, What string
	Reason     string
	Wait       time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%s: %s; try again in %s", ErrBusy.Error(), e.Reason, e.Wait)
}

// Unwrap makes a BusyError an ErrBusy (errors.Is) and so of code EBUSY.
func (e *BusyError) Unwrap() error { return ErrBusy }

// RetryAfter is how long the caller should wait before trying again.
func (e *BusyError) RetryAfter() time.Duration { return e.Wait }

// admission holds the pools; safe for concurrent use.
type admission struct {
	mu      sync.Mutex
	pools   map[string]*pool
	refused func(pool, what string) // counts a refusal; never nil
}

type pool struct {
	name  string
	max   Budget
	slots int
	held  Cost
	// tokens are the rows the pool may admit now (max.RowsPerSecond > 0):
	// at most max.Rows, refilled since last; below zero after a read that
	// scanned more than it declared.
	tokens float64
	last   time.Time
}

func newAdmission(reads, actions Budget, refused func(pool, what string)) *admission {
	if refused == nil {
		refused = func(string, string) {}
	}
	now := time.Now()
	return &admission{refused: refused, pools: map[string]*pool{
		PoolReads:   {name: PoolReads, max: reads, tokens: float64(reads.Rows), last: now},
		PoolActions: {name: PoolActions, max: actions, tokens: float64(actions.Rows), last: now},
	}}
}

// metered reports whether p admits rows at a rate.
func (p *pool) metered() bool { return p.max.RowsPerSecond > 0 && p.max.Rows > 0 }

// refill adds the tokens earned since p.last (at most max.Rows).
func (p *pool) refill(now time.Time) {
	if !p.metered() {
		return
	}
	p.tokens = min(float64(p.max.Rows), p.tokens+now.Sub(p.last).Seconds()*float64(p.max.RowsPerSecond))
	p.last = now
}

// Permit is an admitted operation's hold on its pool, until Release.
type Permit struct {
	a    *admission
	p    *pool
	what string
	cost Cost
	// declared is the rows taken from the pool's tokens when admitted;
	// scanned what the operation says it read (Scanned), -1 if it said
	// nothing (then the declared rows stand).
	declared, scanned int64
	// start and paced: when it was admitted and the rows it has read
	// since, as told to Pace.
	start time.Time
	paced int64
}

// pacedMsgs is how many stream messages a scan reads between two Paces.
const pacedMsgs = 256

// maxPaceSleep bounds one wait of Pace, so that a read keeps checking
// its context.
const maxPaceSleep = time.Second

// Pace is told, as a scan goes, the rows it has just read (a statement's
// chunk of archive rows, or a batch of stream messages times
// streamMsgCost); in a metered pool it waits until the read is within its
// share of the pool's rate (RowsPerSecond divided among Slots), so that a
// scan spreads its cost over time instead of taking the machine in one
// burst: what shows as ingest latency beside it (BenchmarkReadsBesideIngest).
// It returns ctx's error when ctx ends while it waits.
func (pm *Permit) Pace(ctx context.Context, rows int64) error {
	if pm == nil || pm.p == nil || !pm.p.metered() {
		return nil
	}
	pm.paced += rows
	share := float64(pm.p.max.RowsPerSecond) / float64(max(1, pm.p.max.Slots))
	due := pm.start.Add(time.Duration(float64(pm.paced) / share * float64(time.Second)))
	for wait := time.Until(due); wait > 0; wait = time.Until(due) {
		if err := backoff.Sleep(ctx, min(wait, maxPaceSleep)); err != nil {
			return err
		}
	}
	return nil
}

// Scanned records the archive rows or stream messages the operation
// really read, settled against the pool's rate when it is released.
func (pm *Permit) Scanned(rows int64) {
	if pm != nil {
		pm.scanned = rows
	}
}

// admit admits what, of cost c, into pool name, or refuses it with a
// *BusyError (counted).
func (a *admission) admit(name, what string, c Cost) (*Permit, error) {
	a.mu.Lock()
	p := a.pools[name]
	c.Rows = max(c.Rows, p.max.MinRows)
	p.refill(time.Now())
	reason, wait := "", AdmissionRetryAfter
	switch {
	case p.max.Slots > 0 && p.slots >= p.max.Slots:
		reason = fmt.Sprintf("%d %s are running, the most this hub runs at once", p.slots, poolWords(name))
	case p.max.Rows > 0 && p.held.Rows+c.Rows > p.max.Rows:
		reason = fmt.Sprintf("the %s running scan up to %d archive rows, and this one %d more: past the %d this hub scans at once", poolWords(name), p.held.Rows, c.Rows, p.max.Rows)
	case p.max.Bytes > 0 && p.held.Bytes+c.Bytes > p.max.Bytes:
		reason = fmt.Sprintf("the %s running hold %d MiB, past the %d MiB this hub holds at once", poolWords(name), (p.held.Bytes+c.Bytes)>>20, p.max.Bytes>>20)
	case p.metered() && p.tokens < float64(c.Rows):
		reason = fmt.Sprintf("the %s of the last seconds scanned their share: this hub scans at most %d archive rows a second for them", poolWords(name), p.max.RowsPerSecond)
		wait = time.Duration(math.Ceil((float64(c.Rows) - p.tokens) / float64(p.max.RowsPerSecond) * float64(time.Second)))
		wait = max(time.Second, wait.Round(time.Second))
	default:
		p.slots++
		p.held.Rows += c.Rows
		p.held.Bytes += c.Bytes
		if p.metered() {
			p.tokens -= float64(c.Rows)
		}
		a.mu.Unlock()
		return &Permit{a: a, p: p, what: what, cost: c, declared: c.Rows, scanned: -1, start: time.Now()}, nil
	}
	a.mu.Unlock()
	a.refused(name, what)
	return nil, &BusyError{Pool: name, What: what, Reason: reason, Wait: wait}
}

func poolWords(name string) string {
	if name == PoolReads {
		return "expensive reads (plans, dry runs, payload filters, exports, charts)"
	}
	return "replays and bulk actions"
}

// Grow adds n bytes to what the permit holds, as the operation reads
// them; past the pool's bytes it fails with a *BusyError (counted), and
// the operation stops (its caller releases the permit).
func (pm *Permit) Grow(n int64) error {
	a, p := pm.a, pm.p
	a.mu.Lock()
	p.held.Bytes += n
	pm.cost.Bytes += n
	over := p.max.Bytes > 0 && p.held.Bytes > p.max.Bytes
	a.mu.Unlock()
	if !over {
		return nil
	}
	a.refused(p.name, pm.what)
	return &BusyError{Pool: p.name, What: pm.what, Wait: AdmissionRetryAfter,
		Reason: fmt.Sprintf("the %s running hold more than %d MiB, the most this hub holds at once; narrow the range", poolWords(p.name), p.max.Bytes>>20)}
}

// Release gives the permit's slot and cost back; once.
func (pm *Permit) Release() {
	if pm == nil || pm.p == nil {
		return
	}
	a, p := pm.a, pm.p
	a.mu.Lock()
	p.slots--
	p.held.Rows -= pm.cost.Rows
	p.held.Bytes -= pm.cost.Bytes
	if p.metered() && pm.scanned >= 0 {
		// What it read less than it declared comes back; more is owed.
		p.refill(time.Now())
		// The debt is at most Rows: Rows/RowsPerSecond seconds of reads.
		scanned := max(pm.scanned, p.max.MinRows)
		p.tokens = max(-float64(p.max.Rows), min(float64(p.max.Rows), p.tokens+float64(pm.declared-scanned)))
	}
	a.mu.Unlock()
	pm.p = nil
}

// Held is what pool name holds now (for tests and /readyz-like views):
// the operations running and their cost.
func (o *Ops) Held(name string) (running int, held Cost) {
	a := o.admission
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pools[name]
	if p == nil {
		return 0, Cost{}
	}
	return p.slots, p.held
}

// Admit admits work of cost c into pool (PoolReads, PoolActions) under
// the same budget as Ops's own operations, or refuses it with a
// *BusyError (counted as what): for Go code that runs expensive work of
// its own beside them (the bench, tests). Release the permit when done.
func (o *Ops) Admit(pool, what string, c Cost) (*Permit, error) {
	if pool != PoolReads && pool != PoolActions {
		return nil, inputErr("pool", "%s is not an admission pool (%s or %s)", quote(pool), PoolReads, PoolActions)
	}
	return o.admission.admit(pool, what, c)
}

// admitRead admits an expensive read of cost c (PoolReads).
func (o *Ops) admitRead(what string, c Cost) (*Permit, error) {
	return o.admission.admit(PoolReads, what, c)
}
