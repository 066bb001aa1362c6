package relay

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/hub/metrics"
)

// Defaults applied by Config.WithDefaults to zero fields.
const (
	DefaultBatchSize      = 256
	DefaultPublishTimeout = 10 * time.Second
	// DefaultFastPublishTimeout, or PublishTimeout when shorter.
	DefaultFastPublishTimeout = 3 * time.Second
	DefaultMinBackoff         = 100 * time.Millisecond
	// DefaultMaxBackoff, or DuplicateWindow/4 when shorter (but at least
	// MinBackoff).
	DefaultMaxBackoff   = 10 * time.Second
	DefaultPollInterval = time.Second
	DefaultMarkDelay    = 50 * time.Millisecond
	DefaultMarkBatch    = 1024
	DefaultWorkers      = 1
	// DefaultGrace is how long a new row is left to the fast path of the
	// process that committed it before any claiming relay takes it over. It
	// exceeds the fast path's publish timeout, so the two rarely overlap
	// (and when they do, the message id makes JetStream drop the second
	// publish).
	DefaultGrace = 15 * time.Second
)

// Config configures a Relay. Zero fields take the defaults (WithDefaults).
type Config struct {
	Stream          string        // required
	DuplicateWindow time.Duration // the stream's; required
	BatchSize       int           // rows per claim; default DefaultBatchSize
	PublishTimeout  time.Duration // wait for a claimed batch's PubAcks; default DefaultPublishTimeout
	// Lease is how long a claimed batch is this relay's: past it, another
	// relay may claim what it did not record. Default 3×PublishTimeout.
	Lease time.Duration
	// FastPublishTimeout bounds the fast path's wait for its PubAcks
	// (default DefaultFastPublishTimeout): an ack lost in a leader change
	// must not hold a fast path loop for long; what it did not confirm, the
	// relay retries.
	FastPublishTimeout time.Duration
	MinBackoff         time.Duration // first retry delay; default DefaultMinBackoff
	MaxBackoff         time.Duration // retry delay cap; default min(DefaultMaxBackoff, window/4)
	PollInterval       time.Duration // look for due rows without a wake-up; default DefaultPollInterval
	// MarkDelay and MarkBatch bound how long, and for how many rows, the
	// fast path gathers results before it marks them in one statement;
	// default DefaultMarkDelay and DefaultMarkBatch.
	MarkDelay time.Duration
	MarkBatch int
	// Workers is how many fast-path pipelines Start runs; default
	// DefaultWorkers. The js given to New must allow MaxPending(BatchSize,
	// Workers) async publishes.
	Workers int
	// Grace is how long a new row is left to the fast path before a
	// claiming relay (this process's or another replica's) may take it;
	// default DefaultGrace. The relay is its only owner: New has the
	// outbox hold the rows committed from then on for Grace
	// (Outbox.HoldNew), and the fast path publishes a row only while it is
	// younger (by Now, from the row's ReceivedAt) than Grace less a fifth,
	// and than half the duplicate window; an older row is left to the
	// claiming relay (hub_publish_total{outcome="expired"}), so that the
	// two never publish one row far apart (see runFast).
	Grace   time.Duration
	Logger  *slog.Logger
	Metrics *metrics.Metrics
	Now     func() time.Time
	// Tracer, when set, traces each publish and carries the span's context
	// in the message headers; nil leaves tracing off.
	Tracer trace.Tracer
}

// WithDefaults returns a copy of c with every zero field that has a
// default set to it. New calls it, then Validate.
func (c Config) WithDefaults() Config {
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.PublishTimeout = cmp.Or(c.PublishTimeout, DefaultPublishTimeout)
	c.Lease = cmp.Or(c.Lease, 3*c.PublishTimeout)
	c.FastPublishTimeout = cmp.Or(c.FastPublishTimeout, min(DefaultFastPublishTimeout, c.PublishTimeout))
	c.MinBackoff = cmp.Or(c.MinBackoff, DefaultMinBackoff)
	c.MaxBackoff = cmp.Or(c.MaxBackoff, max(c.MinBackoff, min(DefaultMaxBackoff, c.DuplicateWindow/4)))
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.MarkDelay = cmp.Or(c.MarkDelay, DefaultMarkDelay)
	c.MarkBatch = cmp.Or(c.MarkBatch, DefaultMarkBatch)
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	c.Grace = cmp.Or(c.Grace, DefaultGrace)
	c.Logger, c.Now = clockDefaults(c.Logger, c.Now)
	return c
}

// Validate checks c as it is (a zero field that has a default fails until
// WithDefaults fills it in) and names every field at fault.
func (c Config) Validate() error {
	f := faults{what: "relay"}
	bad := f.bad
	if c.Stream == "" {
		bad("Stream", "is required")
	}
	if c.DuplicateWindow <= 0 {
		bad("DuplicateWindow", "is required (positive), got %s", c.DuplicateWindow)
	}
	if c.BatchSize < 1 {
		bad("BatchSize", "must be at least 1, got %d", c.BatchSize)
	}
	for _, d := range []struct {
		field string
		value time.Duration
	}{
		{"PublishTimeout", c.PublishTimeout}, {"Lease", c.Lease}, {"FastPublishTimeout", c.FastPublishTimeout},
		{"MinBackoff", c.MinBackoff}, {"PollInterval", c.PollInterval}, {"MarkDelay", c.MarkDelay},
		{"Grace", c.Grace},
	} {
		if d.value <= 0 {
			bad(d.field, "must be positive, got %s", d.value)
		}
	}
	if c.MaxBackoff < c.MinBackoff {
		bad("MaxBackoff", "must be at least MinBackoff (%s), got %s", c.MinBackoff, c.MaxBackoff)
	}
	if c.MarkBatch < 1 {
		bad("MarkBatch", "must be at least 1, got %d", c.MarkBatch)
	}
	if c.Workers < 1 {
		bad("Workers", "must be at least 1, got %d", c.Workers)
	}
	return f.clock(c.Logger, c.Now)
}

// fastMaxAge is the age past which the fast path leaves a row to the
// claiming relay: the grace less a fifth, and at most half the duplicate
// window.
func fastMaxAge(grace, window time.Duration) time.Duration {
	return min(grace-grace/5, window/2)
}

// clockDefaults is a logger that discards and the wall clock, where unset.
func clockDefaults(l *slog.Logger, now func() time.Time) (*slog.Logger, func() time.Time) {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return l, now
}

// faults gathers what a config's Validate finds, each naming its field.
type faults struct {
	what string // whose config: the errors' prefix
	errs []error
}

func (f *faults) bad(field, format string, args ...any) {
	f.errs = append(f.errs, fmt.Errorf("%s: %s %s", f.what, field, fmt.Sprintf(format, args...)))
}

// clock adds an unset logger or clock to the faults and returns them all.
func (f *faults) clock(l *slog.Logger, now func() time.Time) error {
	if l == nil {
		f.bad("Logger", "is required")
	}
	if now == nil {
		f.bad("Now", "is required")
	}
	return errors.Join(f.errs...)
}
