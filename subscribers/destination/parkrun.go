package destination

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/internal/backoff"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// send makes one HTTP attempt of ev: it takes one of the destination's
// Concurrency slots (shared by the subscriber's workers and the parked
// events' scheduler) and then a token of the rate limit, so a token is
// only ever taken by a caller holding an event, right before its request.
// The Attempt it returns has no Outcome yet. An error is ctx's, or the
// body's (Body).
func (r *Runner) send(ctx context.Context, ev subscriber.Event) (Result, Attempt, error) {
	body, err := Body(r.d.Payload, ev)
	if err != nil {
		return Result{}, Attempt{}, err
	}
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return Result{}, Attempt{}, ctx.Err()
	}
	defer func() { <-r.slots }()
	if r.limiter != nil {
		if err := r.limiter.Wait(ctx); err != nil {
			return Result{}, Attempt{}, err
		}
	}
	now := r.o.Now()
	res := r.client.Do(ctx, r.d.URL, RequestHeader(ctx, r.d, ev, WebhookID(ev), body, now), body)
	r.o.Metrics.ObserveAttempt(r.d.Name, res.Class(), res.Latency)
	a := Attempt{
		Destination: r.d.Name,
		Provider:    ev.Provider,
		EventID:     ev.EventID,
		StreamSeq:   ev.StreamSeq,
		At:          now,
		Status:      res.Status,
		Latency:     res.Latency,
		Response:    res.Response,
	}
	if res.Err != nil {
		a.Error = res.Err.Error()
	}
	return res, a, nil
}

// delivered reports a 2xx at now to the circuit and the metrics. When it
// closes an open circuit (the endpoint recovered from an outage), the
// parked events waiting for the hub's own backoff are made due now; those
// waiting for a receiver's Retry-After keep their time (retry-now ends
// that wait).
func (r *Runner) delivered(ctx context.Context, now time.Time) {
	recovered := r.circuit.State() != CircuitClosed
	r.circuit.Report(true)
	name := r.d.Name
	r.o.Metrics.SetCircuitOpen(name, false)
	r.o.Metrics.SetLastSuccess(name, now)
	if !recovered {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if n, err := shortenWaits(wctx, r.o.Pool, name, now); err != nil {
		r.log.Warn("the endpoint recovered, but the parked events' waits could not be shortened", "error", err)
	} else if n > 0 {
		r.log.Info("the endpoint recovered: parked events retried now", "events", n)
	}
}

// gone records a 410 attempt a and disables the destination.
func (r *Runner) gone(ctx context.Context, a Attempt, log *slog.Logger) {
	name := r.d.Name
	a.Outcome = OutcomeGone
	reason := fmt.Sprintf("410 Gone from the endpoint at %s", a.At.UTC().Format(time.RFC3339))
	// Counted and logged once per disabling, not once per request in
	// flight that got the 410 too.
	if r.setState(StateDisabled) {
		r.o.Metrics.CountDisabled(name)
		log.Error("the endpoint answered 410 Gone: destination disabled until `hub destinations resume`", "url", RedactURL(r.d.URL))
	}
	r.disabling.Store(true)
	r.record(ctx, a, log)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	if _, err := deststate.SetState(wctx, r.o.Pool, name, StateDisabled, reason); err != nil {
		log.Error("cannot record that the destination is disabled", "error", err)
	}
	cancel()
	r.disabling.Store(false)
}

// failed reports a failed attempt (the attempt-th of ev) to the circuit,
// sets a's outcome, and returns the delay before the next attempt: the
// backoff or the receiver's Retry-After (at most max_retry_after), at most
// the circuit's longest cooldown while it is open (unless the receiver
// asked), and never past the horizon (retry_for from the first attempt).
// Past the horizon it returns a permanent error: the event is
// dead-lettered. The caller records a.
func (r *Runner) failed(ctx context.Context, ev subscriber.Event, a *Attempt, res Result, attempt int) (time.Duration, error) {
	r.circuit.Report(false)
	r.o.Metrics.SetCircuitOpen(r.d.Name, r.circuit.State() != CircuitClosed)
	now := a.At
	first, seen, err := deststate.FirstAttempt(ctx, r.o.Pool, r.d.Name, ev.Provider, ev.EventID)
	if err != nil {
		r.eventLog(ev).Warn("cannot read the event's first attempt", "error", err)
	}
	if seen && r.policy.Expired(first, now) {
		a.Outcome = OutcomeDeadLettered
		return 0, subscriber.Permanentf("retried for %s since %s: %s", time.Duration(r.d.RetryFor), first.UTC().Format(time.RFC3339), describe(res))
	}
	if !seen {
		first = now // this one is the first
	}
	a.Outcome = OutcomeFailed
	delay := r.policy.Delay(attempt, res.RetryAfter)
	if r.circuit.State() != CircuitClosed && res.RetryAfter == 0 {
		delay = min(delay, r.maxCooldown)
	}
	return r.policy.Until(first, now, delay), nil
}

// watchParked is the parked events' scheduler: it sends the due ones
// (sendDue) until there are none, then looks again every
// ParkPollInterval.
func (r *Runner) watchParked(ctx context.Context) error {
	for {
		n, err := r.sendDue(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("cannot send the parked events", "error", err)
		}
		if ctx.Err() != nil {
			return nil
		}
		if (n == 0 || err != nil) && backoff.Sleep(ctx, ParkPollInterval) != nil {
			return nil
		}
	}
}

// admitWait bounds a claimed parked event's wait for the circuit.
func (r *Runner) admitWait() time.Duration { return time.Duration(r.d.Timeout) + 10*time.Second }

// lease is how long a claimed parked event is kept from other schedulers:
// its wait for the circuit (admitWait), for a slot (one of the workers'
// attempts: they share the slots) and its own attempt, the batch's wait
// for the rate limit, and a margin.
func (r *Runner) lease() time.Duration {
	d := 3*time.Duration(r.d.Timeout) + 30*time.Second
	if r.d.RateLimit > 0 {
		d += time.Duration(float64(r.d.Concurrency) / r.d.RateLimit * float64(time.Second))
	}
	return d
}

// sendDue claims the parked events due now, at most Concurrency of them
// (an ordered destination's head alone), sends them at once and returns
// how many it claimed. A destination that is not active sends none.
func (r *Runner) sendDue(ctx context.Context) (int, error) {
	if s, _ := r.currentState(); s != StateActive {
		return 0, nil
	}
	now := r.o.Now()
	ps, err := claimParked(ctx, r.o.Pool, r.d.Name, r.d.Ordered, now, now.Add(r.lease()), r.d.Concurrency)
	if err != nil || len(ps) == 0 {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() { r.sendParked(ctx, p) })
	}
	wg.Wait()
	return len(ps), nil
}

// sendParked makes one attempt of a claimed parked event and settles it:
// delivered (its row deleted with the delivered attempt, in one
// transaction), failed (its next due time), past the horizon
// (dead-lettered with its row deleted, in one transaction) or 410 (the
// destination disabled; it waits for a resume).
func (r *Runner) sendParked(ctx context.Context, p Parked) {
	ev := p.Event
	log := r.log.With("provider", ev.Provider, "event_id", ev.EventID, "parked_id", p.ID, "attempt", p.Attempts+1)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if p.bad != nil { // no retry can read it
		r.giveUp(wctx, p, Attempt{}, p.bad.Error(), log)
		return
	}
	// While the circuit is open this waits for the probe (this event may
	// be it), within its lease: past that the event is given back, due.
	actx, acancel := context.WithTimeout(ctx, r.admitWait())
	err := r.circuit.Admit(actx)
	acancel()
	if err != nil {
		r.release(wctx, p, log)
		return
	}
	res, a, err := r.send(ctx, ev)
	switch {
	case err != nil && ctx.Err() != nil:
		r.release(wctx, p, log)
		return
	case err != nil: // the body: no retry can build it
		r.giveUp(wctx, p, Attempt{}, err.Error(), log)
		return
	case res.OK():
		r.delivered(ctx, a.At)
		a.Outcome = OutcomeDelivered
		err := pgx.BeginFunc(wctx, r.o.Pool, func(tx pgx.Tx) error {
			if err := unpark(wctx, tx, r.d.Name, p.ID); err != nil {
				return err
			}
			return deststate.RecordAttempts(wctx, tx, r.d.Name, []Attempt{a})
		})
		if err != nil {
			log.Warn("delivered, but cannot record it: it is sent again after its lease", "error", err)
		}
		return
	case res.Gone():
		r.gone(ctx, a, log)
		if err := repark(wctx, r.o.Pool, r.d.Name, p.ID, a.At, p.Attempts, p.ReceiverAsked, "410 Gone: destination disabled"); err != nil {
			log.Warn("cannot release the parked event: it waits for its lease", "error", err)
		}
		return
	}
	attempt := p.Attempts + 1
	delay, perr := r.failed(ctx, ev, &a, res, attempt)
	if perr != nil {
		r.giveUp(wctx, p, a, perr.Error(), log)
		return
	}
	r.record(ctx, a, log)
	failure := describe(res)
	log.Info("delivery failed; parked until its retry", "status", res.Status, "error", failure, "retry_in", delay)
	if err := repark(wctx, r.o.Pool, r.d.Name, p.ID, a.At.Add(delay), attempt, res.RetryAfter > 0, failure); err != nil {
		log.Warn("cannot record the parked event's next attempt: it is sent again after its lease", "error", err)
	}
}

// release gives back a claimed parked event unsent (a shutdown): due now.
func (r *Runner) release(ctx context.Context, p Parked, log *slog.Logger) {
	if err := repark(ctx, r.o.Pool, r.d.Name, p.ID, r.o.Now(), p.Attempts, p.ReceiverAsked, "released unsent"); err != nil {
		log.Warn("cannot release the parked event: it waits for its lease", "error", err)
	}
}

// giveUp dead-letters a parked event: the dead letter, the deletion of its
// row and of its processed row, and its last attempt a (when it has an
// outcome) in one transaction. A `hub redrive` then delivers it again.
func (r *Runner) giveUp(ctx context.Context, p Parked, a Attempt, cause string, log *slog.Logger) {
	ev := p.Event
	ev.NumDelivered = uint64(p.Attempts) + 1
	var id int64
	err := pgx.BeginFunc(ctx, r.o.Pool, func(tx pgx.Tx) error {
		var err error
		if id, err = subscriber.DeadLetterKept(ctx, tx, r.d.Name, ev, cause, r.o.Now); err != nil {
			return err
		}
		if err := unpark(ctx, tx, r.d.Name, p.ID); err != nil {
			return err
		}
		if a.Outcome == "" {
			return nil
		}
		return deststate.RecordAttempts(ctx, tx, r.d.Name, []Attempt{a})
	})
	if err != nil {
		log.Error("cannot dead-letter the parked event: it is tried again after its lease", "error", err, "cause", cause)
		return
	}
	log.Error("dead-lettered", "dead_letter_id", id, "error", subscriber.SanitizeText(cause, 512))
}

// refreshWaiting sets the waiting gauge: the parked events.
func (r *Runner) refreshWaiting(ctx context.Context) {
	n, err := countWaiting(ctx, r.o.Pool, r.d.Name)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			r.log.Warn("cannot count the waiting events", "error", err)
		}
		return
	}
	r.o.Metrics.SetWaiting(r.d.Name, n)
}
