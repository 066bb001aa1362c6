package relay

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/internal/startstop"
)

// Outbox is the store side of the relay.
type Outbox interface {
	// HoldNew leaves the events committed from now on to the fast path of
	// the process that committed them for grace: no relay claims them
	// before. New calls it with Config.Grace.
	HoldNew(grace time.Duration)
	// Claim leases up to limit due events for lease: nobody else claims
	// them meanwhile, and a relay that dies leaves them due after it.
	Claim(ctx context.Context, limit int, lease time.Duration) ([]hub.OutboxRow, error)
	RetryNow(ctx context.Context) (int64, error)
	OutboxBacklog(ctx context.Context) (hub.Backlog, error)
	RecordPublished(ctx context.Context, results []hub.PublishResult) error
}

// Relay publishes the outbox to JetStream: the fast path (fast.go) and the
// claiming relay (claim.go), both started by Start, and the copies of `hub
// republish` (Republish), all through one code path (send, settle,
// message: publish.go).
type Relay struct {
	cfg    Config
	outbox Outbox
	js     jetstream.JetStream
	life   startstop.Base
	wake   chan struct{}
	fresh  chan hub.OutboxRow // the fast path: rows just committed
	// natsUp receives a value when the NATS connection (re)opens (NATSUp).
	natsUp chan struct{}
	// fastMaxAge is the age past which the fast path leaves a row to the
	// relay (see Config.Grace).
	fastMaxAge time.Duration
	// checkStream receives a value when the Keeper should check the stream
	// at once: a publish failed as if the stream were missing, or NATS
	// (re)connected.
	checkStream chan struct{}
	// recorded tracks publishes until their results are in the archive,
	// for a stream restore (Keeper) to wait on.
	recorded *recordBarrier
	// held, when set by the Keeper, is why nothing is published: the
	// stream would acknowledge the messages and store them where no
	// subscriber looks (a subject transform). The rows stay PENDING.
	held atomic.Pointer[error]
}

// hold stops (err set) or resumes (nil) every publish; see Relay.held.
func (r *Relay) hold(err error) {
	if err == nil {
		r.held.Store(nil)
		return
	}
	r.held.Store(&err)
}

// New returns a Relay, not started (Start). It has outbox hold the events
// committed from then on for cfg.Grace (Outbox.HoldNew). js should be
// created with jetstream.WithPublishAsyncTimeout so that no PubAck future
// waits forever, and jetstream.WithPublishAsyncMaxPending(MaxPending(...)).
func New(outbox Outbox, js jetstream.JetStream, cfg Config) (*Relay, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	outbox.HoldNew(cfg.Grace)
	return &Relay{cfg: cfg, outbox: outbox, js: js, wake: make(chan struct{}, 1),
		fresh:       make(chan hub.OutboxRow, 16*cfg.BatchSize),
		natsUp:      make(chan struct{}, 1),
		fastMaxAge:  fastMaxAge(cfg.Grace, cfg.DuplicateWindow),
		checkStream: make(chan struct{}, 1),
		recorded:    newRecordBarrier(),
	}, nil
}

// Start starts the relay: Config.Workers fast-path pipelines (runFast),
// the claiming relay (run), and the reaction to NATSUp. It returns at
// once; the relay runs until Stop. Starting a started relay does nothing.
func (r *Relay) Start(ctx context.Context) error {
	runCtx, ok := r.life.StartInit(ctx)
	if !ok {
		return nil
	}
	for range r.cfg.Workers {
		r.life.Go(func() { r.runFast(runCtx) })
	}
	r.life.Go(func() { r.run(runCtx) })
	r.life.Go(func() { r.watchNATS(runCtx) })
	return nil
}

// Stop stops the relay's loops, waits until the fast path settled and
// recorded what it sent, then drains the outbox within ctx (Drain): one
// last attempt to publish every PENDING row. An error says the drain was
// incomplete: the rows left stay PENDING for the next start (this
// replica's or another's). Idempotent; nil when the relay never started.
func (r *Relay) Stop(ctx context.Context) error {
	if !r.life.StopInit() {
		return nil
	}
	r.life.Wait()
	if err := r.Drain(ctx); err != nil {
		return fmt.Errorf("drain incomplete, rows stay pending: %w", err)
	}
	return nil
}

// NATSUp tells the relay that the NATS connection (re)opened: it makes
// every PENDING row due (the backlog of an outage drains at once) and has
// the Keeper check the stream. It never blocks and may be called from
// nats.go's handler goroutines at any time, before Start too (the relay
// reacts once started).
func (r *Relay) NATSUp() {
	select {
	case r.natsUp <- struct{}{}:
	default:
	}
}

// watchNATS reacts to NATSUp until ctx is done.
func (r *Relay) watchNATS(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.natsUp:
			r.makeDue(ctx)
			r.wakeKeeper()
		}
	}
}

// wakeKeeper has the Keeper check the stream now. It never blocks.
func (r *Relay) wakeKeeper() {
	select {
	case r.checkStream <- struct{}{}:
	default:
	}
}
