package relay

import (
	"context"
	"sync"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/metrics"
)

// Enqueue hands a just-committed PENDING delivery to the fast path, which
// publishes it from memory and marks it PROCESSED without reading it back.
// It never blocks: when the fast path is saturated the row is left to the
// claiming relay, which takes it once its grace has passed.
func (r *Relay) Enqueue(d hub.Delivery) {
	row := hub.OutboxRow{
		ArchiveID: d.ArchiveID, Provider: d.Provider, EventID: d.EventID, EventType: d.EventType,
		Body: d.Body, ReceivedAt: d.ReceivedAt, OccurredAt: d.OccurredAt, TraceParent: d.TraceParent,
		Entities: d.Entities,
	}
	select {
	case r.fresh <- row:
	default:
		if r.cfg.Metrics != nil {
			r.cfg.Metrics.Published.WithLabelValues(metrics.PublishDeferred).Inc()
		}
	}
}

// fastQueued is how many sent batches of the fast path may wait for their
// PubAcks behind the one being settled. With the batch being sent, at most
// fastQueued+2 batches per pipeline are in flight.
const fastQueued = 2

// MaxPending is how many async publishes the relay may have in flight
// with batchSize (Config.BatchSize) and fastPipelines fast paths
// (Config.Workers): the jetstream.WithPublishAsyncMaxPending of the js
// given to New.
func MaxPending(batchSize, fastPipelines int) int {
	return ((fastQueued+2)*fastPipelines + 1) * batchSize
}

// runFast runs a fast path until ctx is done, as a pipeline of three
// stages, so that no stage waits for another's round trip: the first takes
// what was enqueued while it sent its previous batch (up to BatchSize) and
// sends it with async publishes; the second waits for each sent batch's
// PubAcks; the third records the results, acknowledged rows PROCESSED,
// gathered into few statements (recordFast). When ctx is done it stops
// taking rows, and returns once what it sent is settled and recorded.
// Start runs Config.Workers such pipelines.
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
func (r *Relay) runFast(ctx context.Context) {
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
			return
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
// Each row costs Postgres a new version of its dedup row whenever it is
// marked, but each statement and commit costs as much as dozens of rows:
// results are gathered for up to MarkDelay, or until there are MarkBatch
// of them, and recorded with one Outbox.RecordPublished (in the service,
// the group committer's next ingest statement carries them: one commit for
// both; store.GroupCommitter.RecordPublished). The statement runs in its own
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
