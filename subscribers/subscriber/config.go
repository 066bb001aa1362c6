package subscriber

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/schema"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultStream          = schema.DefaultStream
	DefaultConcurrency     = 4
	DefaultMaxDeliver      = 5
	DefaultAckWait         = 30 * time.Second
	DefaultMaxAckPending   = 256
	DefaultShutdownTimeout = 25 * time.Second
	DefaultRedriveInterval = 5 * time.Second
)

// DefaultBackoff is the redelivery delay after the 1st, 2nd, 3rd and every
// later failed attempt.
var DefaultBackoff = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute}

// Limits on Config values.
const (
	MaxConcurrency   = 1024
	MaxMaxAckPending = 10000
	MinAckWait       = 100 * time.Millisecond
)

// Config configures a Subscriber. Only Name, Pool and JetStream are
// required; every other zero field gets its default.
type Config struct {
	// Name identifies the subscriber. It is the durable consumer's name and
	// the Postgres schema that holds the subscriber's tables, so it must be
	// a lower-case identifier: [a-z][a-z0-9_]*, at most 63 bytes, not
	// starting with "pg_".
	Name string
	// Pool is the Postgres pool handlers' transactions run on.
	Pool *pgxpool.Pool
	// JetStream is the client the consumer is created and read with.
	JetStream jetstream.JetStream
	// Stream is the hub's stream. Default DefaultStream.
	Stream string
	// Migrations are the service's own goose migrations (*.sql at the
	// root), applied to schema Name by Run, after the library's tables.
	// Nil means the service has none.
	Migrations fs.FS
	// Concurrency is the number of messages handled at once. Default
	// DefaultConcurrency.
	Concurrency int
	// MaxDeliver is the number of attempts (deliveries) after which a
	// message whose handler keeps failing is dead-lettered. Default
	// DefaultMaxDeliver.
	MaxDeliver int
	// Backoff is the redelivery delay after a failed attempt: Backoff[n-1]
	// after the n-th attempt, the last value repeating. Default
	// DefaultBackoff.
	Backoff []time.Duration
	// AckWait is how long JetStream waits for an ack before redelivering.
	// Handlers may run longer: the library sends InProgress every AckWait/3.
	// Default DefaultAckWait; at least MinAckWait.
	AckWait time.Duration
	// MaxAckPending bounds the messages delivered and not yet acked, across
	// every replica of the subscriber. At least Concurrency. Default
	// DefaultMaxAckPending.
	MaxAckPending int
	// HandlerTimeout bounds one handler call; 0 means no bound.
	HandlerTimeout time.Duration
	// ShutdownTimeout is how long Run waits, once its context is cancelled,
	// for in-flight messages to finish and be acked. Default
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// RedriveInterval is how often the subscriber looks for dead letters an
	// operator asked to redrive. Default DefaultRedriveInterval.
	RedriveInterval time.Duration
	// Logger receives the subscriber's logs. Default slog.Default().
	Logger *slog.Logger
	// Registerer receives the subscriber's metrics. Nil registers them on a
	// private registry (never the global one).
	Registerer prometheus.Registerer
	// Now is the clock used for the rows the library writes. Default
	// time.Now.
	Now func() time.Time
	// Admit, when set, is called by each worker before it takes its next
	// message, with a context cancelled when Run stops: nil lets the
	// worker take one message, an error means "not now" (the worker
	// waits 100ms, doubling up to 5s, and calls it again). While every
	// worker waits in Admit the subscriber takes no new message, which is
	// how a service pauses, rate-limits or lets one message through at a
	// time (a circuit breaker's probe). A message already pulled waits
	// meanwhile: past AckWait JetStream delivers it again, and the later
	// copy is skipped as a duplicate (its delivery count grows, see
	// MaxDeliver). Admit runs recovered: a panic is logged with its stack
	// and counts as an error. An Admit still running when Run stops is
	// not waited for.
	Admit func(ctx context.Context) error
	// ResendReplays, when true, calls the handler for a copy `hub replay`
	// made for this subscriber (Event.Replayed) even when the event was
	// processed already, instead of skipping it as a duplicate: the
	// processed row is kept (inserted if missing) and the call is counted
	// as resent (hookhub_subscriber_resent_total). A service whose
	// handler sends the event elsewhere (a destination) uses it to send
	// again on an operator's request.
	ResendReplays bool
	// Start is where the consumer starts when it is created: the zero
	// value delivers the stream's whole retained history. An existing
	// consumer keeps its position.
	Start Start
	// RecordBatch writes the records effects returned (HandleEffect) for a
	// batch of events, in the transaction that records them as processed:
	// one multi-row INSERT (or COPY) for the batch is where group commit
	// saves. It runs recovered; an error fails the whole batch, whose
	// events are retried (their effects happen again). Required when an
	// effect returns a non-nil record.
	RecordBatch func(ctx context.Context, tx pgx.Tx, records []any) error
	// TracerProvider, when set, traces each message: a consumer span
	// "process <subject>" that continues the trace the hub's W3C headers
	// carry, whose context the handler gets (so its own work can be traced
	// too). Nil or a no-op provider leaves tracing off; the global
	// provider is never used.
	TracerProvider trace.TracerProvider
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// ValidName reports whether name can name a subscriber (see Config.Name).
func ValidName(name string) bool {
	return nameRE.MatchString(name) && !strings.HasPrefix(name, "pg_")
}

// WithDefaults returns a copy of c with every zero field that has a
// default set to it (Backoff copied). New calls it, then Validate.
func (c Config) WithDefaults() Config {
	c.Stream = cmp.Or(c.Stream, DefaultStream)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.MaxDeliver = cmp.Or(c.MaxDeliver, DefaultMaxDeliver)
	if len(c.Backoff) == 0 {
		c.Backoff = DefaultBackoff
	}
	c.Backoff = append([]time.Duration(nil), c.Backoff...)
	c.AckWait = cmp.Or(c.AckWait, DefaultAckWait)
	c.MaxAckPending = cmp.Or(c.MaxAckPending, max(DefaultMaxAckPending, c.Concurrency))
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, DefaultShutdownTimeout)
	c.RedriveInterval = cmp.Or(c.RedriveInterval, DefaultRedriveInterval)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// FieldError is one invalid Config field.
type FieldError struct {
	// Field is the Config field's name, with the index of a slice
	// element: "AckWait", "Backoff[1]".
	Field string
	// Reason says what is wrong: "must be at least 100ms, got 10ms".
	Reason string
}

func (e *FieldError) Error() string { return e.Field + " " + e.Reason }

// Validate checks c as it is: New checks c.WithDefaults(), so a zero field
// that has a default fails here only when its default is not filled in.
// The error wraps ErrInvalidConfig and a *FieldError per invalid field
// (InvalidFields lists them); nil when c is valid.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	if !ValidName(c.Name) {
		bad("Name", "%q must be a lower-case identifier ([a-z][a-z0-9_]*, at most 63 bytes, not starting with pg_): it names the consumer and the Postgres schema", c.Name)
	}
	if c.Pool == nil {
		bad("Pool", "is required")
	}
	if c.JetStream == nil {
		bad("JetStream", "is required")
	}
	if !schema.ValidStreamName(c.Stream) {
		bad("Stream", "%q must be a stream name without spaces, '.', '*', '>', '/' or '\\'", c.Stream)
	}
	if c.Concurrency < 1 || c.Concurrency > MaxConcurrency {
		bad("Concurrency", "must be between 1 and %d, got %d", MaxConcurrency, c.Concurrency)
	}
	if c.MaxDeliver < 1 {
		bad("MaxDeliver", "must be at least 1, got %d", c.MaxDeliver)
	}
	for i, d := range c.Backoff {
		if d <= 0 {
			bad(fmt.Sprintf("Backoff[%d]", i), "must be positive, got %s", d)
		}
	}
	if c.AckWait < MinAckWait {
		bad("AckWait", "must be at least %s, got %s", MinAckWait, c.AckWait)
	}
	if c.MaxAckPending < c.Concurrency || c.MaxAckPending > MaxMaxAckPending {
		bad("MaxAckPending", "must be between Concurrency (%d) and %d, got %d", c.Concurrency, MaxMaxAckPending, c.MaxAckPending)
	}
	if c.HandlerTimeout < 0 {
		bad("HandlerTimeout", "must not be negative, got %s", c.HandlerTimeout)
	}
	if c.ShutdownTimeout <= 0 {
		bad("ShutdownTimeout", "must be positive, got %s", c.ShutdownTimeout)
	}
	if c.RedriveInterval <= 0 {
		bad("RedriveInterval", "must be positive, got %s", c.RedriveInterval)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// InvalidFields returns the *FieldError values err wraps (an error of
// Validate or New), in the order Validate found them.
func InvalidFields(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		if fe, ok := err.(*FieldError); ok {
			out = append(out, fe)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			if e := u.Unwrap(); e != nil {
				walk(e)
			}
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// backoff returns the delay before redelivering a message whose attempt
// number attempt (1-based) failed.
func (c Config) backoff(attempt uint64) time.Duration {
	i := int(min(max(attempt, 1), uint64(len(c.Backoff)))) - 1
	return c.Backoff[i]
}
