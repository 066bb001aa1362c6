package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/internal/backoff"
	"github.com/hookhub/hookhub/schema"
)

// Outbox is the store side of the relay.
type Outbox interface {
	// Claim leases up to limit due events for lease: nobody else claims
	// them meanwhile, and a relay that dies leaves them due after it.
	Claim(ctx context.Context, limit int, lease time.Duration) ([]hub.OutboxRow, error)
	RetryNow(ctx context.Context) (int64, error)
	OutboxBacklog(ctx context.Context) (hub.Backlog, error)
	RecordPublished(ctx context.Context, results []hub.PublishResult) error
}

// Defaults applied by Config.WithDefaults to zero fields.
const (
	DefaultBatchSize      = 256
	DefaultPublishTimeout = 10 * time.Second
	// DefaultFastPublishTimeout, or PublishTimeout when shorter.
	DefaultFastPublishTimeout = 3 * time.Second
	DefaultMinBackoff         = 100 * time.Millisecond
	// DefaultMaxBackoff, or DuplicateWindow/4 when shorter (but at least
	// MinBackoff).
	DefaultMaxBackoff   = 10 * time.Second
	DefaultPollInterval = time.Second
	DefaultMarkDelay    = 50 * time.Millisecond
	DefaultMarkBatch    = 1024
)

// Config configures a Relay. Zero fields take the defaults (WithDefaults).
type Config struct {
	Stream          string        // required
	DuplicateWindow time.Duration // the stream's; required
	BatchSize       int           // rows per claim; default DefaultBatchSize
	PublishTimeout  time.Duration // wait for a claimed batch's PubAcks; default DefaultPublishTimeout
	// Lease is how long a claimed batch is this relay's: past it, another
	// relay may claim what it did not record. Default 3×PublishTimeout.
	Lease time.Duration
	// FastPublishTimeout bounds the fast path's wait for its PubAcks
	// (default DefaultFastPublishTimeout): an ack lost in a leader change
	// must not hold a fast path loop for long; what it did not confirm, the
	// relay retries.
	FastPublishTimeout time.Duration
	MinBackoff         time.Duration // first retry delay; default DefaultMinBackoff
	MaxBackoff         time.Duration // retry delay cap; default min(DefaultMaxBackoff, window/4)
	PollInterval       time.Duration // look for due rows without a wake-up; default DefaultPollInterval
	// MarkDelay and MarkBatch bound how long, and for how many rows, the
	// fast path gathers results before it marks them in one statement;
	// default DefaultMarkDelay and DefaultMarkBatch.
	MarkDelay time.Duration
	MarkBatch int
	// Grace is the store's relay grace (store.WithRelayGrace): how long a
	// new row is left to the fast path before the claiming relay may take
	// it. The fast path publishes a row only while it is younger (by Now,
	// from the row's ReceivedAt) than Grace less a fifth, and than half the
	// duplicate window; an older row is left to the relay
	// (hub_publish_total{outcome="expired"}), so that the two never publish
	// one row far apart (see RunFast). 0: a store without grace; the
	// window's bound still applies.
	Grace   time.Duration
	Logger  *slog.Logger
	Metrics *metrics.Metrics
	Now     func() time.Time
	// Tracer, when set, traces each publish and carries the span's context
	// in the message headers; nil leaves tracing off.
	Tracer trace.Tracer
}

// WithDefaults returns a copy of c with every zero field that has a
// default set to it. New calls it, then Validate.
func (c Config) WithDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.Lease == 0 {
		c.Lease = 3 * c.PublishTimeout
	}
	if c.FastPublishTimeout == 0 {
		c.FastPublishTimeout = min(DefaultFastPublishTimeout, c.PublishTimeout)
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = max(c.MinBackoff, min(DefaultMaxBackoff, c.DuplicateWindow/4))
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.MarkDelay == 0 {
		c.MarkDelay = DefaultMarkDelay
	}
	if c.MarkBatch == 0 {
		c.MarkBatch = DefaultMarkBatch
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate checks c as it is (a zero field that has a default fails until
// WithDefaults fills it in) and names every field at fault.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("relay: %s %s", field, fmt.Sprintf(format, args...)))
	}
	if c.Stream == "" {
		bad("Stream", "is required")
	}
	if c.DuplicateWindow <= 0 {
		bad("DuplicateWindow", "is required (positive), got %s", c.DuplicateWindow)
	}
	if c.BatchSize < 1 {
		bad("BatchSize", "must be at least 1, got %d", c.BatchSize)
	}
	for _, d := range []struct {
		field string
		value time.Duration
	}{
		{"PublishTimeout", c.PublishTimeout}, {"Lease", c.Lease}, {"FastPublishTimeout", c.FastPublishTimeout},
		{"MinBackoff", c.MinBackoff}, {"PollInterval", c.PollInterval}, {"MarkDelay", c.MarkDelay},
	} {
		if d.value <= 0 {
			bad(d.field, "must be positive, got %s", d.value)
		}
	}
	if c.MaxBackoff < c.MinBackoff {
		bad("MaxBackoff", "must be at least MinBackoff (%s), got %s", c.MinBackoff, c.MaxBackoff)
	}
	if c.MarkBatch < 1 {
		bad("MarkBatch", "must be at least 1, got %d", c.MarkBatch)
	}
	if c.Grace < 0 {
		bad("Grace", "must not be negative, got %s", c.Grace)
	}
	if c.Logger == nil {
		bad("Logger", "is required")
	}
	if c.Now == nil {
		bad("Now", "is required")
	}
	return errors.Join(errs...)
}

// Relay publishes the outbox to JetStream: the fast path (RunFast) and the
// claiming relay (Run), and the copies of `hub republish` (Republish), all
// through one code path (send, settle, message).
type Relay struct {
	cfg    Config
	outbox Outbox
	js     jetstream.JetStream
	wake   chan struct{}
	fresh  chan hub.OutboxRow // the fast path: rows just committed
	// fastMaxAge is the age past which the fast path leaves a row to the
	// relay (see Config.Grace).
	fastMaxAge time.Duration
	// streamTrouble receives a value when a publish failed as if the
	// stream were missing; a Keeper checks the stream at once.
	streamTrouble chan struct{}
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

// New returns a Relay. js should be created with
// jetstream.WithPublishAsyncTimeout so that no PubAck future waits forever.
func New(outbox Outbox, js jetstream.JetStream, cfg Config) (*Relay, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Relay{cfg: cfg, outbox: outbox, js: js, wake: make(chan struct{}, 1),
		fresh:         make(chan hub.OutboxRow, 16*cfg.BatchSize),
		fastMaxAge:    fastMaxAge(cfg.Grace, cfg.DuplicateWindow),
		streamTrouble: make(chan struct{}, 1),
		recorded:      newRecordBarrier(),
	}, nil
}

// Enqueue hands a just-committed PENDING delivery to the fast path, which
// publishes it from memory and marks it PROCESSED without reading it back.
// It never blocks: when the fast path is saturated the row is left to the
// claiming relay, which takes it once its grace has passed.
func (r *Relay) Enqueue(d hub.Delivery) {
	row := hub.OutboxRow{
		ArchiveID: d.ArchiveID, Provider: d.Provider, EventID: d.EventID, EventType: d.EventType,
		Body: d.Body, ReceivedAt: d.ReceivedAt, OccurredAt: d.OccurredAt, TraceParent: d.TraceParent,
	}
	select {
	case r.fresh <- row:
	default:
		if r.cfg.Metrics != nil {
			r.cfg.Metrics.Published.WithLabelValues(metrics.PublishDeferred).Inc()
		}
	}
}

// fastMaxAge is the age past which the fast path leaves a row to the
// relay: the grace less a fifth, and at most half the duplicate window.
func fastMaxAge(grace, window time.Duration) time.Duration {
	if grace > 0 {
		return min(grace-grace/5, window/2)
	}
	return window / 2
}

// fastQueued is how many sent batches of the fast path may wait for their
// PubAcks behind the one being settled. With the batch being sent, at most
// fastQueued+2 batches per pipeline are in flight.
const fastQueued = 2

// MaxPending is how many async publishes the relay may have in flight
// with batchSize (Config.BatchSize) and fastPipelines RunFast loops: the
// jetstream.WithPublishAsyncMaxPending of the js given to New.
func MaxPending(batchSize, fastPipelines int) int {
	return ((fastQueued+2)*fastPipelines + 1) * batchSize
}

// RunFast runs the fast path until ctx is done, as a pipeline of three
// stages, so that no stage waits for another's round trip: the first takes
// what was enqueued while it sent its previous batch (up to BatchSize) and
// sends it with async publishes; the second waits for each sent batch's
// PubAcks; the third records the results, acknowledged rows PROCESSED,
// gathered into few statements (recordFast). When ctx is done it stops
// taking rows, and returns once what it sent is settled and recorded.
// Several RunFast pipelines may share a Relay.
//
// A row may wait in the fast path (its queue, a send stalled behind
// JetStream, the settle of earlier batches) for longer than the relay's
// grace, after which the claiming relay publishes it too; once the
// duplicate window has passed, JetStream would then store it twice. So the
// fast path publishes a row only while it is younger than fastMaxAge (the
// grace less a margin, and at most half the duplicate window), checked
// right before each publish, and leaves an older row to the relay without
// recording anything: it is due for the relay by then, or soon after.
//
// Why no row is ever stored twice, whoever publishes it and whenever the
// PubAcks arrive (the row's first_attempt_at is its commit):
//   - every fast-path publish of a row is sent within window/2 of its
//     receipt, before its commit + grace;
//   - the relay publishes a row without looking for it in the stream only
//     within window/2 of its first attempt; later it looks first (send);
//   - so a fast-path publish and a relay publish of one row are either
//     both within window/2 of its receipt, hence inside the duplicate
//     window of whichever JetStream stored first (the other is answered
//     Duplicate, a success), or the relay's comes after window/2 and
//     looks the message up first. This holds also when the relay takes a
//     row before its grace (RetryNow on a reconnect or a recreated stream
//     makes every PENDING row due, including rows the fast path holds),
//     and when the fast path's PubAck arrives after the grace: the row is
//     still PENDING then, the relay's publish is a duplicate or finds the
//     message, and whichever records second finds the row PROCESSED and
//     changes nothing;
//   - a fast-path publish that failed (no PubAck within its timeout, yet
//     the message may be stored) is recorded as a failure with a short
//     backoff: the relay's retries follow under the same rules.
//
// The message id protects every pair of publishes; no copy is sent from
// memory once only a look-up in the stream could protect it. (Clock skew
// between the hub, which reads the ages, and Postgres, which stamps
// first_attempt_at, eats into the window; it is seconds at worst against
// a window of minutes.)
func (r *Relay) RunFast(ctx context.Context) error {
	sent := make(chan *sentBatch, fastQueued)
	settled := make(chan settledBatch, fastQueued)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(settled)
		for b := range sent {
			// Settling outlives ctx: the messages are sent already.
			settled <- settledBatch{results: r.settle(context.WithoutCancel(ctx), b, r.cfg.FastPublishTimeout), epoch: b.epoch}
		}
	})
	wg.Go(func() { r.recordFast(ctx, settled) })
	defer wg.Wait()
	defer close(sent)
	for {
		var batch []hub.OutboxRow
		select {
		case <-ctx.Done():
			return nil
		case row := <-r.fresh:
			batch = append(make([]hub.OutboxRow, 0, min(r.cfg.BatchSize, 1+len(r.fresh))), row)
		}
	fill:
		for len(batch) < r.cfg.BatchSize {
			select {
			case row := <-r.fresh:
				batch = append(batch, row)
			default:
				break fill
			}
		}
		sent <- r.send(ctx, batch, sendOptions{fast: true})
	}
}

// settledBatch is a fast-path batch's results, with the recordBarrier
// epoch it was sent in.
type settledBatch struct {
	results []hub.PublishResult
	epoch   uint64
}

// markJob is a statement's worth of fast-path results, with the epochs of
// the batches they came from (one entry per batch).
type markJob struct {
	results []hub.PublishResult
	epochs  []uint64
}

// recordFast records the fast path's results until settled is closed.
// Each row costs Postgres a new version of its archive row whenever it is
// marked, but each statement and commit costs as much as dozens of rows:
// results are gathered for up to MarkDelay, or until there are MarkBatch
// of them, and recorded in one statement. The statement runs in its own
// goroutine and results keep being gathered meanwhile, so a slow statement
// never holds up the settling, hence the sending, of publishes: the
// messages are on the stream already, only the archive's status waits.
func (r *Relay) recordFast(ctx context.Context, settled <-chan settledBatch) {
	marks := make(chan markJob) // unbuffered: taken only by an idle marker
	marked := make(chan struct{})
	go func() {
		defer close(marked)
		for job := range marks {
			// Recording outlives ctx: the messages are on the stream already.
			mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if err := r.outbox.RecordPublished(mctx, job.results); err != nil {
				r.cfg.Logger.Warn("fast path: recording publishes failed; the relay takes the rows over after their grace", "err", err)
			}
			cancel()
			for _, e := range job.epochs {
				r.recorded.leave(e)
			}
		}
	}()
	defer func() {
		close(marks)
		<-marked
	}()
	var pending markJob
	due := false // MarkDelay has passed or MarkBatch is reached
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var handOff chan<- markJob // nil (never ready) until due
		if due && len(pending.results) > 0 {
			handOff = marks
		}
		select {
		case b, ok := <-settled:
			if !ok {
				if len(pending.epochs) > 0 {
					marks <- pending
				}
				return
			}
			if len(b.results) == 0 { // every row left to the relay: nothing to record
				r.recorded.leave(b.epoch)
				continue
			}
			if len(pending.epochs) == 0 {
				timer.Reset(r.cfg.MarkDelay)
			}
			pending.results = append(pending.results, b.results...)
			pending.epochs = append(pending.epochs, b.epoch)
			due = due || len(pending.results) >= r.cfg.MarkBatch
		case <-timer.C:
			due = true
		case handOff <- pending:
			pending, due = markJob{}, false
			timer.Stop()
		}
	}
}

// Notify wakes the relay: new rows were committed. It never blocks.
func (r *Relay) Notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Reconnected makes every PENDING row due and wakes the relay, for use as
// a NATS reconnect handler: the backlog of an outage drains at once.
func (r *Relay) Reconnected(ctx context.Context) {
	if _, err := r.outbox.RetryNow(ctx); err != nil {
		r.cfg.Logger.Warn("relay: make pending rows due", "err", err)
	}
	r.Notify()
}

// Run publishes due rows until ctx is done. It returns nil when ctx is
// cancelled; database errors are logged and retried. Several Run loops may
// share a Relay: while one waits for its batch's PubAcks, another claims
// the next batch (SKIP LOCKED keeps their rows apart).
func (r *Relay) Run(ctx context.Context) error {
	poll := time.NewTicker(r.cfg.PollInterval)
	defer poll.Stop()
	gauges := time.NewTicker(5 * time.Second)
	defer gauges.Stop()
	r.updateGauges(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		case <-poll.C:
		case <-gauges.C:
			r.updateGauges(ctx)
			continue
		}
		if err := r.pass(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("relay pass failed; will retry", "err", err)
		}
	}
}

// Drain publishes every PENDING row, including those waiting out a
// backoff, until none is left or ctx is done: one last attempt before a
// graceful shutdown. Rows it cannot publish stay PENDING for the next
// start.
func (r *Relay) Drain(ctx context.Context) error {
	if _, err := r.outbox.RetryNow(ctx); err != nil {
		return err
	}
	return r.pass(ctx)
}

// pass claims, publishes and records batches until a claim comes back
// short. A claim is a lease, not a transaction held open: the publishes
// run outside the database, and what this relay does not record before
// the lease ends (it died, say) becomes due for any relay again.
func (r *Relay) pass(ctx context.Context) error {
	for ctx.Err() == nil {
		// A restore that starts after this waits until the results are
		// recorded.
		epoch := r.recorded.enter()
		n, err := r.claimOnce(ctx)
		r.recorded.leave(epoch)
		if err != nil {
			return err
		}
		if n < r.cfg.BatchSize {
			return nil
		}
	}
	return ctx.Err()
}

// claimOnce claims a batch, publishes it and records the results. It
// returns how many events it claimed.
func (r *Relay) claimOnce(ctx context.Context) (int, error) {
	rows, err := r.outbox.Claim(ctx, r.cfg.BatchSize, r.cfg.Lease)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	results := r.publish(ctx, rows)
	// Recording outlives ctx: the messages are sent already.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.outbox.RecordPublished(rctx, results); err != nil {
		return len(rows), fmt.Errorf("record publishes (the events are due again after the lease): %w", err)
	}
	return len(rows), nil
}

func (r *Relay) updateGauges(ctx context.Context) {
	if r.cfg.Metrics == nil {
		return
	}
	b, err := r.outbox.OutboxBacklog(ctx)
	if err != nil {
		return
	}
	r.cfg.Metrics.OutboxPending.Set(float64(b.Pending))
	age := 0.0
	if !b.Oldest.IsZero() {
		age = max(0, r.cfg.Now().Sub(b.Oldest).Seconds())
	}
	r.cfg.Metrics.OutboxOldest.Set(age)
}

// publish sends a batch with async publishes and waits for every PubAck
// (or its failure) within PublishTimeout. Rows whose first attempt is
// older than half the duplicate window are first looked up in the stream.
func (r *Relay) publish(ctx context.Context, rows []hub.OutboxRow) []hub.PublishResult {
	return r.publishWithin(ctx, rows, r.cfg.PublishTimeout)
}

// publishWithin is publish with its own wait for the PubAcks.
func (r *Relay) publishWithin(ctx context.Context, rows []hub.OutboxRow, timeout time.Duration) []hub.PublishResult {
	return r.settle(ctx, r.send(ctx, rows, sendOptions{}), timeout)
}

// Republish publishes copies of archived events (`hub republish`): the
// same messages as the originals (exact body, the hub's headers), under the
// message id "<provider>:<event_id>:republish:<runID>", which the duplicate
// window cannot confuse with the original's, and with Hub-Republish-Of
// naming the original id. It waits for the PubAcks up to timeout and
// returns one result per row; nothing is recorded: the event's publication
// stays its original message's.
func (r *Relay) Republish(ctx context.Context, rows []hub.OutboxRow, runID string, timeout time.Duration) []hub.PublishResult {
	return r.settle(ctx, r.send(ctx, rows, sendOptions{copyRun: runID}), timeout)
}

// sendOptions are what distinguishes the publishers sharing send.
type sendOptions struct {
	// fast: the fast path's rows, published only while younger than
	// fastMaxAge (see RunFast), and tracked by the recordBarrier.
	fast bool
	// copyRun, when set, publishes copies for `hub republish`: no look-up
	// in the stream, the copy's message id and Hub-Republish-Of.
	copyRun string
}

// message is the hub's message for an event: the exact body on
// <provider>.<type>, with the headers subscribers decode (schema). A copy
// (copyRun set) has its own message id and names the original's.
func message(row hub.OutboxRow, subject, copyRun string) *nats.Msg {
	original := schema.MsgID(row.Provider, row.EventID)
	md := schema.Metadata{
		MsgID:      original,
		EventID:    row.EventID,
		Provider:   row.Provider,
		EventType:  row.EventType,
		ArchiveID:  row.ArchiveID.String(),
		ReceivedAt: row.ReceivedAt,
		OccurredAt: row.OccurredAt,
	}
	if copyRun != "" {
		md.MsgID = original + ":republish:" + copyRun
	}
	h := md.Header()
	if copyRun != "" {
		h.Set(schema.HeaderRepublish, original)
	}
	return &nats.Msg{Subject: subject, Data: row.Body, Header: h}
}

// sentBatch is a batch of rows whose publishes are sent: settle waits for
// their PubAcks.
type sentBatch struct {
	rows    []hub.OutboxRow
	results []hub.PublishResult // final for rows without a future
	futures []jetstream.PubAckFuture
	spans   []trace.Span // with a Tracer: the publish spans
	sentAt  time.Time    // settle's timeout runs from here
	// expired marks the fast path's rows left to the relay (no result);
	// nil when there are none.
	expired []bool
	epoch   uint64 // the fast path's recordBarrier epoch
	copy    bool   // copies of `hub republish`: not counted in the publish metrics
}

// send publishes rows with async publishes. Rows whose first attempt is
// older than half the duplicate window are first looked up in the stream.
// For the fast path (fast), rows older than fastMaxAge when their turn
// comes are not published: they are the relay's (see RunFast).
func (r *Relay) send(ctx context.Context, rows []hub.OutboxRow, opts sendOptions) *sentBatch {
	fast := opts.fast
	var epoch uint64
	if fast {
		// Before the first publish: a restore that starts after this waits
		// for these results to be recorded.
		epoch = r.recorded.enter()
	}
	now := r.cfg.Now()
	// Read once: a batch is held or not as a whole.
	held := r.held.Load()
	results := make([]hub.PublishResult, len(rows))
	futures := make([]jetstream.PubAckFuture, len(rows))
	subjects := make([]string, len(rows))
	var lookups []int
	for i, row := range rows {
		results[i].ArchiveID = row.ArchiveID
		// Whether a type can form a subject is decided when the delivery is
		// archived (an event whose type cannot is FAILED, never in the
		// outbox); an error here means a row that is not the hub's.
		subject, err := schema.Subject(row.Provider, row.EventType)
		if err != nil {
			results[i].Err, results[i].Permanent = err.Error(), true
			continue
		}
		subjects[i] = subject
		// Held rows are not published: no look-up for them (a long hold
		// makes every row old, and each batch would read the stream).
		if held == nil && opts.copyRun == "" && !row.FirstAttemptAt.IsZero() && now.Sub(row.FirstAttemptAt) > r.cfg.DuplicateWindow/2 {
			lookups = append(lookups, i)
		}
	}
	skip := make([]bool, len(rows))
	if len(lookups) > 0 {
		// An earlier attempt may have been stored, and JetStream will soon
		// (or already) not remember its id: look before publishing.
		found, err := r.findInStream(ctx, rows, subjects, lookups)
		for _, i := range lookups {
			switch seq, ok := found[schema.MsgID(rows[i].Provider, rows[i].EventID)]; {
			case err != nil:
				r.fail(&results[i], rows[i], fmt.Errorf("look up earlier attempt: %w", err))
				skip[i] = true
			case ok:
				results[i].Seq, results[i].PublishedAt = seq, r.cfg.Now()
				r.count(metrics.PublishFound, rows[i])
				skip[i] = true
			}
		}
	}
	var spans []trace.Span // ended once the batch is settled
	if r.cfg.Tracer != nil {
		spans = make([]trace.Span, len(rows))
	}
	var expired []bool
	for i, row := range rows {
		if skip[i] || subjects[i] == "" {
			continue
		}
		if held != nil {
			r.fail(&results[i], row, *held)
			continue
		}
		// Checked row by row: a publish can stall (max pending reached).
		if fast && r.fastMaxAge > 0 && r.cfg.Now().Sub(row.ReceivedAt) > r.fastMaxAge {
			if expired == nil {
				expired = make([]bool, len(rows))
			}
			expired[i] = true
			if r.cfg.Metrics != nil {
				r.cfg.Metrics.Published.WithLabelValues(metrics.PublishExpired).Inc()
			}
			continue
		}
		msg := message(row, subjects[i], opts.copyRun)
		if spans != nil {
			spans[i] = r.startPublish(ctx, row, msg)
		}
		f, err := r.js.PublishMsgAsync(msg, jetstream.WithExpectStream(r.cfg.Stream))
		if err != nil {
			r.fail(&results[i], row, err)
			continue
		}
		futures[i] = f
	}
	if expired != nil {
		n := 0
		for _, e := range expired {
			if e {
				n++
			}
		}
		r.cfg.Logger.Warn("fast path: rows held past the relay's grace are left to the relay",
			"rows", n, "batch", len(rows), "max_age", r.fastMaxAge)
	}
	return &sentBatch{rows: rows, results: results, futures: futures, spans: spans, sentAt: time.Now(),
		expired: expired, epoch: epoch, copy: opts.copyRun != ""}
}

// settle waits for the PubAcks of a sent batch until timeout after it was
// sent, and returns every row's result. The timeout runs from the send, not
// from the wait: batches queued behind a stalled one do not wait their
// full timeout again each.
func (r *Relay) settle(ctx context.Context, b *sentBatch, timeout time.Duration) []hub.PublishResult {
	rows, results := b.rows, b.results
	if b.spans != nil {
		defer endPublishSpans(b.spans, results)
	}
	wait, cancel := context.WithDeadline(ctx, b.sentAt.Add(timeout))
	defer cancel()
	for i, f := range b.futures {
		if f == nil {
			continue
		}
		var ack *jetstream.PubAck
		var err error
		select {
		case ack = <-f.Ok():
		case err = <-f.Err():
		case <-wait.Done():
			// Past the deadline, an answer that already arrived still counts.
			select {
			case ack = <-f.Ok():
			case err = <-f.Err():
			default:
				err = fmt.Errorf("no PubAck within %s", timeout)
			}
		}
		switch {
		case err != nil:
			r.fail(&results[i], rows[i], err)
		case b.copy:
			results[i].Seq, results[i].PublishedAt = ack.Sequence, r.cfg.Now()
		case ack.Duplicate:
			results[i].Seq, results[i].PublishedAt = ack.Sequence, r.cfg.Now()
			r.count(metrics.PublishDuplicate, rows[i])
		default:
			results[i].Seq, results[i].PublishedAt = ack.Sequence, r.cfg.Now()
			r.count(metrics.PublishOK, rows[i])
		}
	}
	r.logFailures(results, rows)
	if b.expired != nil {
		kept := results[:0:0]
		for i, res := range results {
			if !b.expired[i] {
				kept = append(kept, res)
			}
		}
		return kept
	}
	return results
}

func (r *Relay) count(outcome string, row hub.OutboxRow) {
	if r.cfg.Metrics == nil {
		return
	}
	r.cfg.Metrics.Published.WithLabelValues(outcome).Inc()
	if outcome != metrics.PublishError {
		r.cfg.Metrics.PublishLagSecond.Observe(r.cfg.Now().Sub(row.ReceivedAt).Seconds())
	}
}

func (r *Relay) fail(res *hub.PublishResult, row hub.OutboxRow, err error) {
	if streamTrouble(err) {
		select {
		case r.streamTrouble <- struct{}{}:
		default:
		}
	}
	res.Seq = 0
	res.Err = "publish: " + err.Error()
	res.RetryIn = r.backoff(row.Attempts)
	r.count(metrics.PublishError, row)
	r.cfg.Logger.Debug("publish failed; will retry",
		"provider", row.Provider, "event_id", row.EventID, "attempt", row.Attempts+1,
		"retry_in", res.RetryIn, "err", err)
}

// logFailures logs one line per batch with failures (an election fails
// thousands of publishes at once; one line each would flood the log).
func (r *Relay) logFailures(results []hub.PublishResult, rows []hub.OutboxRow) {
	failed, first := 0, -1
	for i, res := range results {
		if res.Seq == 0 && res.Err != "" {
			failed++
			if first < 0 {
				first = i
			}
		}
	}
	if failed > 0 {
		r.cfg.Logger.Warn("publishes failed; they stay PENDING and are retried",
			"failed", failed, "batch", len(results), "example_event", schema.MsgID(rows[first].Provider, rows[first].EventID),
			"err", results[first].Err, "retry_in", results[first].RetryIn)
	}
}

// backoff is MinBackoff doubled per earlier attempt, capped at MaxBackoff.
func (r *Relay) backoff(attempts int) time.Duration {
	return backoff.Exp(r.cfg.MinBackoff, r.cfg.MaxBackoff, attempts)
}

// findInStream reads the stream's headers on the rows' subjects from the
// earliest first attempt on (less a minute of clock skew), and returns the
// stream sequence of each wanted message id it finds. One scan serves a
// whole batch.
func (r *Relay) findInStream(ctx context.Context, rows []hub.OutboxRow, subjects []string, idx []int) (map[string]uint64, error) {
	want := make(map[string]bool, len(idx))
	var filters []string
	since := rows[idx[0]].FirstAttemptAt
	for _, i := range idx {
		want[schema.MsgID(rows[i].Provider, rows[i].EventID)] = true
		if !slices.Contains(filters, subjects[i]) {
			filters = append(filters, subjects[i])
		}
		if rows[i].FirstAttemptAt.Before(since) {
			since = rows[i].FirstAttemptAt
		}
	}
	found := make(map[string]uint64, len(idx))
	scan := Scan{Stream: r.cfg.Stream, Subjects: filters, StartTime: since.Add(-time.Minute), HeadersOnly: true}
	_, err := scan.Run(ctx, r.js, func(m ScanMsg) error {
		if id := m.Msg.Headers().Get(schema.HeaderMsgID); want[id] {
			found[id] = m.Meta.Sequence.Stream
			if len(found) == len(want) {
				return ErrStopScan
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}
