package relay

import (
	"context"
	"fmt"
	"time"
)

// notify wakes the claiming relay: rows are due. It never blocks.
func (r *Relay) notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// makeDue makes every PENDING row due and wakes the claiming relay (on a
// NATS reconnect, a stream created or fixed): a backlog drains at once.
func (r *Relay) makeDue(ctx context.Context) {
	if _, err := r.outbox.RetryNow(ctx); err != nil {
		r.cfg.Logger.Warn("relay: make pending rows due", "err", err)
	}
	r.notify()
}

// run is the claiming relay: it publishes due rows until ctx is done.
// Database errors are logged and retried. Several such loops, on one
// relay or on several replicas, may share an outbox: while one waits for
// its batch's PubAcks, another claims the next batch (SKIP LOCKED keeps
// their rows apart).
func (r *Relay) run(ctx context.Context) {
	poll := time.NewTicker(r.cfg.PollInterval)
	defer poll.Stop()
	gauges := time.NewTicker(5 * time.Second)
	defer gauges.Stop()
	r.updateGauges(ctx)
	for {
		select {
		case <-ctx.Done():
			return
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
// graceful shutdown (Stop), or a synchronous pass in tests. Rows it cannot
// publish stay PENDING for the next start.
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
