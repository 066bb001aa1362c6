package destination

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/hookhub/hookhub/internal/backoff"
	"github.com/hookhub/hookhub/internal/buildinfo"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Headers every delivery carries besides the Standard Webhooks ones: what
// the hub's message headers say, under names a receiver's framework does
// not rewrite.
const (
	HeaderProvider   = "hookhub-provider"
	HeaderEventType  = "hookhub-event-type"
	HeaderOccurredAt = "hookhub-occurred-at" // RFC 3339; absent when the provider gave no plausible time
	HeaderArchiveID  = "hookhub-archive-id"
)

// Intervals of a runner's background work.
const (
	// StatePollInterval is how often a runner reads its state (paused,
	// disabled) from Postgres, so `hub destinations pause` takes effect
	// within it on every replica.
	StatePollInterval = 2 * time.Second
	// BacklogPollInterval is how often the backlog gauge is refreshed.
	BacklogPollInterval = 5 * time.Second
	// PurgeInterval is how often attempts past the retention are deleted.
	PurgeInterval = 10 * time.Minute
	purgeBatch    = 1000
)

// MaxWaitingRetries is how many failed events of an unordered destination
// may wait for their retry while the others are delivered (the consumer's
// MaxAckPending); past it, new events wait for a retry to settle.
const MaxWaitingRetries = 1000

// DefaultAttemptRetention is how long attempts are kept by default.
const DefaultAttemptRetention = 7 * 24 * time.Hour

// Options are what New needs besides the destination.
type Options struct {
	Pool      *pgxpool.Pool
	JetStream jetstream.JetStream
	// Stream is the hub's stream. Default subscriber.DefaultStream.
	Stream string
	// Metrics are the process's destination metrics (one NewMetrics for
	// every destination). Required.
	Metrics *Metrics
	// Registerer receives the subscriber library's metrics. Nil registers
	// them on a private registry.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// TracerProvider traces each message (see subscriber.Config); the
	// delivery carries the trace as traceparent either way.
	TracerProvider trace.TracerProvider
	// AttemptRetention is how long attempts are kept. Default
	// DefaultAttemptRetention; it must be at least the destination's
	// RetryFor (the horizon reads the first attempt).
	AttemptRetention time.Duration
	// ShutdownTimeout bounds the in-flight deliveries' finish on stop.
	// Default subscriber.DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// RetryBase and RetryMax bound the delay between a failed event's
	// attempts (Policy). Zero means DefaultBackoffBase, DefaultBackoffMax.
	RetryBase, RetryMax time.Duration
	// Circuit tunes the circuit breaker (Threshold, Cooldown,
	// MaxCooldown); zero fields get the defaults. Its ProbeTimeout is
	// the runner's.
	Circuit CircuitConfig
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Runner delivers one destination's events. It is a subscriber whose
// handler POSTs; see the package documentation.
type Runner struct {
	d       Destination
	o       Options
	log     *slog.Logger
	sub     *subscriber.Subscriber
	client  *Client
	circuit *Circuit
	policy  Policy
	limiter *rate.Limiter
	// slots bounds the HTTP attempts under way to Concurrency: the
	// subscriber's workers' and the parked events' scheduler's (send).
	slots chan struct{}
	// maxCooldown caps an event's retry delay while the circuit is open:
	// the failure is the endpoint's, and the event must follow soon after
	// a probe finds the endpoint back.
	maxCooldown time.Duration

	mu      sync.Mutex
	state   State
	changed chan struct{} // closed when state changes

	// disabling is set while a 410's state is being written: the state
	// read from Postgres meanwhile is older, and must not re-activate.
	disabling atomic.Bool
}

// New builds the runner of d. It does no I/O: Run creates the consumer and
// the destination's tables.
func New(d Destination, o Options) (*Runner, error) {
	if o.Metrics == nil {
		return nil, errors.New("destination: Options.Metrics is required")
	}
	o.Logger = cmp.Or(o.Logger, slog.Default())
	if o.Now == nil {
		o.Now = time.Now
	}
	o.AttemptRetention = cmp.Or(o.AttemptRetention, DefaultAttemptRetention)
	if o.AttemptRetention < time.Duration(d.RetryFor) {
		return nil, fmt.Errorf("destination %s: the attempt retention (%s) is shorter than retry_for (%s): the first attempt would be forgotten before the horizon", d.Name, o.AttemptRetention, time.Duration(d.RetryFor))
	}
	r := &Runner{
		d:   d,
		o:   o,
		log: o.Logger.With("destination", d.Name),
		client: NewClient(ClientConfig{
			Timeout:        time.Duration(d.Timeout),
			ConnectTimeout: time.Duration(d.ConnectTimeout),
			RootCAs:        d.RootCAs,
			MaxConns:       d.Concurrency,
			Redact:         d.Redactor(),
			AllowLinkLocal: d.AllowLinkLocal,
		}),
		policy: Policy{RetryFor: time.Duration(d.RetryFor), Base: o.RetryBase, Max: o.RetryMax,
			MaxRetryAfter: time.Duration(d.MaxRetryAfter)},
		slots:   make(chan struct{}, max(d.Concurrency, 1)),
		state:   StateActive,
		changed: make(chan struct{}),
	}
	cc := o.Circuit
	cc.ProbeTimeout = time.Duration(d.Timeout) + 5*time.Second
	r.circuit = NewCircuit(cc)
	r.maxCooldown = cmp.Or(cc.MaxCooldown, DefaultCircuitMaxCooldown)
	if d.RateLimit > 0 {
		r.limiter = rate.NewLimiter(rate.Limit(d.RateLimit), max(1, int(d.RateLimit)))
	}
	// Events waiting for their retry stay unacknowledged (a nak with a
	// delay), so the consumer's MaxAckPending must leave room for many of
	// them besides the ones in flight: a few events the receiver keeps
	// refusing must not hold back the others.
	maxAckPending := max(MaxWaitingRetries, 2*d.Concurrency)
	if d.Ordered {
		// One message outstanding: a failed one is redelivered before any
		// later one, so the line holds.
		maxAckPending = 1
	}
	start, err := ParseStart(d.Start)
	if err != nil {
		return nil, fmt.Errorf("destination %s: start: %w", d.Name, err)
	}
	sub, err := subscriber.New(subscriber.Config{
		Start:           start,
		Name:            d.Name,
		Pool:            o.Pool,
		JetStream:       o.JetStream,
		Stream:          o.Stream,
		Migrations:      Migrations(d.Name),
		Concurrency:     d.Concurrency,
		MaxAckPending:   maxAckPending,
		AckWait:         time.Duration(d.Timeout) + 20*time.Second,
		ShutdownTimeout: o.ShutdownTimeout,
		Logger:          o.Logger,
		Registerer:      o.Registerer,
		Now:             o.Now,
		TracerProvider:  o.TracerProvider,
		Admit:           r.admit,
		ResendReplays:   true,
		RecordBatch:     r.recordDelivered,
	})
	if err != nil {
		return nil, fmt.Errorf("destination %s: %w", d.Name, err)
	}
	for _, s := range d.Subjects {
		sub.HandleEffect(s, r.handle)
	}
	sub.Background("state", r.watchState)
	sub.Background("backlog", r.watchBacklog)
	sub.Background("purge", r.purge)
	sub.Background("parked", r.watchParked)
	r.sub = sub
	return r, nil
}

// Name is the destination's name.
func (r *Runner) Name() string { return r.d.Name }

// Destination is the configuration the runner was built with.
func (r *Runner) Destination() Destination { return r.d }

// Healthy reports why the runner is not delivering, or nil (see
// subscriber.Subscriber.Healthy). A paused, disabled or open-circuit
// destination is healthy: it shows in its state, metrics and alerts.
func (r *Runner) Healthy() error { return r.sub.Healthy() }

// Run registers the destination, then delivers until ctx is cancelled
// (subscriber.Subscriber.Run).
func (r *Runner) Run(ctx context.Context) error {
	if err := CheckName(ctx, r.o.Pool, r.d.Name); err != nil {
		return err
	}
	m := r.o.Metrics
	m.SetState(r.d.Name, StateActive)
	m.SetCircuitOpen(r.d.Name, false)
	err := r.sub.Run(ctx)
	if err != nil {
		return fmt.Errorf("destination %s: %w", r.d.Name, err)
	}
	return nil
}

// currentState returns the state and a channel closed when it changes.
func (r *Runner) currentState() (State, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state, r.changed
}

// setState sets the state and reports whether it changed.
func (r *Runner) setState(s State) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s == r.state {
		return false
	}
	r.state = s
	close(r.changed)
	r.changed = make(chan struct{})
	r.o.Metrics.SetState(r.d.Name, s)
	return true
}

// admit is the subscriber's worker gate: a worker takes its next message
// only once the destination is active and its circuit lets it (one probe
// at a time while open). The rate limit is not taken here but in send,
// once the worker holds a message: an idle worker holding a token would
// let a burst past the limit.
func (r *Runner) admit(ctx context.Context) error {
	for {
		s, changed := r.currentState()
		if s == StateActive {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := r.circuit.Admit(ctx); err != nil {
		return err
	}
	r.o.Metrics.SetCircuitOpen(r.d.Name, r.circuit.State() != CircuitClosed)
	return nil
}

// handle delivers one event: it POSTs (send), records a failed attempt
// and tells the library what to do with the message. A delivered attempt
// is returned as the event's record: the library writes it
// (recordDelivered) in the transaction that records the event as
// processed, with a batch of others. A failed event whose retry is more
// than MaxHeldRetry away is returned as a parked record instead, written
// the same way: its message is acked and the scheduler (sendDue) sends it
// again from Postgres. On an ordered destination an event with parked
// events before it is parked behind them unsent. It holds no Postgres
// connection while it POSTs; a failed attempt, and a 410's state, it
// writes on the pool itself (record).
func (r *Runner) handle(ctx context.Context, ev subscriber.Event) (any, error) {
	if s, _ := r.currentState(); s != StateActive {
		// A worker admitted before the destination was paused or
		// disabled: the message waits, unsent, for it to be active.
		return nil, subscriber.RetryAfter(r.policy.Delay(1, 0), fmt.Errorf("destination %s", s))
	}
	if r.d.Ordered {
		behind, err := hasParked(ctx, r.o.Pool, r.d.Name)
		if err != nil {
			return nil, subscriber.RetryAfter(r.policy.Delay(1, 0), err)
		}
		if behind {
			now := r.o.Now()
			return parked{ev: ev, due: now, at: now, reason: "behind an earlier event waiting for its retry (ordered)"}, nil
		}
	}
	res, a, err := r.send(ctx, ev)
	if err != nil {
		return nil, err
	}
	switch {
	case res.OK():
		r.delivered(ctx, a.At)
		a.Outcome = OutcomeDelivered
		// Written in the transaction that records the event as processed:
		// the log says delivered exactly when the library will not send it
		// again.
		return a, nil
	case res.Gone():
		r.gone(ctx, a, r.eventLog(ev))
		// Not a failure of this event: it waits for the destination to
		// be resumed.
		return nil, subscriber.RetryAfter(r.policy.Delay(1, 0), errors.New("410 Gone: destination disabled"))
	}
	log := r.eventLog(ev)
	attempt := int(min(ev.NumDelivered, 64))
	delay, err := r.failed(ctx, ev, &a, res, attempt)
	r.record(ctx, a, log)
	if err != nil {
		return nil, err
	}
	failure := describe(res)
	if delay <= MaxHeldRetry {
		log.Info("delivery failed; will retry", "status", res.Status, "error", failure, "retry_in", delay)
		return nil, subscriber.RetryAfter(delay, errors.New(failure))
	}
	log.Info("delivery failed; parked until its retry", "status", res.Status, "error", failure, "retry_in", delay)
	return parked{ev: ev, due: a.At.Add(delay), at: a.At, attempts: attempt, receiverAsked: res.RetryAfter > 0, reason: failure}, nil
}

// recordDelivered writes the records handle returned for a batch of
// events (subscriber.Config.RecordBatch): the delivered attempts with one
// INSERT, the parked events with another.
func (r *Runner) recordDelivered(ctx context.Context, tx pgx.Tx, records []any) error {
	as := make([]Attempt, 0, len(records))
	var ps []parked
	for _, rec := range records {
		switch v := rec.(type) {
		case Attempt:
			as = append(as, v)
		case parked:
			ps = append(ps, v)
		default:
			return fmt.Errorf("destination %s: record of type %T, want Attempt or parked", r.d.Name, rec)
		}
	}
	if len(ps) > 0 {
		if err := park(ctx, tx, r.d.Name, ps); err != nil {
			return err
		}
	}
	return deststate.RecordAttempts(ctx, tx, r.d.Name, as)
}

// eventLog is the logger of a failed attempt (a delivered one logs
// nothing: no logger is made for it).
func (r *Runner) eventLog(ev subscriber.Event) *slog.Logger {
	return r.log.With("provider", ev.Provider, "event_id", ev.EventID, "attempt", ev.NumDelivered)
}

// record writes a failed attempt on the pool (the event is not recorded
// as processed, so nothing else writes it), even when a shutdown cancels
// ctx. A lost record is logged, never a reason to retry.
func (r *Runner) record(ctx context.Context, a Attempt, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if err := deststate.RecordAttempt(ctx, r.o.Pool, a); err != nil {
		log.Warn("cannot record the attempt", "error", err)
	}
}

// writeTimeout bounds a write of the handler's own.
const writeTimeout = 10 * time.Second

// describe is the one-line reason of a failed attempt.
func describe(res Result) string {
	switch {
	case res.Err != nil && res.Status != 0:
		return fmt.Sprintf("HTTP %d: %s", res.Status, res.Err)
	case res.Err != nil:
		return res.Err.Error()
	default:
		return "HTTP " + strconv.Itoa(res.Status)
	}
}

// WebhookID is the webhook-id of ev's deliveries: the event's own
// "<provider>:<event_id>", not its message's Nats-Msg-Id (a re-publication
// carries a new one, and the receiver must still see the same event).
func WebhookID(ev subscriber.Event) string { return schema.MsgID(ev.Provider, ev.EventID) }

// RequestHeader builds the headers of a delivery of ev to d signed at now
// under webhook-id id (WebhookID for an event): Standard Webhooks', the
// hub's, the trace (ctx's span, else the message's traceparent) and d's
// static ones. `hub destinations test` sends its sample with them too.
func RequestHeader(ctx context.Context, d Destination, ev subscriber.Event, id string, body []byte, now time.Time) http.Header {
	h := make(http.Header, 12+len(d.Headers))
	for k, v := range d.Headers {
		h.Set(k, v)
	}
	h.Set("User-Agent", userAgent())
	h.Set("Content-Type", ContentType(d.Payload, ev))
	h.Set(HeaderWebhookID, id)
	h.Set(HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(HeaderWebhookSignature, Sign(id, now, body, d.Secrets))
	h.Set(HeaderProvider, ev.Provider)
	h.Set(HeaderEventType, ev.EventType)
	if !ev.OccurredAt.IsZero() {
		h.Set(HeaderOccurredAt, ev.OccurredAt.UTC().Format(time.RFC3339Nano))
	}
	if ev.ArchiveID != "" {
		h.Set(HeaderArchiveID, ev.ArchiveID)
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	} else if tp := ev.Header.Get(schema.HeaderTraceParent); tp != "" {
		h.Set(schema.HeaderTraceParent, tp)
		if ts := ev.Header.Get(schema.HeaderTraceState); ts != "" {
			h.Set(schema.HeaderTraceState, ts)
		}
	}
	return h
}

// userAgent is every delivery's User-Agent: hookhub/<version>, read
// once (the build information does not change).
var userAgent = sync.OnceValue(func() string { return buildinfo.UserAgent("destination") })

// watchState follows the destination's state in Postgres (pause, resume,
// disable from any process), registering the destination first.
func (r *Runner) watchState(ctx context.Context) error {
	name := r.d.Name
	for {
		if err := Register(ctx, r.o.Pool, name, RedactURL(r.d.URL), r.d.Subjects); err == nil {
			break
		} else if ctx.Err() == nil {
			r.log.Warn("cannot register the destination yet", "error", err)
		}
		if backoff.Sleep(ctx, StatePollInterval) != nil {
			return nil
		}
	}
	for {
		s, _, err := GetState(ctx, r.o.Pool, name)
		switch {
		case err == nil && r.disabling.Load():
		case err == nil:
			r.setState(s)
		case ctx.Err() == nil:
			r.log.Warn("cannot read the destination's state", "error", err)
		}
		if backoff.Sleep(ctx, StatePollInterval) != nil {
			return nil
		}
	}
}

// watchBacklog keeps the backlog gauge and the circuit gauge current.
func (r *Runner) watchBacklog(ctx context.Context) error {
	stream := cmp.Or(r.o.Stream, subscriber.DefaultStream)
	for {
		r.o.Metrics.SetCircuitOpen(r.d.Name, r.circuit.State() != CircuitClosed)
		ictx, cancel := context.WithTimeout(ctx, BacklogPollInterval)
		if c, err := r.o.JetStream.Consumer(ictx, stream, r.d.Name); err == nil {
			info := c.CachedInfo()
			r.o.Metrics.SetBacklog(r.d.Name, info.NumPending+uint64(max(info.NumAckPending, 0)))
		}
		r.refreshWaiting(ictx)
		cancel()
		if backoff.Sleep(ctx, BacklogPollInterval) != nil {
			return nil
		}
	}
}

// purge deletes attempts past the retention, in bounded batches.
func (r *Runner) purge(ctx context.Context) error {
	for {
		for range 100 { // at most 100 batches a round
			n, err := deststate.PurgeAttempts(ctx, r.o.Pool, r.d.Name, r.o.Now().Add(-r.o.AttemptRetention), purgeBatch)
			if err != nil {
				if ctx.Err() == nil {
					r.log.Warn("cannot purge old attempts", "error", err)
				}
				break
			}
			if n < purgeBatch {
				break
			}
		}
		if backoff.Sleep(ctx, PurgeInterval) != nil {
			return nil
		}
	}
}
