package subscriber

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/internal/backoff"
	"github.com/hookhub/hookhub/schema"
)

// Subscriber consumes the hub's stream with one durable consumer and hands
// each event to the handler registered for its subject, exactly once per
// event as far as the database can tell (see the package doc).
//
// Register handlers (Handle) and background tasks (Background) before Run.
type Subscriber struct {
	cfg Config
	log *slog.Logger
	m   *metrics
	q   queries
	// tracer traces messages; nil when tracing is off.
	tracer trace.Tracer

	mu         sync.Mutex
	started    bool
	exact      map[string]route
	patterns   []route // wildcard patterns, in registration order
	subjects   []string
	background []task
	effects    bool // an effect is registered (HandleEffect)

	// effQ carries the events whose effect succeeded to the group
	// committer (commitEffects); nil without effects.
	effQ chan effectItem
	// effBusy counts the effects running and the events queued for the
	// committer: at 0 nothing more can join a batch, which is written at
	// once.
	effBusy atomic.Int64
	// readQ carries the workers' "processed already?" questions to the
	// group reader (readProcessed); nil without effects.
	readQ chan readReq

	state  atomic.Int32
	health health
	hooks  hooks // test hooks, set by export_test.go only
}

// route is what a subject is handled with: a handler (Handle) or an
// effect (HandleEffect).
type route struct {
	pattern string
	h       HandlerFunc
	fx      EffectFunc
}

type task struct {
	name string
	fn   func(context.Context) error
}

// Run states, for Healthy.
const (
	stateNew int32 = iota
	stateStarting
	stateConsuming
	stateStopping
	stateStopped
)

// hooks let tests stop a subscriber at the exact points a crash matters.
type hooks struct {
	// beforeCommit runs after the handler succeeded, before COMMIT; an
	// error rolls the transaction back.
	beforeCommit func(Event) error
	// afterCommit runs after COMMIT, before the ack.
	afterCommit func(Event)
	// dropAck, when it returns true, skips the ack as if it were lost.
	dropAck func(Event) bool
}

// New returns a Subscriber for cfg, with defaults applied to its zero
// fields. It registers the subscriber's metrics but touches neither
// Postgres nor NATS: Run does.
func New(cfg Config) (*Subscriber, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer, cfg.Name)
	if err != nil {
		return nil, err
	}
	return &Subscriber{
		cfg:    cfg,
		log:    cfg.Logger.With("subscriber", cfg.Name),
		m:      m,
		q:      newQueries(cfg.Name),
		exact:  map[string]route{},
		tracer: tracerFrom(cfg.TracerProvider),
	}, nil
}

// Name is the subscriber's name (consumer and schema).
func (s *Subscriber) Name() string { return s.cfg.Name }

// Stats returns the subscriber's counters.
func (s *Subscriber) Stats() Stats { return s.m.snapshot() }

// Handle registers h for subject: an exact subject such as
// "paddle.subscription.created" (schema.Subject), or a pattern with the
// NATS wildcards "*" and ">" such as "clerk.user.*". The registered subjects
// become the consumer's filter subjects, so they must not overlap. Handle
// panics on an invalid or overlapping subject, a nil handler, or a call
// after Run started, as http.ServeMux does: these are programming errors.
func (s *Subscriber) Handle(subject string, h HandlerFunc) {
	if h == nil {
		panic("subscriber: nil handler for " + subject)
	}
	s.add("Handle", route{pattern: subject, h: h})
}

// add registers r under the rules Handle states.
func (s *Subscriber) add(caller string, r route) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		panic("subscriber: " + caller + " called after Run")
	}
	subject := r.pattern
	if err := validPattern(subject); err != nil {
		panic("subscriber: " + err.Error())
	}
	for _, other := range s.subjects {
		if schema.SubjectsOverlap(subject, other) {
			panic(fmt.Sprintf("subscriber: subject %q overlaps %q (consumer filter subjects must not overlap)", subject, other))
		}
	}
	s.subjects = append(s.subjects, subject)
	s.effects = s.effects || r.fx != nil
	if isPattern(subject) {
		s.patterns = append(s.patterns, r)
	} else {
		s.exact[subject] = r
	}
}

// Background registers fn to run alongside the consumer while Run runs
// (after the migrations are applied), with a context cancelled when Run
// stops. Run waits for it, within ShutdownTimeout, before returning. A
// non-nil error from fn (other than its context's) stops Run, which
// returns it. Email's outbox sender is such a task.
func (s *Subscriber) Background(name string, fn func(ctx context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		panic("subscriber: Background called after Run")
	}
	if fn == nil {
		panic("subscriber: nil background task " + name)
	}
	s.background = append(s.background, task{name, fn})
}

// Subjects returns the registered subjects, sorted.
func (s *Subscriber) Subjects() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(slices.Values(s.subjects))
}

func isPattern(subject string) bool {
	for i := 0; i < len(subject); i++ {
		if subject[i] == '*' || subject[i] == '>' {
			return true
		}
	}
	return false
}

// route returns what a message subject is handled with; false when
// nothing is registered for it.
func (s *Subscriber) route(subject string) (route, bool) {
	if r, ok := s.exact[subject]; ok {
		return r, true
	}
	for _, r := range s.patterns {
		if schema.MatchSubject(r.pattern, subject) {
			return r, true
		}
	}
	return route{}, false
}

// Healthy returns nil while Run is consuming, the NATS connection is up,
// the durable consumer exists and no message is stuck (due to be
// dead-lettered, but Postgres does not store its dead letter), and an
// error saying what is wrong otherwise.
func (s *Subscriber) Healthy() error {
	switch s.state.Load() {
	case stateConsuming:
		var problems []string
		if nc := s.cfg.JetStream.Conn(); nc != nil && !nc.IsConnected() {
			problems = append(problems, fmt.Sprintf("NATS connection %s", nc.Status()))
		}
		problems = append(problems, s.problems()...)
		if len(problems) > 0 {
			return fmt.Errorf("subscriber %s: %s", s.cfg.Name, strings.Join(problems, "; "))
		}
		return nil
	case stateStarting:
		return fmt.Errorf("subscriber %s: starting", s.cfg.Name)
	case stateStopping:
		return fmt.Errorf("subscriber %s: stopping", s.cfg.Name)
	default:
		return fmt.Errorf("subscriber %s: not running", s.cfg.Name)
	}
}

// Run applies the migrations, creates or updates the durable consumer and
// consumes until ctx is cancelled or consuming becomes impossible (the
// NATS connection was closed, a background task failed). On cancellation
// it stops fetching, lets in-flight messages finish and be acked within
// ShutdownTimeout, waits for the background tasks and returns nil; past
// the timeout it cancels the handlers' contexts and returns
// ErrShutdownTimeout. Run may be called once.
func (s *Subscriber) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("subscriber: Run called twice")
	}
	s.started = true
	n := len(s.subjects)
	s.mu.Unlock()
	if n == 0 {
		return fmt.Errorf("subscriber %s: no handlers registered", s.cfg.Name)
	}
	s.state.Store(stateStarting)
	defer s.state.Store(stateStopped)
	defer s.m.consumerUp.Set(0)

	if err := Migrate(ctx, s.cfg.Pool, s.cfg.Name, s.cfg.Migrations); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	cons, err := s.ensureConsumer(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	s.log.Info("consuming", "stream", s.cfg.Stream, "subjects", s.Subjects(), "concurrency", s.cfg.Concurrency, "max_deliver", s.cfg.MaxDeliver)
	s.setNoConsumer("")
	s.state.Store(stateConsuming)

	// runCtx stops fetching, redrives and background tasks; work already
	// taken runs on workCtx, which is only cancelled past ShutdownTimeout.
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	workCtx, hardStop := context.WithCancel(context.WithoutCancel(ctx))
	defer hardStop()

	finished := s.startWork(runCtx, workCtx, stop, cons)
	<-runCtx.Done()
	s.state.Store(stateStopping)
	cause := context.Cause(runCtx)
	if ctx.Err() != nil {
		cause = nil // asked to stop: a graceful shutdown
		s.log.Info("stopping: finishing in-flight messages", "timeout", s.cfg.ShutdownTimeout)
	} else {
		s.log.Error("stopping", "error", cause)
	}
	return s.awaitStop(finished(), hardStop, cause)
}

// startWork starts the workers and the fetch loop feeding them, the group
// committer of effects, the redrive loop and the background tasks. Called
// once Run stops, finished waits for them all in the background: the
// channel it returns is closed once they have ended (the committer after
// the workers, having written what they queued).
func (s *Subscriber) startWork(runCtx, workCtx context.Context, stop context.CancelCauseFunc, cons jetstream.Consumer) (finished func() <-chan struct{}) {
	work := make(chan jetstream.Msg)
	var workers, others sync.WaitGroup
	// The group committer of effects outlives the workers: it writes
	// what they queued, then stops (see done below).
	committed, read := make(chan struct{}), make(chan struct{})
	if s.effects {
		s.effQ = make(chan effectItem, effectQueue)
		go func() {
			defer close(committed)
			s.commitEffects(workCtx, s.effQ)
		}()
		s.readQ = make(chan readReq, s.cfg.Concurrency)
		go func() {
			defer close(read)
			s.readProcessed(workCtx, s.readQ)
		}()
	} else {
		close(committed)
		close(read)
	}
	for range s.cfg.Concurrency {
		workers.Go(func() {
			for {
				if !s.admit(runCtx) {
					return // stopping: messages not taken are released by pump
				}
				msg, ok := <-work
				if !ok {
					return
				}
				s.handleMessage(workCtx, msg)
			}
		})
	}
	workers.Go(func() {
		defer close(work)
		if err := s.fetch(runCtx, cons, work); err != nil {
			stop(err)
		}
	})
	others.Go(func() { s.redriveLoop(runCtx, workCtx) })
	s.mu.Lock()
	tasks := slices.Clone(s.background)
	s.mu.Unlock()
	for _, t := range tasks {
		others.Go(func() {
			if err := s.runTask(runCtx, t); err != nil && runCtx.Err() == nil {
				s.log.Error("background task failed", "task", t.name, "error", err)
				stop(fmt.Errorf("subscriber %s: background task %s: %w", s.cfg.Name, t.name, err))
			}
		})
	}
	return func() <-chan struct{} {
		done := make(chan struct{})
		go func() {
			workers.Wait()
			if s.effQ != nil {
				close(s.effQ)
				close(s.readQ)
			}
			<-committed
			<-read
			others.Wait()
			close(done)
		}()
		return done
	}
}

// awaitStop waits up to ShutdownTimeout for done; past it, it cancels the
// handlers (hardStop), whose transactions roll back and whose messages
// JetStream redelivers, and gives them a moment to do so.
func (s *Subscriber) awaitStop(done <-chan struct{}, hardStop context.CancelFunc, cause error) error {
	timer := time.NewTimer(s.cfg.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-done:
		s.log.Info("stopped")
		return cause
	case <-timer.C:
	}
	// Past the timeout: cancel the handlers, whose transactions roll back
	// and whose messages JetStream redelivers; give them a moment to do so.
	hardStop()
	grace := time.NewTimer(min(s.cfg.ShutdownTimeout, 5*time.Second) + time.Second)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
	}
	s.log.Error("stopped before in-flight messages finished", "timeout", s.cfg.ShutdownTimeout)
	return errors.Join(ErrShutdownTimeout, cause)
}

// runTask runs a background task through run (see usercode.go), turning
// a panic or a runtime.Goexit into an error (a panic logged once, with its
// stack) so that it stops Run like a failure instead of killing the
// process. A task's own error is read once (ErrorText): logging it, or
// the caller of Run printing it, never calls back into the task's code.
func (s *Subscriber) runTask(ctx context.Context, t task) error {
	err, f := run(0, func() error { return t.fn(ctx) })
	if f != nil {
		ferr := f.err("background task")
		if pe, ok := ferr.(*PanicError); ok {
			s.log.Error("background task panicked", "task", t.name, "panic", pe.Value(), "stack", pe.Stack())
			return fmt.Errorf("panic: %s", pe.Value())
		}
		return ferr
	}
	if err != nil {
		return &textError{text: ErrorText(err, maxErrorLen), err: err}
	}
	return nil
}

// admit waits until Config.Admit lets this worker take a message (at once
// without one) and reports whether it did; false means ctx is done. Admit
// is user code: it runs through runUntil on a goroutine of its own, a panic is
// logged with its stack and treated as an error, and a call still running
// when ctx is done is abandoned (its result dropped).
func (s *Subscriber) admit(ctx context.Context) bool {
	if s.cfg.Admit == nil {
		return true // the worker takes messages until pump closes work
	}
	s.m.waiting.Inc()
	defer s.m.waiting.Dec()
	delays := backoff.New(100*time.Millisecond, 5*time.Second)
	for ctx.Err() == nil {
		err, f := runUntil(ctx, 0, func() error { return s.cfg.Admit(ctx) })
		if ctx.Err() != nil {
			return false
		}
		if f != nil {
			err = f.err("admit")
		}
		if err == nil {
			return true
		}
		delay := delays.Next()
		if pe, ok := err.(*PanicError); ok {
			s.log.Error("admit panicked", "panic", pe.Value(), "stack", pe.Stack(), "retry_in", delay)
		} else {
			s.log.Debug("not admitted", "error", ErrorText(err, maxErrorLen), "retry_in", delay)
		}
		if backoff.Sleep(ctx, delay) != nil {
			return false
		}
	}
	return false
}

// ensureConsumer creates or updates the durable consumer, waiting (and
// logging) while the stream does not exist yet or NATS is unreachable.
func (s *Subscriber) ensureConsumer(ctx context.Context) (jetstream.Consumer, error) {
	cfg := jetstream.ConsumerConfig{
		Durable:     s.cfg.Name,
		Description: "hookhub subscriber " + s.cfg.Name,
		AckPolicy:   jetstream.AckExplicitPolicy,
		AckWait:     s.cfg.AckWait,
		// The library enforces MaxDeliver itself (see the package doc):
		// the server's limit would silently stop delivering a message
		// whose last attempt could not be dead-lettered.
		MaxDeliver:    -1,
		MaxAckPending: s.cfg.MaxAckPending,
	}
	delays := backoff.New(250*time.Millisecond, 5*time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		cfg, err := s.consumerConfig(cctx, cfg)
		var cons jetstream.Consumer
		if err == nil {
			cons, err = s.cfg.JetStream.CreateOrUpdateConsumer(cctx, s.cfg.Stream, cfg)
		}
		cancel()
		if err == nil {
			return cons, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if apiErr, ok := errors.AsType[*jetstream.APIError](err); ok && apiErr.ErrorCode != jetstream.JSErrCodeStreamNotFound {
			return nil, fmt.Errorf("subscriber %s: create consumer on stream %s: %w", s.cfg.Name, s.cfg.Stream, err)
		}
		if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, jetstream.ErrConnectionClosed) {
			return nil, fmt.Errorf("subscriber %s: create consumer: %w", s.cfg.Name, err)
		}
		if s.state.Load() == stateConsuming {
			s.setNoConsumer(err.Error())
		}
		delay := delays.Next()
		s.log.Warn("cannot create consumer yet; retrying", "stream", s.cfg.Stream, "error", err, "retry_in", delay)
		if backoff.Sleep(ctx, delay) != nil {
			return nil, ctx.Err()
		}
	}
}

// fetch pulls messages and hands them to the workers until ctx is
// cancelled. It pulls at most Concurrency messages ahead, so a message
// never waits in the client's buffer for long. It returns nil when ctx is
// cancelled, and an error when consuming cannot go on.
func (s *Subscriber) fetch(ctx context.Context, cons jetstream.Consumer, work chan<- jetstream.Msg) error {
	delays := backoff.New(250*time.Millisecond, 5*time.Second)
	for {
		it, err := cons.Messages(jetstream.PullMaxMessages(s.cfg.Concurrency),
			jetstream.PullExpiry(pullExpiry), jetstream.PullHeartbeat(pullHeartbeat),
			jetstream.WithMessagesErrOnMissingHeartbeat(false))
		if err == nil {
			err = s.pump(ctx, cons, it, work)
			delays.Reset()
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, jetstream.ErrConnectionClosed) {
			return fmt.Errorf("subscriber %s: %w", s.cfg.Name, err)
		}
		// The iterator ended on its own (consumer or stream deleted, a
		// terminal pull error): recreate the consumer and go on. Healthy
		// and the consumer_up gauge say so meanwhile.
		reason := "the message iterator ended"
		if err != nil {
			reason = err.Error()
		}
		s.setNoConsumer(reason)
		delay := delays.Next()
		s.log.Warn("consumer stopped; recreating it", "error", reason, "retry_in", delay)
		if backoff.Sleep(ctx, delay) != nil {
			return nil
		}
		if cons, err = s.ensureConsumer(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		s.log.Info("consumer recreated", "stream", s.cfg.Stream)
		s.setNoConsumer("")
	}
}

// A pull request lives pullExpiry, and the server sends a heartbeat every
// pullHeartbeat while it waits. A pull request lost with a JetStream node
// (its consumer's leader crashed) is noticed after two missed heartbeats
// and pulled again: a subscriber resumes about 4 s after the consumer's new
// leader is elected, not after nats.go's default 30 s (15 s heartbeats).
// Idle, a subscriber costs one pull every 10 s and a heartbeat every 2 s.
const (
	pullExpiry    = 10 * time.Second
	pullHeartbeat = 2 * time.Second
)

// consumerCheckInterval is how often pump asks the server whether its
// consumer still exists.
const consumerCheckInterval = 2 * time.Second

// errConsumerGone ends pump when the consumer (or its stream) was deleted.
var errConsumerGone = errors.New("the durable consumer no longer exists")

// pump moves messages from it to work until ctx is cancelled or it ends.
// On the way out it releases the messages pulled but not started, so
// another replica gets them at once rather than after AckWait.
//
// The server tells an iterator that its consumer was deleted only through
// a pull request waiting at that moment ("409 Consumer Deleted"). A
// subscriber whose workers were busy with what it had pulled has none
// waiting: its later pulls get "503 No Responders", which nats.go treats
// as passing, and the iterator would wait forever. So pump also asks for
// the consumer's info every consumerCheckInterval, and ends when the
// server says the consumer or its stream is gone; fetch then recreates it.
func (s *Subscriber) pump(ctx context.Context, cons jetstream.Consumer, it jetstream.MessagesContext, work chan<- jetstream.Msg) error {
	var gone atomic.Bool
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		t := time.NewTicker(consumerCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-watchCtx.Done():
				return
			case <-t.C:
			}
			ictx, cancel := context.WithTimeout(watchCtx, consumerCheckInterval)
			_, err := cons.Info(ictx)
			cancel()
			if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
				gone.Store(true)
				it.Stop()
				return
			}
		}
	}()
	defer func() {
		it.Drain()
		for {
			msg, err := it.Next(jetstream.NextMaxWait(time.Second))
			if err != nil {
				return
			}
			s.release(msg)
		}
	}()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				if gone.Load() {
					return errConsumerGone
				}
				return err
			}
			// Missed heartbeats, leadership changes, reconnects: the
			// iterator recovers by itself.
			s.log.Debug("pull", "error", err)
			if backoff.Sleep(ctx, 50*time.Millisecond) != nil {
				return nil
			}
			continue
		}
		if ctx.Err() != nil {
			s.release(msg)
			return nil
		}
		if !s.handOver(ctx, msg, work) {
			s.release(msg)
			return nil
		}
	}
}

// handOver gives msg to a worker; false when ctx is done first. While
// every worker waits in Config.Admit, msg waits here: past AckWait
// JetStream delivers it again (as it does the messages still in the
// iterator's buffer), the copy handled later is skipped as a duplicate,
// and this is logged (at debug: a paused subscriber does it all the time).
func (s *Subscriber) handOver(ctx context.Context, msg jetstream.Msg, work chan<- jetstream.Msg) bool {
	select {
	case work <- msg:
		return true
	case <-ctx.Done():
		return false
	default:
	}
	t := time.NewTimer(s.cfg.AckWait)
	defer t.Stop()
	for {
		select {
		case work <- msg:
			return true
		case <-ctx.Done():
			return false
		case <-t.C:
			s.log.Debug("no worker took the message within AckWait; JetStream delivers it again", "subject", SanitizeText(msg.Subject(), 0))
		}
	}
}

// release hands back a message this subscriber took but will not handle
// because it is stopping. This is the one place a bare Nak is right: the
// message did not fail, and any replica may take it now.
func (s *Subscriber) release(msg jetstream.Msg) {
	if err := msg.Nak(); err != nil {
		s.log.Debug("release message", "subject", msg.Subject(), "error", err)
	}
}
