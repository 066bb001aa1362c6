package subscriber

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/internal/startstop"
	"github.com/hookhub/hookhub/schema"
)

// outcome is what became of a message that did not fail.
type outcome int

const (
	outcomeProcessed outcome = iota
	outcomeDuplicate
	outcomeStale
	// outcomeResent: a replay copy of an event processed before, handled
	// again because of Config.ResendReplays.
	outcomeResent
)

func (o outcome) String() string {
	switch o {
	case outcomeDuplicate:
		return "skipped_duplicate"
	case outcomeStale:
		return "skipped_stale"
	case outcomeResent:
		return "resent"
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
	if schema.IsServerMarker(msg.Headers()) {
		// A subject delete marker the server wrote (the stream's
		// SubjectDeleteMarkerTTL), not an event: nothing to handle, and
		// nothing wrong to dead-letter.
		s.m.countMarker()
		log := s.log.With("subject", SanitizeText(msg.Subject(), 0), "stream_seq", meta.Sequence.Stream)
		log.Debug("server delete marker acked", "reason", SanitizeText(msg.Headers().Get(schema.HeaderMarkerReason), maxKeyLen))
		s.ack(msg, log)
		s.settled(meta.Sequence.Stream)
		return
	}
	subject := msg.Subject()
	replayed := false
	if sub, original, ok := schema.SplitReplaySubject(subject); ok && sub == s.cfg.Name {
		// A copy `hub replay` made for this subscriber: handled exactly as
		// the original (and skipped if that was processed, unless
		// ResendReplays).
		subject, replayed = original, true
	}
	ctx, span := s.startProcess(ctx, msg, subject, meta)
	ev := Event{
		Subject:      subject,
		Data:         msg.Data(),
		Header:       msg.Headers(),
		StreamSeq:    meta.Sequence.Stream,
		NumDelivered: meta.NumDelivered,
		Replayed:     replayed,
	}
	md, err := schema.ParseMetadata(msg.Headers())
	if err == nil {
		err = storableKey(md)
	}
	if err != nil {
		// It can never succeed: keep it for an operator and stop delivering.
		s.m.countFailed()
		err = Permanent(fmt.Errorf("invalid hub headers: %w", err))
		s.deadLetter(msg, ev, err)
		span.end(spanOutcomeDeadLetter, err)
		return
	}
	ev.Metadata = md
	r, _ := s.route(ev.Subject)
	if r.fx != nil {
		s.handleEffect(ctx, msg, ev, r.fx, span)
		return
	}
	h := r.h
	if h == nil {
		s.m.countFailed()
		err := Permanent(fmt.Errorf("no handler for subject %s", SanitizeText(ev.Subject, 0)))
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
		s.settled(ev.StreamSeq)
		return
	}

	s.settleFailure(ctx, msg, ev, err, span, log)
}

// settleFailure settles a message whose processing failed: a crash-loop
// or permanent failure is dead-lettered, a retry naks with the handler's
// delay or the backoff, past MaxDeliver it is dead-lettered.
func (s *Subscriber) settleFailure(ctx context.Context, msg jetstream.Msg, ev Event, err error, span *processSpan, log *slog.Logger) {
	if unsettled, ok := errors.AsType[*unsettledError](err); ok {
		// The handler was not called: not a failed attempt.
		s.m.countCrashLoop()
		log.Error("earlier handler calls for this event never returned; dead-lettering it without calling the handler", "unfinished_calls", unsettled.unfinished)
		s.deadLetter(msg, ev, err)
		span.end(spanOutcomeDeadLetter, err)
		return
	}
	s.m.countFailed()
	delay, isRetry := retryAfter(err)
	switch {
	case isInfra(err) || ctx.Err() != nil:
		// Postgres (or the library) failed, not the handler, or the
		// handler was cut short by a shutdown past its timeout: retry, and
		// never dead-letter for it.
		delay := s.cfg.backoff(ev.NumDelivered)
		log.Warn("attempt failed outside the handler; will retry", "error", errText(err), "retry_in", delay)
		s.nak(msg, delay, log)
		span.end(spanOutcomeRetry, err)
	case isPermanent(err):
		s.deadLetter(msg, ev, err)
		span.end(spanOutcomeDeadLetter, err)
	case isRetry:
		// The handler chose the delay (RetryAfter), and when to give up:
		// MaxDeliver does not apply.
		log.Warn("handler asked for a retry", "error", errText(err), "retry_in", delay)
		s.nak(msg, delay, log)
		span.end(spanOutcomeRetry, err)
	case ev.NumDelivered >= uint64(s.cfg.MaxDeliver):
		s.deadLetter(msg, ev, err)
		span.end(spanOutcomeDeadLetter, err)
	default:
		delay := s.cfg.backoff(ev.NumDelivered)
		log.Warn("handler failed; will retry", "error", errText(err), "retry_in", delay, "max_deliver", s.cfg.MaxDeliver)
		s.nak(msg, delay, log)
		span.end(spanOutcomeRetry, err)
	}
}

// storableKey checks that the event's key, which the library writes to
// processed_messages, is text Postgres accepts. The hub never publishes
// such a message (its own tables hold the key); anything else did.
func storableKey(md schema.Metadata) error {
	for _, f := range []struct{ header, value string }{
		{schema.HeaderProvider, md.Provider},
		{schema.HeaderEventID, md.EventID},
	} {
		if err := CheckStorable("header "+f.header, f.value); err != nil {
			return errors.Unwrap(err) // the caller says it is permanent
		}
		if len(f.value) > maxKeyLen {
			return fmt.Errorf("header %s is %d bytes long, more than %d", f.header, len(f.value), maxKeyLen)
		}
	}
	return nil
}

// errText is an error as logged: sanitized and bounded (a handler's error
// may hold anything, of any size).
func errText(err error) string { return SanitizeText(err.Error(), maxErrorLen) }

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
	return startstop.Every(s.cfg.AckWait/3, func() {
		if err := msg.InProgress(); err != nil {
			s.log.Debug("in progress", "subject", msg.Subject(), "error", err)
		}
	})
}

// crashLimit is how many handler calls for one event may never return
// (counted on redeliveries, see handler_attempts) before the next delivery
// is dead-lettered without calling the handler. The first delivery is not
// counted, so a handler that kills the process every time is called
// MaxDeliver times, as one that fails is (twice when MaxDeliver is 1).
func (s *Subscriber) crashLimit() int { return max(s.cfg.MaxDeliver-1, 1) }

// processMessage runs the per-message transaction: processed row, handler,
// commit. On a redelivery it first counts the handler call in
// handler_attempts, in its own committed statement, and takes it back
// once the call returned: a call that never returns (the process died)
// stays counted, and past crashLimit the message is refused with an
// unsettledError before the handler is called.
func (s *Subscriber) processMessage(ctx context.Context, ev Event, h HandlerFunc) (outcome, error) {
	tracked := false
	if ev.NumDelivered > 1 {
		unfinished, ok, err := s.startAttempt(ctx, ev, s.resend(ev))
		if err != nil {
			return 0, err
		}
		tracked = ok
		if tracked && unfinished >= s.crashLimit() {
			return 0, &unsettledError{delivered: ev.NumDelivered, unfinished: unfinished}
		}
	}
	out, err := s.processTx(ctx, ev, h, tracked)
	if err != nil && tracked {
		s.finishAttempt(ctx, ev)
	}
	return out, err
}

// startAttempt counts a handler call about to start for ev and returns the
// number of earlier calls that never finished. ok is false when the event
// was processed already (nothing is counted; the transaction will skip
// it), unless resend says the handler is called for it anyway.
func (s *Subscriber) startAttempt(ctx context.Context, ev Event, resend bool) (unfinished int, ok bool, err error) {
	q := s.q.startAttempt
	if resend {
		q = s.q.startAttemptAny
	}
	err = s.cfg.Pool.QueryRow(ctx, q, ev.Provider, ev.EventID, s.cfg.Now().UTC(), s.cfg.Name).Scan(&unfinished)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, infra("count handler call: %w", err)
	}
	return unfinished, true, nil
}

// finishAttempt takes back the call startAttempt counted, once it returned
// without being committed. If this fails the call stays counted, as if it
// had crashed: at worst the event is dead-lettered one attempt early.
func (s *Subscriber) finishAttempt(ctx context.Context, ev Event) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := s.cfg.Pool.Exec(ctx, s.q.finishAttempt, ev.Provider, ev.EventID); err != nil {
		s.log.Warn("cannot record that the handler call returned; it counts as a crash", "provider", ev.Provider, "event_id", ev.EventID, "error", err)
	}
}

// processTx runs one transaction: processed row, handler, commit.
func (s *Subscriber) processTx(ctx context.Context, ev Event, h HandlerFunc, tracked bool) (outcome, error) {
	tx, err := s.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, infra("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	out, err := s.processIn(ctx, tx, ev, h, tracked)
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
// runs the handler inside a savepoint. The caller commits tx. tracked says
// the handler call was counted in handler_attempts: the count is cleared
// in tx when the event is processed.
func (s *Subscriber) processIn(ctx context.Context, tx pgx.Tx, ev Event, h HandlerFunc, tracked bool) (outcome, error) {
	var deadLetterID *int64
	if ev.DeadLetterID != 0 {
		deadLetterID = &ev.DeadLetterID
	}
	tag, err := tx.Exec(ctx, s.q.insertProcessed, s.cfg.Name, ev.Provider, ev.EventID, SanitizeText(ev.Subject, 0), int64(ev.StreamSeq), s.cfg.Now().UTC(), deadLetterID)
	if err != nil {
		if isDataError(err) {
			// Postgres refuses this message's values: no retry can help.
			return 0, Permanent(fmt.Errorf("record processed message: %w", err))
		}
		return 0, infra("record processed message: %w", err)
	}
	resent := false
	if tag.RowsAffected() == 0 && s.resend(ev) {
		resent = true // processed before: the handler is called again
	} else if tag.RowsAffected() == 0 {
		if tracked { // processed by another copy since startAttempt
			if _, err := tx.Exec(ctx, s.q.clearAttempts, ev.Provider, ev.EventID); err != nil {
				return 0, infra("clear handler call count: %w", err)
			}
		}
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
	// The handler's error is user code: read once, recovered, and replaced
	// by the library's own (inspectHandlerError).
	returnedStale := false
	if herr != nil {
		returnedStale, herr = inspectHandlerError(herr)
	}
	switch {
	case returnedStale:
		stale = true
		if err := sp.Rollback(ctx); err != nil {
			return 0, fmt.Errorf("roll back stale event's writes: %w", err)
		}
	case herr != nil:
		if pe, ok := errors.AsType[*PanicError](herr); ok { // the library's own (inspectHandlerError)
			s.m.countPanic()
			s.log.Error("handler panicked", "subject", ev.Subject, "provider", ev.Provider, "event_id", ev.EventID, "attempt", ev.NumDelivered, "panic", pe.Value(), "stack", pe.Stack())
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
	if tracked {
		if _, err := tx.Exec(ctx, s.q.clearAttempts, ev.Provider, ev.EventID); err != nil {
			return 0, infra("clear handler call count: %w", err)
		}
	}
	if stale && resent {
		return outcomeStale, nil // the row keeps the first processing's outcome
	}
	if stale {
		if _, err := tx.Exec(ctx, s.q.markStale, s.cfg.Name, ev.Provider, ev.EventID); err != nil {
			return 0, infra("record stale event: %w", err)
		}
		return outcomeStale, nil
	}
	if resent {
		return outcomeResent, nil
	}
	return outcomeProcessed, nil
}

// resend reports whether ev's handler is called even if the event was
// processed before: a replay copy, with Config.ResendReplays.
func (s *Subscriber) resend(ev Event) bool { return ev.Replayed && s.cfg.ResendReplays }

// callHandler calls h through run (see usercode.go): a panic becomes a
// *PanicError (with the handler goroutine's stack), a runtime.Goexit an
// error saying so, both wrapped in libraryError: either way the worker goes
// on and the message is settled. (A panic on a goroutine the handler
// starts itself cannot be recovered: it kills the process, and the
// crash-loop count catches the message.)
func callHandler(ctx context.Context, h HandlerFunc, tx pgx.Tx, ev Event) error {
	err, f := run(0, func() error { return h(ctx, tx, ev) })
	if f != nil {
		return libraryError{f.err("handler")}
	}
	return err
}
