package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/internal/jsontext"
	"github.com/hookhub/hookhub/internal/startstop"
)

// ErrClosed is returned by GroupCommitter.Ingest after Stop.
var ErrClosed = errors.New("group committer closed")

// ErrNotStarted is returned by GroupCommitter.Ingest before Start.
var ErrNotStarted = errors.New("group committer not started")

// GroupCommitter shares one transaction and one commit among concurrent
// Ingest calls. Each committer goroutine takes everything queued while
// the previous commit ran, up to a cap, and commits it at once: far fewer
// commits, statements and round trips under a burst. A small batch waits
// up to the linger (Linger; none by default) for company first, so that a
// moderate rate is not committed one or two deliveries at a time.
//
// Each caller still gets its own outcome: first delivery, duplicate (also
// when the same event appears twice in one batch) or error. If a shared
// transaction fails, its deliveries are retried one caller at a time, so
// one bad delivery does not fail the others.
//
// It is a startstop.Service: Start starts the committer goroutines, Stop
// commits what is queued and waits for them.
type GroupCommitter struct {
	startstop.Base
	store      *Store
	max        int
	committers int
	timeout    time.Duration
	reqs       chan *ingestRequest
	alone      chan struct{} // a slot for the one heavy delivery committed alone at a time
	heavy      chan struct{} // a place for each heavy delivery committing or waiting (MaxHeavyWaiting)
	mu         sync.RWMutex  // held for reading while enqueueing, for writing by Start and Stop
	running    bool
	closed     bool
	// onCommit, when set, is told the size of every shared transaction.
	onCommit func(deliveries int)
	// linger is how long a small batch waits for more deliveries before it
	// commits (Linger); 0 commits at once.
	linger time.Duration
	// shareHeavy lets heavy deliveries join shared commits, as they did
	// before: only for the benchmark's comparison (BenchmarkHeavyBody).
	shareHeavy bool
	// marks are the publish marks waiting for a commit (groupmarks.go).
	marks markQueue
}

// GroupOption configures a GroupCommitter.
type GroupOption func(*GroupCommitter)

// OnCommit has f called with the number of deliveries of every
// transaction a committer starts, e.g. to observe how well batches form.
func OnCommit(f func(deliveries int)) GroupOption {
	return func(g *GroupCommitter) { g.onCommit = f }
}

// Linger has a batch smaller than an eighth of the most deliveries per
// transaction (at least 2) wait up to d for more before it commits, and
// commit as soon as it is no longer small. It trades up to d of latency at
// a moderate rate for fewer, larger commits; a busy hub's batches are
// large without waiting, and a batch cap of 1 never waits. 0 (the
// default) commits what is queued at once.
func Linger(d time.Duration) GroupOption {
	return func(g *GroupCommitter) { g.linger = max(0, d) }
}

type ingestRequest struct {
	ctx  context.Context
	ds   []hub.Delivery
	outs []hub.Outcome
	err  error
	done chan struct{}
}

// GroupCommitter returns a group committer of committers goroutines (once
// started) that commit up to maxBatch deliveries per transaction, each
// transaction bounded by timeout.
func (s *Store) GroupCommitter(maxBatch, committers int, timeout time.Duration, opts ...GroupOption) *GroupCommitter {
	g := &GroupCommitter{
		store:      s,
		max:        max(1, maxBatch),
		committers: max(1, committers),
		timeout:    timeout,
		reqs:       make(chan *ingestRequest, max(1, maxBatch)*max(1, committers)),
		alone:      make(chan struct{}, 1),
		heavy:      make(chan struct{}, 1+MaxHeavyWaiting),
		marks:      markQueue{queued: make(chan struct{}, 1), delay: DefaultMarkDelay},
	}
	for _, o := range opts {
		o(g)
	}
	return g
}

// Start starts the committer goroutines; Ingest works from then on. It
// fails with ErrClosed after Stop.
func (g *GroupCommitter) Start(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrClosed
	}
	runCtx, ok := g.StartInit(ctx)
	if !ok {
		return nil
	}
	for range g.committers {
		g.Go(func() { g.run(runCtx) })
	}
	g.Go(func() { g.runMarks(runCtx) })
	g.running = true
	return nil
}

// Stop commits what is queued (publish marks too), then stops the
// committers and waits for them. Ingest calls after Stop fail with ErrClosed. Committing what is
// queued is not bounded by ctx: each queued caller's own context and the
// commit timeout bound it. Idempotent; safe when never started.
func (g *GroupCommitter) Stop(context.Context) error {
	g.mu.Lock()
	g.closed, g.running = true, false
	g.mu.Unlock()
	g.StopWait()
	return nil
}

// Ingest queues deliveries for the next shared commit and waits for their
// outcome. Like Store.Ingest, an error means nothing may be acknowledged.
//
// Deliveries of a heavy body (Heavy) never join a shared commit: they are
// committed alone, one such commit at a time, so that their cost falls on
// them and not on the deliveries they would have shared it with.
func (g *GroupCommitter) Ingest(ctx context.Context, ds []hub.Delivery) ([]hub.Outcome, error) {
	if !g.shareHeavy && Heavy(ds) {
		return g.ingestAlone(ctx, ds)
	}
	r := &ingestRequest{ctx: ctx, ds: ds, done: make(chan struct{})}
	g.mu.RLock()
	if !g.running {
		closed := g.closed
		g.mu.RUnlock()
		if closed {
			return nil, ErrClosed
		}
		return nil, ErrNotStarted
	}
	select {
	case g.reqs <- r:
		g.mu.RUnlock()
	case <-ctx.Done():
		g.mu.RUnlock()
		return nil, errors.Join(hub.ErrUnavailable, ctx.Err())
	}
	// Once queued, the request is always answered: the committers drain
	// the queue before they exit. Waiting for the answer, even past ctx,
	// keeps the caller from reporting a failure for a delivery that is
	// being committed.
	<-r.done
	return r.outs, r.err
}

// run commits batches until ctx is cancelled (by Stop, once nothing can be
// queued any more), then what is left in the queue.
func (g *GroupCommitter) run(ctx context.Context) {
	batch := make([]*ingestRequest, 0, g.max)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		batch = batch[:0]
		select {
		case r := <-g.reqs:
			batch = append(batch, r)
		case <-ctx.Done():
			// Drain: nothing can be queued any more.
			for {
				select {
				case r := <-g.reqs:
					g.commit([]*ingestRequest{r})
				default:
					return
				}
			}
		}
		n := len(batch[0].ds)
		lingered := false
		for n < g.max {
			select {
			case r := <-g.reqs:
				batch = append(batch, r)
				n += len(r.ds)
				continue
			default:
			}
			// Nothing more queued. A small batch waits, once, up to the
			// linger for company, until it is small no longer: at a
			// moderate rate a commit of one or two deliveries costs
			// Postgres nearly what one of dozens does.
			if lingered || g.linger <= 0 || n >= g.lingerBelow() {
				break
			}
			lingered = true
			linger.Reset(g.linger)
		wait:
			for n < g.lingerBelow() {
				select {
				case r := <-g.reqs:
					batch = append(batch, r)
					n += len(r.ds)
				case <-linger.C:
					break wait
				case <-ctx.Done():
					break wait
				}
			}
			linger.Stop()
		}
		g.commit(batch)
	}
}

// lingerBelow is the size under which a batch is small: it waits up to
// the linger for more deliveries before it commits.
func (g *GroupCommitter) lingerBelow() int { return max(2, g.max/8) }

func (g *GroupCommitter) commit(batch []*ingestRequest) {
	// Callers that gave up before their turn are not committed: they have
	// already answered 503, and the provider will retry.
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = errors.Join(hub.ErrUnavailable, err)
			close(r.done)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	var all []hub.Delivery
	if len(live) == 1 {
		all = live[0].ds
	} else {
		n := 0
		for _, r := range live {
			n += len(r.ds)
		}
		all = make([]hub.Delivery, 0, n) // one allocation, not one per doubling
		for _, r := range live {
			all = append(all, r.ds...)
		}
	}
	if g.onCommit != nil {
		g.onCommit(len(all))
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	marks := g.takeMarks()
	outs, err := g.store.ingestCarrying(ctx, all, marks.marks())
	cancel()
	if err == nil {
		if marks != nil {
			marks.settle(nil)
		}
		off := 0
		for _, r := range live {
			r.outs = outs[off : off+len(r.ds)]
			off += len(r.ds)
			close(r.done)
		}
		return
	}
	// The marks were rolled back with the shared transaction: they are
	// recorded on their own once its callers are answered.
	defer g.markAlone(marks)
	var pgErr *pgconn.PgError
	if len(live) == 1 || !errors.As(err, &pgErr) {
		// Postgres is unreachable or too slow: every caller gets the error
		// now rather than after one more timeout each.
		for _, r := range live {
			r.err = err
			close(r.done)
		}
		return
	}
	// Postgres refused the shared transaction: retry each caller on its
	// own, so a failure is only reported where it belongs.
	for _, r := range live {
		ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
		r.outs, r.err = g.store.Ingest(ctx, r.ds)
		cancel()
		close(r.done)
	}
}

// MaxSharedValues is the most values and member names a delivery's
// archived JSON (its payload) may have to join a shared commit. Postgres
// parses a jsonb payload value by value (about 0.4 µs each on two cores:
// 100,000 tiny objects, 300,000 values and names, take 110 ms to 1.7 s
// under load); within a shared transaction that time is every other
// delivery's latency. Webhooks have hundreds to a few thousand; a body
// past this bound is accepted all the same, committed alone (Ingest).
const MaxSharedValues = 10_000

// Heavy reports whether a delivery of ds has more than MaxSharedValues
// values and member names in its archived JSON. It reads at most the
// first MaxSharedValues+1 of them, and nothing of a payload too short to
// have that many (every value or name takes two bytes or more, with its
// separator).
func Heavy(ds []hub.Delivery) bool {
	for _, d := range ds {
		b := d.Payload
		if b == nil {
			b = d.Body
		}
		if len(b) > 2*MaxSharedValues && jsontext.Values(b, MaxSharedValues) > MaxSharedValues {
			return true
		}
	}
	return false
}

// MaxHeavyWaiting is how many heavy deliveries may wait for the one
// committing alone; one more is refused at once (ErrUnavailable: 503 with
// Retry-After, and the provider retries), so that a burst of heavy bodies
// never holds the hub's in-flight requests waiting.
const MaxHeavyWaiting = 4

// ingestAlone commits ds in a transaction of their own, after the heavy
// commit before them: waiting for it is bounded by ctx and by
// MaxHeavyWaiting (past either the caller answers 503 and the provider
// retries), the commit by the commit timeout. Stop waits for a commit
// under way.
func (g *GroupCommitter) ingestAlone(ctx context.Context, ds []hub.Delivery) ([]hub.Outcome, error) {
	select {
	case g.heavy <- struct{}{}:
		defer func() { <-g.heavy }()
	default:
		return nil, fmt.Errorf("%w: %d heavy bodies are waiting to be committed alone", hub.ErrUnavailable, MaxHeavyWaiting)
	}
	select {
	case g.alone <- struct{}{}:
		defer func() { <-g.alone }()
	case <-ctx.Done():
		return nil, errors.Join(hub.ErrUnavailable, ctx.Err())
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.running {
		if g.closed {
			return nil, ErrClosed
		}
		return nil, ErrNotStarted
	}
	if g.onCommit != nil {
		g.onCommit(len(ds))
	}
	// As in a shared commit, the caller's cancellation does not abort a
	// commit under way.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.timeout)
	defer cancel()
	return g.store.Ingest(cctx, ds)
}
