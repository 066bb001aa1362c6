package subscriber

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
)

// EffectFunc performs an event's side effect outside the database (an HTTP
// call), at least once. On success it returns the record to write with
// the event (nil for none): the library hands the records of a whole batch
// to Config.RecordBatch, in the transaction that records the batch's events
// as processed. On failure it returns an error, under the same rules as a
// HandlerFunc's: RetryAfter, Permanent, ErrStale, and plain errors counted
// towards MaxDeliver. See "Effects outside the database" in the package
// documentation.
type EffectFunc func(ctx context.Context, ev Event) (record any, err error)

// Group commit of effects: a batch is written once it holds
// effectBatchMax events, or effectBatchWait after its first one.
const (
	effectBatchMax  = 64
	effectBatchWait = 20 * time.Millisecond
	// effectQueue bounds the events waiting for their batch: a worker
	// whose effect succeeded waits when it is full.
	effectQueue = 2 * effectBatchMax
)

// effectItem is an event whose effect succeeded, waiting for its batch.
type effectItem struct {
	msg     jetstream.Msg
	ev      Event
	out     outcome
	record  any
	tracked bool
	span    *processSpan
	log     *slog.Logger
	ctx     context.Context
}

// HandleEffect registers fn for subject (the same rules as Handle, with
// which it shares the subjects: they must not overlap). The events of
// subject are not handled in a transaction: fn performs their effect, and
// the library records them as processed afterwards, many events in one
// transaction.
func (s *Subscriber) HandleEffect(subject string, fn EffectFunc) {
	if fn == nil {
		panic("subscriber: nil effect for " + subject)
	}
	s.add("HandleEffect", route{pattern: subject, fx: fn})
}

// handleEffect processes one delivery of an event whose subject has an
// effect: skip it when processed already, else call fn and queue the event
// for the group committer, which acks it once its batch is committed.
func (s *Subscriber) handleEffect(ctx context.Context, msg jetstream.Msg, ev Event, fn EffectFunc, span *processSpan) {
	log := s.log.With("subject", ev.Subject, "provider", ev.Provider, "event_id", ev.EventID, "stream_seq", ev.StreamSeq, "attempt", ev.NumDelivered)
	s.effBusy.Add(1)
	queued := false
	defer func() {
		if !queued {
			s.effBusy.Add(-1)
		}
	}()
	stopKeepAlive := s.keepAlive(msg)
	out, record, tracked, err := s.callEffect(ctx, ev, fn)
	stopKeepAlive()
	if err != nil {
		s.settleFailure(ctx, msg, ev, err, span, log)
		return
	}
	if out == outcomeDuplicate {
		s.m.count(out)
		log.Debug("settled", "outcome", out)
		span.end(out.String(), nil)
		s.ack(msg, log)
		s.settled(ev.StreamSeq)
		return
	}
	it := effectItem{msg: msg, ev: ev, out: out, record: record, tracked: tracked, span: span, log: log, ctx: ctx}
	queued = true // the committer takes it off effBusy
	s.effQ <- it  // closed only once every worker returned
}

// callEffect checks whether ev was processed (on a redelivery, counting
// the call in handler_attempts as processMessage does) and, unless it was,
// calls fn.
func (s *Subscriber) callEffect(ctx context.Context, ev Event, fn EffectFunc) (out outcome, record any, tracked bool, err error) {
	resend := s.resend(ev)
	out = outcomeProcessed
	if ev.NumDelivered > 1 {
		unfinished, ok, err := s.startAttempt(ctx, ev, resend)
		if err != nil {
			return 0, nil, false, err
		}
		if !ok {
			return outcomeDuplicate, nil, false, nil
		}
		tracked = true
		if unfinished >= s.crashLimit() {
			return 0, nil, false, &unsettledError{delivered: ev.NumDelivered, unfinished: unfinished}
		}
	}
	if !tracked || resend {
		done, err := s.wasProcessed(ctx, ev)
		if err != nil {
			if tracked {
				s.finishAttempt(ctx, ev)
			}
			return 0, nil, false, err
		}
		switch {
		case done && resend:
			out = outcomeResent
		case done:
			return outcomeDuplicate, nil, false, nil
		}
	}
	stale, record, err := s.runEffect(ctx, ev, fn)
	if err != nil {
		if tracked {
			s.finishAttempt(ctx, ev)
		}
		return 0, nil, false, err
	}
	if stale {
		out = outcomeStale
	}
	return out, record, tracked, nil
}

// runEffect calls fn recovered (as callHandler does a handler), with the
// handler timeout, and reads its error as inspectHandlerError does.
func (s *Subscriber) runEffect(ctx context.Context, ev Event, fn EffectFunc) (stale bool, record any, err error) {
	if s.cfg.HandlerTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.HandlerTimeout)
		defer cancel()
	}
	type result struct {
		record any
		err    error
	}
	start := time.Now()
	r, f := run(0, func() result {
		rec, err := fn(ctx, ev)
		return result{rec, err}
	})
	s.m.observe(time.Since(start))
	if f != nil {
		err = libraryError{f.err("handler")}
	} else {
		err = r.err
	}
	if err == nil {
		return false, r.record, nil
	}
	stale, err = inspectHandlerError(err)
	if stale {
		return true, nil, nil
	}
	if pe, ok := errors.AsType[*PanicError](err); ok {
		s.m.countPanic()
		s.log.Error("handler panicked", "subject", ev.Subject, "provider", ev.Provider, "event_id", ev.EventID, "attempt", ev.NumDelivered, "panic", pe.Value(), "stack", pe.Stack())
	}
	return false, nil, err
}

// commitEffects is the group committer: it writes the queued events in
// batches until q is closed and drained, then waits for the batches'
// acks. ctx is the work context (cancelled only past ShutdownTimeout).
func (s *Subscriber) commitEffects(ctx context.Context, q <-chan effectItem) {
	var acks sync.WaitGroup
	defer acks.Wait()
	batch := make([]effectItem, 0, effectBatchMax)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		it, ok := <-q
		if !ok {
			return
		}
		busy := s.effBusy.Add(-1)
		batch = append(batch[:0], it)
		timer.Reset(effectBatchWait)
	collect:
		// With one worker and nothing queued (an ordered subscriber),
		// nothing can join the batch: it is written at once. With more, a
		// message may arrive within effectBatchWait even when none runs
		// now: waiting for it is what makes a moderate rate cost a
		// fraction of a commit per event.
		for len(batch) < effectBatchMax && (busy > 0 || s.cfg.Concurrency > 1) {
			select {
			case it, ok := <-q:
				if !ok {
					break collect
				}
				busy = s.effBusy.Add(-1)
				batch = append(batch, it)
			case <-timer.C:
				break collect
			}
		}
		timer.Stop()
		err := s.commitBatch(ctx, batch)
		items := append([]effectItem(nil), batch...)
		acks.Go(func() { s.settleBatch(items, err) })
	}
}

// commitBatch records a batch as processed in one transaction, with the
// effects' records (Config.RecordBatch), clearing the handler call counts
// of the tracked events.
func (s *Subscriber) commitBatch(ctx context.Context, batch []effectItem) error {
	n := len(batch)
	providers, ids, subjects := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	seqs, outcomes := make([]int64, 0, n), make([]string, 0, n)
	var trackedP, trackedE []string
	var records []any
	for _, it := range batch {
		providers = append(providers, it.ev.Provider)
		ids = append(ids, it.ev.EventID)
		subjects = append(subjects, SanitizeText(it.ev.Subject, 0))
		seqs = append(seqs, int64(it.ev.StreamSeq))
		oc := "processed"
		if it.out == outcomeStale {
			oc = "skipped_stale"
		}
		outcomes = append(outcomes, oc)
		if it.tracked {
			trackedP, trackedE = append(trackedP, it.ev.Provider), append(trackedE, it.ev.EventID)
		}
		if it.record != nil {
			records = append(records, it.record)
		}
	}
	if len(records) > 0 && s.cfg.RecordBatch == nil {
		return infra("record batch: %w", errors.New("an effect returned a record but Config.RecordBatch is nil"))
	}
	tx, err := s.cfg.Pool.Begin(ctx)
	if err != nil {
		return infra("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, s.q.insertProcessedBatch, s.cfg.Name, s.cfg.Now().UTC(), providers, ids, subjects, seqs, outcomes); err != nil {
		return infra("record processed messages: %w", err)
	}
	if len(trackedP) > 0 {
		if _, err := tx.Exec(ctx, s.q.clearAttemptsBatch, trackedP, trackedE); err != nil {
			return infra("clear handler call counts: %w", err)
		}
	}
	if len(records) > 0 {
		err, f := run(0, func() error { return s.cfg.RecordBatch(ctx, tx, records) })
		if f != nil {
			err = f.err("record batch")
		}
		if err != nil {
			return infra("record batch: %w", &textError{text: ErrorText(err, maxErrorLen), err: err})
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return infra("commit: %w", err)
	}
	return nil
}

// settleBatch acks the events of a committed batch, or naks them with the
// backoff when it failed (the effect succeeded: the database failed, so
// they are never dead-lettered for it; their effect happens again).
func (s *Subscriber) settleBatch(batch []effectItem, err error) {
	var wg sync.WaitGroup
	for _, it := range batch {
		wg.Go(func() {
			if err != nil {
				if it.tracked {
					s.finishAttempt(it.ctx, it.ev)
				}
				s.m.countFailed()
				delay := s.cfg.backoff(it.ev.NumDelivered)
				it.log.Warn("recording the processed event failed; will retry", "error", errText(err), "retry_in", delay)
				s.nak(it.msg, delay, it.log)
				it.span.end(spanOutcomeRetry, err)
				return
			}
			s.m.count(it.out)
			it.log.Debug("settled", "outcome", it.out)
			it.span.end(it.out.String(), nil)
			if s.hooks.dropAck != nil && s.hooks.dropAck(it.ev) {
				return
			}
			s.ack(it.msg, it.log)
			s.settled(it.ev.StreamSeq)
		})
	}
	wg.Wait()
}

// redriveEffect processes a claimed dead letter whose subject has an
// effect, in the redrive's transaction tx: processed row first (a
// duplicate does not call fn), then fn, then its record.
func (s *Subscriber) redriveEffect(ctx context.Context, tx pgx.Tx, ev Event, fn EffectFunc, tracked bool) (outcome, error) {
	tag, err := tx.Exec(ctx, s.q.insertProcessed, s.cfg.Name, ev.Provider, ev.EventID, SanitizeText(ev.Subject, 0), int64(ev.StreamSeq), s.cfg.Now().UTC(), &ev.DeadLetterID)
	if err != nil {
		return 0, infra("record processed message: %w", err)
	}
	if tag.RowsAffected() == 0 {
		if tracked {
			if _, err := tx.Exec(ctx, s.q.clearAttempts, ev.Provider, ev.EventID); err != nil {
				return 0, infra("clear handler call count: %w", err)
			}
		}
		return outcomeDuplicate, nil
	}
	stale, record, err := s.runEffect(ctx, ev, fn)
	if err != nil {
		return 0, err
	}
	if record != nil {
		if s.cfg.RecordBatch == nil {
			return 0, errors.New("an effect returned a record but Config.RecordBatch is nil")
		}
		err, f := run(0, func() error { return s.cfg.RecordBatch(ctx, tx, []any{record}) })
		if f != nil {
			err = f.err("record batch")
		}
		if err != nil {
			return 0, fmt.Errorf("record: %s", ErrorText(err, maxErrorLen))
		}
	}
	if tracked {
		if _, err := tx.Exec(ctx, s.q.clearAttempts, ev.Provider, ev.EventID); err != nil {
			return 0, infra("clear handler call count: %w", err)
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
