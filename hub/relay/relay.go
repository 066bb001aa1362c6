package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/schema"
)

// Outbox is the store side of the relay.
type Outbox interface {
	Claim(ctx context.Context, limit int, publish func(context.Context, []store.OutboxRow) []store.PublishResult) (int, error)
	RetryNow(ctx context.Context) (int64, error)
	OutboxBacklog(ctx context.Context) (store.Backlog, error)
}

// Config configures a Relay. Zero values take the defaults.
type Config struct {
	Stream          string        // required
	DuplicateWindow time.Duration // the stream's; required
	BatchSize       int           // rows per claim; default 256
	PublishTimeout  time.Duration // wait for a batch's PubAcks; default 10s
	MinBackoff      time.Duration // first retry delay; default 100ms
	MaxBackoff      time.Duration // retry delay cap; default min(10s, window/4)
	PollInterval    time.Duration // look for due rows without a wake-up; default 1s
	Logger          *slog.Logger
	Metrics         *metrics.Metrics
	Now             func() time.Time
}

func (c *Config) setDefaults() error {
	if c.Stream == "" {
		return errors.New("relay: stream name is required")
	}
	if c.DuplicateWindow <= 0 {
		return errors.New("relay: duplicate window is required")
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 256
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = 10 * time.Second
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = min(10*time.Second, c.DuplicateWindow/4)
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = c.MinBackoff
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Relay publishes PENDING archive rows to JetStream.
type Relay struct {
	cfg    Config
	outbox Outbox
	js     jetstream.JetStream
	wake   chan struct{}
}

// New returns a Relay. js should be created with
// jetstream.WithPublishAsyncTimeout so that no PubAck future waits forever.
func New(outbox Outbox, js jetstream.JetStream, cfg Config) (*Relay, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	return &Relay{cfg: cfg, outbox: outbox, js: js, wake: make(chan struct{}, 1)}, nil
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

// pass claims and publishes batches until a claim comes back short.
func (r *Relay) pass(ctx context.Context) error {
	for ctx.Err() == nil {
		n, err := r.outbox.Claim(ctx, r.cfg.BatchSize, r.publish)
		if err != nil {
			return err
		}
		if n < r.cfg.BatchSize {
			return nil
		}
	}
	return ctx.Err()
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

// publish sends a claimed batch with async publishes and waits for every
// PubAck (or its failure) within PublishTimeout.
func (r *Relay) publish(ctx context.Context, rows []store.OutboxRow) []store.PublishResult {
	now := r.cfg.Now()
	results := make([]store.PublishResult, len(rows))
	futures := make([]jetstream.PubAckFuture, len(rows))
	for i, row := range rows {
		res := &results[i]
		res.ArchiveID = row.ArchiveID
		subject, err := schema.Subject(row.Provider, row.EventType)
		if err != nil {
			res.Err, res.Permanent = err.Error(), true
			continue
		}
		msgID := schema.MsgID(row.Provider, row.EventID)
		if !row.FirstAttemptAt.IsZero() && now.Sub(row.FirstAttemptAt) > r.cfg.DuplicateWindow/2 {
			// An earlier attempt may have been stored, and JetStream will
			// soon (or already) not remember its id: look before publishing.
			seq, found, err := r.findInStream(ctx, subject, msgID, row.FirstAttemptAt.Add(-time.Minute))
			if err != nil {
				r.fail(res, row, fmt.Errorf("look up earlier attempt: %w", err))
				continue
			}
			if found {
				res.Seq = seq
				r.count(metrics.PublishFound, row)
				continue
			}
		}
		msg := &nats.Msg{
			Subject: subject,
			Data:    row.Body,
			Header: schema.Metadata{
				MsgID:      msgID,
				EventID:    row.EventID,
				Provider:   row.Provider,
				EventType:  row.EventType,
				ArchiveID:  row.ArchiveID.String(),
				ReceivedAt: row.ReceivedAt,
				OccurredAt: row.OccurredAt,
			}.Header(),
		}
		f, err := r.js.PublishMsgAsync(msg, jetstream.WithExpectStream(r.cfg.Stream))
		if err != nil {
			r.fail(res, row, err)
			continue
		}
		futures[i] = f
	}

	wait, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			results[i].Seq = ack.Sequence
			if ack.Duplicate {
				r.count(metrics.PublishDuplicate, rows[i])
			} else {
				r.count(metrics.PublishOK, rows[i])
			}
		case err := <-f.Err():
			r.fail(&results[i], rows[i], err)
		case <-wait.Done():
			r.fail(&results[i], rows[i], fmt.Errorf("no PubAck within %s", r.cfg.PublishTimeout))
		}
	}
	return results
}

func (r *Relay) count(outcome string, row store.OutboxRow) {
	if r.cfg.Metrics == nil {
		return
	}
	r.cfg.Metrics.Published.WithLabelValues(outcome).Inc()
	if outcome != metrics.PublishError {
		r.cfg.Metrics.PublishLagSecond.Observe(r.cfg.Now().Sub(row.ReceivedAt).Seconds())
	}
}

func (r *Relay) fail(res *store.PublishResult, row store.OutboxRow, err error) {
	res.Seq = 0
	res.Err = "publish: " + err.Error()
	res.RetryIn = r.backoff(row.Attempts)
	r.count(metrics.PublishError, row)
	r.cfg.Logger.Warn("publish failed; will retry",
		"provider", row.Provider, "event_id", row.EventID, "attempt", row.Attempts+1,
		"retry_in", res.RetryIn, "err", err)
}

// backoff is MinBackoff doubled per earlier attempt, capped at MaxBackoff.
func (r *Relay) backoff(attempts int) time.Duration {
	d := r.cfg.MinBackoff
	for i := 0; i < attempts && d < r.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.cfg.MaxBackoff)
}

// findInStream looks for a message with the given id on subject, stored at
// or after since, reading headers only.
func (r *Relay) findInStream(ctx context.Context, subject, msgID string, since time.Time) (uint64, bool, error) {
	c, err := r.js.OrderedConsumer(ctx, r.cfg.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
		OptStartTime:   &since,
		HeadersOnly:    true,
	})
	if err != nil {
		return 0, false, err
	}
	for {
		batch, err := c.Fetch(256, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return 0, false, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			md, err := m.Metadata()
			if err != nil {
				return 0, false, err
			}
			if m.Headers().Get(schema.HeaderMsgID) == msgID {
				return md.Sequence.Stream, true, nil
			}
			if md.NumPending == 0 {
				return 0, false, nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return 0, false, err
		}
		if got == 0 {
			return 0, false, nil
		}
	}
}
