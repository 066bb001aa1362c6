package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/internal/backoff"
	"github.com/hookhub/hookhub/schema"
)

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
	// fastMaxAge (see runFast), and tracked by the recordBarrier.
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
	if len(row.Entities) > 0 {
		md.Entities = make([]schema.Entity, len(row.Entities))
		for i, e := range row.Entities {
			md.Entities[i] = schema.Entity{Kind: e.Kind, ID: e.ID}
		}
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
// comes are not published: they are the relay's (see runFast).
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
		r.wakeKeeper()
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
