package ops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Errors operators hit, each with its code (hub.Error): the command line
// turns them into a message and a non-zero exit, the admin API and the
// console into statuses by their code.
var (
	ErrNotFound          error = &hub.Error{Code: hub.ENOTFOUND, Message: "nothing matched"}
	ErrUnknownSubscriber error = &hub.Error{Code: hub.ENOTFOUND, Message: "unknown subscriber"}
	ErrInvalid           error = &hub.Error{Code: hub.EINVALID, Message: "invalid request"}
	ErrNoStream          error = &hub.Error{Code: hub.EUNAVAILABLE, Message: "JetStream not connected"}
	// ErrBusy: admission refused the operation (admission.go): its pool
	// (reads, or replays and bulk actions) is spent; the caller retries
	// later (the admin API and the console answer 429 with Retry-After).
	// The refusal is a *BusyError, which says how long to wait.
	ErrBusy error = &hub.Error{Code: hub.EBUSY, Message: "too many expensive operations at once"}
	// ErrIncompleteRead: the stream could not be read to the end of the
	// range (it stalled, or was deleted meanwhile); nothing was replayed.
	// It wraps the *relay.ScanError that says how far the read got.
	ErrIncompleteRead error = &hub.Error{Code: hub.EUNAVAILABLE, Message: "the stream could not be read to the end of the range"}
	// ErrStreamMisconfigured: a setting of the stream breaks delivery
	// (relay.StreamFaults); republish and replay refuse to publish copies
	// the stream would store where no subscriber looks (the admin API
	// answers 503).
	ErrStreamMisconfigured = relay.ErrStreamMisconfigured
)

// DefaultMaxConcurrentReplays is how many replays and dry runs one hub
// runs at once (Config.MaxConcurrentReplays); each holds up to
// MaxReplayBytes of messages.
const DefaultMaxConcurrentReplays = 4

// DefaultMaxReplayBytesHeld bounds the bytes of messages all the replays
// and dry runs running in one hub hold together
// (Config.MaxReplayBytesHeld): two full replays. Four at MaxReplayBytes
// each, with the garbage collector's headroom, would not fit the hub's
// 512 MiB.
const DefaultMaxReplayBytesHeld = 2 * MaxReplayBytes

// Archive is what the operations read and delete in the hub's tables:
// hub/store's *Store, the only code that touches them.
type Archive interface {
	OutboxBacklog(ctx context.Context) (hub.Backlog, error)
	ListArchive(ctx context.Context, f hub.ArchiveFilter) ([]hub.ArchivedDelivery, error)
	// ScanArchive lists with payload filters, a bounded scan.
	ScanArchive(ctx context.Context, f hub.ArchiveFilter) (hub.ArchiveScan, error)
	FindEvent(ctx context.Context, archiveID uuid.UUID) (provider, eventID string, found bool, err error)
	Event(ctx context.Context, provider, eventID string) (hub.EventRecord, bool, error)
	Deliveries(ctx context.Context, provider, eventID string, limit int) ([]hub.ArchivedDelivery, error)
	PublishedRows(ctx context.Context, f hub.PublishedFilter) ([]hub.OutboxRow, error)
	PurgeCounts(ctx context.Context, cutoff time.Time) (hub.PurgeCounts, error)
	PurgeArchive(ctx context.Context, cutoff time.Time, limit int, includeFailed bool) (examined, deleted int64, err error)
	// Charts: when the hub first accepted each event (store.FirstSeen).
	FirstSeen(ctx context.Context, providers, eventIDs []string) ([]hub.EventRecord, error)
}

// Republisher publishes copies of archived events: hub/relay's *Relay, so
// that a copy is built by the same code as the original message.
type Republisher interface {
	// Republish publishes rows under message ids of run runID, waits up to
	// timeout for their PubAcks, and returns one result per row (Seq 0:
	// not published).
	Republish(ctx context.Context, rows []hub.OutboxRow, runID string, timeout time.Duration) []hub.PublishResult
}

// Config is what Ops works on.
type Config struct {
	// Archive is the hub's store (required).
	Archive Archive
	// Subscribers is the database of the subscribers' tables, which the
	// subscriber library reads (required; usually the hub's pool).
	Subscribers subscriber.DB
	// JetStream and Stream are the hub's stream; a nil JetStream limits Ops
	// to the database.
	JetStream jetstream.JetStream
	Stream    string
	// Republisher publishes republished copies; nil refuses a republish
	// (a dry run still counts).
	Republisher Republisher
	// Now is the clock for relative times; default time.Now.
	Now func() time.Time
	// MaxConcurrentReplays bounds the replays and dry runs running at
	// once; past it Replay answers ErrBusy. 0 is
	// DefaultMaxConcurrentReplays.
	MaxConcurrentReplays int
	// MaxReplayBytesHeld bounds the bytes of messages the replays and dry
	// runs running at once hold together; a read that would pass it
	// fails with ErrBusy. 0 is DefaultMaxReplayBytesHeld.
	MaxReplayBytesHeld int64
	// ScanStall is how long a read of the stream waits for progress
	// before it fails (ErrIncompleteRead); 0 is relay.DefaultScanStall.
	ScanStall time.Duration
	// Audit records every action Ops runs (the audit trail). Default: the
	// Archive, when it is one (hub/store's *Store is). Without either,
	// nothing is recorded and ListAudit finds nothing: Go code driving Ops
	// without the hub's database (tests of the subscriber library).
	Audit AuditLog
	// Sessions lists and revokes the console's sessions. Default: the
	// Archive, when it is one (hub/store's *Store is).
	Sessions Sessions
	// Logger logs what the audit trail could not record; default: discard.
	Logger *slog.Logger
	// PayloadScanRows bounds the archive rows one page of a payload
	// filter reads; 0 is DefaultPayloadScanRows.
	PayloadScanRows int
	// ReadBudget bounds the expensive reads running at once (admission.go:
	// plans, dry runs, payload filters, exports, charts); zero fields are
	// the defaults' (ReadBudgetOf(DefaultReadSlots,
	// DefaultReadRowsPerSecond)). Actions have their own budget:
	// MaxConcurrentReplays slots and MaxReplayBytesHeld bytes.
	ReadBudget Budget
	// Metrics counts admission refusals (hub_admission_refused_total);
	// nil counts nothing.
	Metrics *metrics.Metrics
}

// Ops runs operator operations against one hub's database and stream.
type Ops struct {
	archive     Archive
	subs        subscriber.DB
	js          jetstream.JetStream // nil: database-only operations
	stream      string
	republisher Republisher
	now         func() time.Time
	// admission admits expensive reads and actions by cost, each in its
	// own pool (admission.go).
	admission *admission
	scanStall time.Duration
	audit     AuditLog // nil: nothing recorded
	sessions  Sessions // nil: no console sessions to list
	// swept: the running entries of dead processes were marked
	// interrupted (InterruptStaleAudit), before this process's first.
	swept atomic.Bool
	log   *slog.Logger
	// payloadScanRows bounds one page of a payload filter;
	// payloadScanBytes its payload bytes, read payloadScanChunk rows a
	// statement (MaxPayloadScanBytes, payloadScanChunk; tests lower them).
	payloadScanRows  int
	payloadScanBytes int64
	payloadScanChunk int
	// maxBulkEvents bounds one bulk action (MaxBulkEvents; tests lower it).
	maxBulkEvents int
}

// New returns Ops on cfg.
func New(cfg Config) *Ops {
	o := &Ops{archive: cfg.Archive, subs: cfg.Subscribers, js: cfg.JetStream, stream: cfg.Stream,
		republisher: cfg.Republisher, now: cfg.Now, scanStall: cfg.ScanStall, audit: cfg.Audit, sessions: cfg.Sessions, log: cfg.Logger}
	if o.audit == nil {
		if a, ok := cfg.Archive.(AuditLog); ok {
			o.audit = a
		}
	}
	if o.sessions == nil {
		if s, ok := cfg.Archive.(Sessions); ok {
			o.sessions = s
		}
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if o.now == nil {
		o.now = time.Now
	}
	n := cfg.MaxConcurrentReplays
	if n <= 0 {
		n = DefaultMaxConcurrentReplays
	}
	o.maxBulkEvents = MaxBulkEvents
	o.payloadScanBytes, o.payloadScanChunk = MaxPayloadScanBytes, payloadScanChunk
	o.payloadScanRows = cfg.PayloadScanRows
	if o.payloadScanRows <= 0 {
		o.payloadScanRows = DefaultPayloadScanRows
	}
	held := cfg.MaxReplayBytesHeld
	if held <= 0 {
		held = DefaultMaxReplayBytesHeld
	}
	reads, def := cfg.ReadBudget, ReadBudgetOf(DefaultReadSlots, DefaultReadRowsPerSecond)
	if reads.Slots <= 0 {
		reads.Slots = def.Slots
	}
	if reads.Rows <= 0 {
		reads.Rows = def.Rows
	}
	if reads.Bytes <= 0 {
		reads.Bytes = def.Bytes
	}
	if reads.RowsPerSecond <= 0 {
		reads.RowsPerSecond = def.RowsPerSecond
	}
	if reads.MinRows <= 0 {
		reads.MinRows = max(1, reads.RowsPerSecond/maxCheapReadsPerSecond)
	}
	var refused func(pool, what string)
	if m := cfg.Metrics; m != nil {
		refused = func(pool, what string) { m.AdmissionRefused.WithLabelValues(pool, what).Inc() }
	}
	o.admission = newAdmission(reads, Budget{Slots: n, Bytes: held}, refused)
	return o
}

// Now is the clock Ops uses for relative times.
func (o *Ops) Now() time.Time { return o.now() }

func (o *Ops) needStream() error {
	if o.js == nil {
		return ErrNoStream
	}
	return nil
}

// streamErr explains a missing stream.
func (o *Ops) streamErr(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w: stream %s not found (is HUB_NATS_URL the hub's NATS server and HUB_STREAM its stream?)", ErrNotFound, o.stream)
	}
	return fmt.Errorf("read stream %s: %w", o.stream, err)
}

// scanErr explains a failed read of the stream (relay.Scan): a missing
// stream, or ErrIncompleteRead wrapping how far it got; an error of the
// read's callback is returned as is.
func (o *Ops) scanErr(err error) error {
	var se *relay.ScanError
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return o.streamErr(err)
	case errors.As(err, &se):
		return fmt.Errorf("%w: %w", ErrIncompleteRead, err)
	}
	return err
}

// Subscribers lists the subscribers whose tables live in the hub's
// database (the subscriber library creates them, in a schema named after
// the subscriber).
func (o *Ops) Subscribers(ctx context.Context) ([]string, error) {
	return subscriber.ListSubscribers(ctx, o.subs)
}

// checkSubscriber returns ErrUnknownSubscriber, listing the known ones,
// unless name is one (an InputError if it cannot be a name at all).
func (o *Ops) checkSubscriber(ctx context.Context, name string) error {
	if err := checkSubscriberName(name); err != nil {
		return err
	}
	names, err := o.Subscribers(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(names, name) {
		known := cmp.Or(strings.Join(names, ", "), "none yet: a subscriber creates its tables when it first runs")
		return fmt.Errorf("%w %s (known: %s)", ErrUnknownSubscriber, quote(name), known)
	}
	return nil
}

// subscriberErr makes the subscriber library's ErrUnknownSubscriber (a
// subscriber whose tables are gone) this package's ErrUnknownSubscriber
// as well, its text unchanged: the hub has one "unknown subscriber", and
// its code.
func subscriberErr(err error) error {
	if errors.Is(err, subscriber.ErrUnknownSubscriber) && !errors.Is(err, ErrUnknownSubscriber) {
		return &alsoErr{err: err, also: ErrUnknownSubscriber}
	}
	return err
}

// alsoErr is err, matching also too (errors.Is, errors.As).
type alsoErr struct{ err, also error }

func (e *alsoErr) Error() string   { return e.err.Error() }
func (e *alsoErr) Unwrap() []error { return []error{e.err, e.also} }
