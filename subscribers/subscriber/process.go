package subscriber

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/schema"
)

// outcome is what became of a message that did not fail.
type outcome int

const (
	outcomeProcessed outcome = iota
	outcomeDuplicate
	outcomeStale
)

func (o outcome) String() string {
	switch o {
	case outcomeDuplicate:
		return "skipped_duplicate"
	case outcomeStale:
		return "skipped_stale"
	default:
		return "processed"
	}
}

// ackTimeout bounds the wait for the server to confirm an ack.
const ackTimeout = 5 * time.Second

// handleMessage processes one delivery and settles it with JetStream: ack,
// delayed nak, or dead letter and term.
func (s *Subscriber) handleMessage(ctx context.Context, msg jetstream.Msg) {
	s.m.inFlight.Inc()
	defer s.m.inFlight.Dec()

	meta, err := msg.Metadata()
	if err != nil {
		// Not a JetStream delivery: nothing to redeliver or dead-letter.
		s.log.Error("message without JetStream metadata", "subject", msg.Subject(), "error", err)
		_ = msg.TermWithReason("no jetstream metadata")
		return
	}
	subject := msg.Subject()
	if sub, original, ok := schema.SplitReplaySubject(subject); ok && sub == s.cfg.Name {
		// A copy `hub replay` made for this subscriber: handled exactly as
		// the original (and skipped if that was processed).
		subject = original
	}
	ctx, span := s.startProcess(ctx, msg, subject, meta)
	ev := Event{
		Subject:      subject,
		Data:         msg.Data(),
		Header:       msg.Headers(),
		StreamSeq:    meta.Sequence.Stream,
		NumDelivered: meta.NumDelivered,
	}
	md, err := schema.ParseMetadata(msg.Headers())
	if err != nil {
		// It can never succeed: keep it for an operator and stop delivering.
		s.m.countFailed()
		err = Permanent(fmt.Errorf("invalid hub headers: %w", err))
		s.deadLetter(msg, ev, err)
		span.end(spanOutcomeDeadLetter, err)
		return
	}
	ev.Metadata = md
	h := s.handler(ev.Subject)
	if h == nil {
		s.m.countFailed()
		err := Permanent(fmt.Errorf("no handler for subject %s", ev.Subject))
		s.deadLetter(msg, ev, err)
		span.end(spanOutcomeDeadLetter, err)
		return
	}

	stopKeepAlive := s.keepAlive(msg)
	out, err := s.processMessage(ctx, ev, h)
	stopKeepAlive()

	log := s.log.With("subject", ev.Subject, "provider", ev.Provider, "event_id", ev.EventID, "stream_seq", ev.StreamSeq, "attempt", ev.NumDelivered)
	if err == nil {
		s.m.count(out)
		log.Debug("settled", "outcome", out)
		span.end(out.String(), nil)
		if s.hooks.dropAck != nil && s.hooks.dropAck(ev) {
			return
		}
		s.ack(msg, log)
		return
	}

	s.m.countFailed()
	switch {
	case isInfra(err) || ctx.Err() != nil:
		// Postgres (or the library) failed, not the handler, or the
		// handler was cut short by a shutdown past its timeout: retry, and
		// never dead-letter for it.
		delay := s.cfg.backoff(ev.NumDelivered)
		log.Warn("attempt failed outside the handler; will retry", "error", err, "retry_in", delay)
		s.nak(msg, delay, log)
		span.end(spanOutcomeRetry, err)
	case IsPermanent(err) || ev.NumDelivered >= uint64(s.cfg.MaxDeliver):
		s.deadLetter(msg, ev, err)
		span.end(spanOutcomeDeadLetter, err)
	default:
		delay := s.cfg.backoff(ev.NumDelivered)
		log.Warn("handler failed; will retry", "error", err, "retry_in", delay, "max_deliver", s.cfg.MaxDeliver)
		s.nak(msg, delay, log)
		span.end(spanOutcomeRetry, err)
	}
}

// ack acknowledges msg and waits for the server to confirm it. DoubleAck
// costs a round trip, but it means a message counted as done is known to
// be acked, and that Run's graceful shutdown returns only once every ack
// has reached the server (a plain Ack still in the client's buffer when
// the process exits is lost). A failed ack is harmless: the redelivery is
// skipped as a duplicate.
func (s *Subscriber) ack(msg jetstream.Msg, log interface{ Warn(string, ...any) }) {
	ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
	defer cancel()
	if err := msg.DoubleAck(ctx); err != nil {
		log.Warn("ack failed; the redelivery will be skipped as a duplicate", "error", err)
	}
}

func (s *Subscriber) nak(msg jetstream.Msg, delay time.Duration, log interface{ Warn(string, ...any) }) {
	if err := msg.NakWithDelay(delay); err != nil {
		log.Warn("nak failed; JetStream redelivers after AckWait", "error", err)
	}
}

// keepAlive tells JetStream the message is being worked on every AckWait/3
// until the returned function is called.
func (s *Subscriber) keepAlive(msg jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(s.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					s.log.Debug("in progress", "subject", msg.Subject(), "error", err)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// processMessage runs the per-message transaction: processed row, handler,
// commit.
func (s *Subscriber) processMessage(ctx context.Context, ev Event, h HandlerFunc) (outcome, error) {
	tx, err := s.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, infra("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	out, err := s.processIn(ctx, tx, ev, h)
	if err != nil {
		return 0, err
	}
	if out == outcomeDuplicate {
		if err := tx.Commit(ctx); err != nil {
			return 0, infra("commit: %w", err)
		}
		return out, nil
	}
	if s.hooks.beforeCommit != nil {
		if err := s.hooks.beforeCommit(ev); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		// The handler's writes may be what the database refused (a
		// deferred constraint), so this counts as a failed attempt.
		return 0, fmt.Errorf("commit: %w", err)
	}
	if s.hooks.afterCommit != nil {
		s.hooks.afterCommit(ev)
	}
	return out, nil
}

// processIn records ev as processed in tx and, if it was not already,
// runs the handler inside a savepoint. The caller commits tx.
func (s *Subscriber) processIn(ctx context.Context, tx pgx.Tx, ev Event, h HandlerFunc) (outcome, error) {
	var deadLetterID *int64
	if ev.DeadLetterID != 0 {
		deadLetterID = &ev.DeadLetterID
	}
	tag, err := tx.Exec(ctx, s.q.insertProcessed, s.cfg.Name, ev.Provider, ev.EventID, ev.Subject, int64(ev.StreamSeq), s.cfg.Now().UTC(), deadLetterID)
	if err != nil {
		return 0, infra("record processed message: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return outcomeDuplicate, nil
	}

	// The savepoint lets ErrStale undo the handler's writes but keep the
	// processed row, and keeps a handler from committing the outer
	// transaction.
	sp, err := tx.Begin(ctx)
	if err != nil {
		return 0, infra("savepoint: %w", err)
	}
	st := &handlerState{subscriber: s.cfg.Name, q: &s.q, eventID: ev.EventID, now: s.cfg.Now}
	hctx := context.WithValue(ctx, handlerStateKey{}, st)
	if s.cfg.HandlerTimeout > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(hctx, s.cfg.HandlerTimeout)
		defer cancel()
	}
	start := time.Now()
	herr := callHandler(hctx, h, sp, ev)
	s.m.observe(time.Since(start))

	stale := st.stale
	switch {
	case errors.Is(herr, ErrStale):
		stale = true
		if err := sp.Rollback(ctx); err != nil {
			return 0, fmt.Errorf("roll back stale event's writes: %w", err)
		}
	case herr != nil:
		var pe *panicError
		if errors.As(herr, &pe) {
			s.log.Error("handler panicked", "subject", ev.Subject, "event_id", ev.EventID, "panic", fmt.Sprint(pe.value), "stack", string(pe.stack))
		}
		return 0, herr
	default:
		if err := sp.Commit(ctx); err != nil {
			if errors.Is(err, pgx.ErrTxClosed) {
				return 0, errors.New("handler committed or rolled back its transaction; it must leave that to the library")
			}
			return 0, fmt.Errorf("release savepoint: %w", err)
		}
	}
	if stale {
		if _, err := tx.Exec(ctx, s.q.markStale, s.cfg.Name, ev.Provider, ev.EventID); err != nil {
			return 0, infra("record stale event: %w", err)
		}
		return outcomeStale, nil
	}
	return outcomeProcessed, nil
}

// callHandler calls h, turning a panic into an error.
func callHandler(ctx context.Context, h HandlerFunc, tx pgx.Tx, ev Event) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return h(ctx, tx, ev)
}
