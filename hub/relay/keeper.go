package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/internal/startstop"
	"github.com/hookhub/hookhub/schema"
)

// StreamState is what the hub knows of its stream, as /readyz reports it.
type StreamState string

// The stream states.
const (
	// StreamUnknown: not checked yet (JetStream has not answered since the
	// start). The hub is ready: it accepts deliveries while NATS is down,
	// the outbox keeps them.
	StreamUnknown StreamState = "unknown"
	// StreamOK: the stream exists and holds this hub's subjects.
	StreamOK StreamState = "ok"
	// StreamMissing: JetStream says the stream does not exist, and the hub
	// could not create it (yet).
	StreamMissing StreamState = "missing"
	// StreamIncomplete: the stream exists, but some of this hub's
	// subjects are not on it and could not be added.
	StreamIncomplete StreamState = "incomplete"
	// StreamRestoring: the stream was lost and is recreated; the events it
	// held are being re-queued for publishing.
	StreamRestoring StreamState = "restoring"
	// StreamConflict: the stream holds this hub's subjects, but another
	// stream holds some of them too. JetStream refuses overlapping streams,
	// but two created at the same moment can both pass its check; then a
	// publish may land on the other one (Nats-Expected-Stream refuses it)
	// and the events wait in the outbox until an operator deletes or edits
	// the other stream.
	StreamConflict StreamState = "conflict"
	// StreamMisconfigured: the stream has a setting that diverts or stalls
	// the hub's publishes or breaks its dedup (StreamFaults): sealed, a
	// subject transform, no acks, retention other than limits, ... The
	// hub changes none of them; /readyz names them after the word
	// (Keeper.Status) until an operator does.
	StreamMisconfigured StreamState = "misconfigured"
)

// Ready reports whether the hub should take traffic in this state:
// not while the stream is missing, incomplete, in conflict, misconfigured
// or being restored.
func (s StreamState) Ready() bool { return s == StreamOK || s == StreamUnknown }

// Archive is the store side of a stream restore.
type Archive interface {
	PublishedBetween(ctx context.Context, p hub.PublishedPage) ([]hub.PublishedEvent, error)
	Requeue(ctx context.Context, ids []uuid.UUID, publishedBefore time.Time, reason string) (int64, error)
}

// Defaults applied by KeeperConfig.WithDefaults to zero fields.
const (
	DefaultKeeperInterval = 2 * time.Second
	DefaultRestoreBatch   = 1000
)

// KeeperConfig configures a Keeper. Zero fields take the defaults
// (WithDefaults).
type KeeperConfig struct {
	Stream StreamConfig // required: its Name and Providers
	// Interval between checks of the stream; default
	// DefaultKeeperInterval. A publish that fails as if the stream were
	// gone triggers a check at once.
	Interval time.Duration
	// RestoreBatch is how many archive rows a restore reads per query;
	// default DefaultRestoreBatch.
	RestoreBatch int
	// MaxBodyBytes is the hub's body limit (HUB_MAX_BODY_BYTES): a stream
	// whose max_msg_size cannot take such a body (and its headers) is
	// misconfigured. 0 leaves max_msg_size unchecked.
	MaxBodyBytes int
	Logger       *slog.Logger
	Metrics      *metrics.Metrics
	Now          func() time.Time
}

// WithDefaults returns a copy of c with every zero field that has a
// default set to it. NewKeeper calls it, then Validate.
func (c KeeperConfig) WithDefaults() KeeperConfig {
	c.Interval = cmp.Or(c.Interval, DefaultKeeperInterval)
	c.RestoreBatch = cmp.Or(c.RestoreBatch, DefaultRestoreBatch)
	c.Logger, c.Now = clockDefaults(c.Logger, c.Now)
	return c
}

// Validate checks c as it is (a zero field that has a default fails until
// WithDefaults fills it in) and names every field at fault.
func (c KeeperConfig) Validate() error {
	f := faults{what: "keeper"}
	bad := f.bad
	if c.Stream.Name == "" {
		bad("Stream.Name", "is required")
	}
	if len(c.Stream.Providers) == 0 {
		bad("Stream.Providers", "is required")
	}
	if c.Interval <= 0 {
		bad("Interval", "must be positive, got %s", c.Interval)
	}
	if c.RestoreBatch < 1 {
		bad("RestoreBatch", "must be at least 1, got %d", c.RestoreBatch)
	}
	if c.MaxBodyBytes < 0 {
		bad("MaxBodyBytes", "must not be negative, got %d", c.MaxBodyBytes)
	}
	return f.clock(c.Logger, c.Now)
}

// The restore's bounds.
const (
	// restoreMargin widens the time range of a restore for clock skew
	// between the hub (published_at) and the NATS server (stream times).
	restoreMargin = time.Minute
	// restoreLookback is how long before the lost stream's first message
	// an event may have been received and still be on it (it waited in the
	// outbox); the archive is read by received time, which is indexed.
	restoreLookback = 24 * time.Hour
	// minCheckGap spaces the checks publish failures trigger.
	minCheckGap = 250 * time.Millisecond
	// restoreReason is the error_message of a re-queued row.
	restoreReason = "requeued: the stream that held it was lost; publishing it again"
)

// Keeper keeps the hub's stream: it checks it every few seconds (and when
// a publish fails as if it were gone), creates it when missing, adds this
// hub's subjects when another replica's update left them out, and, when
// the stream it knew is gone (deleted, or replaced by a new one of the
// same name), restores what that stream held from the archive: every
// event it had acknowledged, re-queued through the outbox under its
// original message id (restore).
type Keeper struct {
	cfg     KeeperConfig
	js      jetstream.JetStream
	archive Archive
	relay   *Relay
	life    startstop.Base

	stateMu sync.Mutex
	state   StreamState
	faults  []StreamFault // the stream's broken settings, as of the last check that saw it
	// maxMsgSize is the stream's max_msg_size as last seen (<= 0: none),
	// for the webhook body limit (MaxPublishBytes).
	maxMsgSize atomic.Int32

	mu    sync.Mutex      // one check at a time; guards what follows
	known *streamIdentity // the stream as last seen; nil after a loss
	lost  *lostRange      // a restore still to do
	// Log de-duplication: the last settings warning, the last check error
	// and when it was logged.
	keptLogged   string
	faultsLogged string
	errLogged    string
	errAt        time.Time
}

// streamIdentity is what the Keeper remembers of the stream it saw last.
type streamIdentity struct {
	created time.Time // the server's; a recreated stream has another
	// since is the earliest time a message on it may have been published:
	// its first message's (at the last check), or its creation.
	since  time.Time
	maxAge time.Duration
}

// lostRange is what a restore must bring back: events acknowledged since
// since, and no older than maxAge (0: any age).
type lostRange struct {
	since  time.Time
	maxAge time.Duration
}

// NewKeeper returns a Keeper of the stream r publishes to.
func NewKeeper(r *Relay, js jetstream.JetStream, archive Archive, cfg KeeperConfig) (*Keeper, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	k := &Keeper{cfg: cfg, js: js, archive: archive, relay: r, state: StreamUnknown}
	k.setFaultMetrics(nil)
	return k, nil
}

// State is the stream's state as of the last check.
func (k *Keeper) State() StreamState {
	k.stateMu.Lock()
	defer k.stateMu.Unlock()
	return k.state
}

func (k *Keeper) setState(s StreamState, err error) {
	k.stateMu.Lock()
	old := k.state
	k.state = s
	k.stateMu.Unlock()
	if k.cfg.Metrics != nil {
		if s == StreamOK || s == StreamRestoring || s == StreamMisconfigured {
			k.cfg.Metrics.StreamPresent.Set(1)
		} else {
			k.cfg.Metrics.StreamPresent.Set(0)
		}
	}
	if old == s {
		return
	}
	log := k.cfg.Logger.With("stream", k.cfg.Stream.Name, "state", string(s), "was", string(old))
	switch s {
	case StreamMissing:
		log.Error("stream missing and not created: /readyz fails until it exists; deliveries are still accepted and wait in the outbox", "err", err)
	case StreamIncomplete:
		log.Error("stream lacks subjects of this hub and they could not be added: /readyz fails; those providers' events wait in the outbox", "err", err)
	case StreamConflict:
		log.Error("another stream holds subjects of this hub: /readyz fails; events JetStream routes there are refused and wait in the outbox (delete the other stream or remove the subjects from it)", "err", err)
	case StreamOK:
		if old != StreamUnknown {
			log.Info("stream ready")
		}
	}
}

// firstCheckTimeout bounds Start's check of the stream: NATS may not be
// reachable yet, and the hub serves meanwhile (the outbox keeps what it
// accepts).
const firstCheckTimeout = 3 * time.Second

// Start checks the stream once (Check, within ctx and at most 3 s), then
// keeps checking it in the background until Stop. A failed first check is
// logged, not returned: the stream should exist before the first publish,
// but the hub serves while NATS is unreachable, and the background checks
// create the stream once it is (and recreate it if it is lost). Starting a
// started keeper does nothing.
func (k *Keeper) Start(ctx context.Context) error {
	runCtx, ok := k.life.StartInit(ctx)
	if !ok {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, firstCheckTimeout)
	err := k.Check(cctx)
	cancel()
	if err != nil {
		k.cfg.Logger.Warn("stream not ready; retrying in the background", "stream", k.cfg.Stream.Name, "err", err)
	}
	k.life.Go(func() { k.run(runCtx) })
	return nil
}

// Stop stops the background checks and waits for the one under way.
// Idempotent; safe when never started.
func (k *Keeper) Stop(context.Context) error {
	k.life.StopWait()
	return nil
}

// run checks the stream every Interval, and when the relay asks (a
// publish failed as if the stream were gone, NATS reconnected), until ctx
// is done.
func (k *Keeper) run(ctx context.Context) {
	tick := time.NewTicker(k.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-k.relay.checkStream:
		}
		if err := k.Check(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, ErrStreamMisconfigured) {
			k.logCheckError(err)
		}
		// One check serves the wake-ups of the moment after it: a missing
		// stream fails every batch.
		select {
		case <-ctx.Done():
			return
		case <-time.After(minCheckGap):
		}
	}
}

// logCheckError logs a failed check, the same error at most every 30s.
func (k *Keeper) logCheckError(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if msg := err.Error(); msg != k.errLogged || time.Since(k.errAt) > 30*time.Second {
		k.errLogged, k.errAt = msg, time.Now()
		k.cfg.Logger.Warn("stream check failed; retrying", "stream", k.cfg.Stream.Name, "state", string(k.State()),
			"retry_in", k.cfg.Interval, "err", err)
	}
}

// Check makes the stream exist with this hub's subjects and, if the
// stream it knew is gone, restores what that stream held. An error leaves
// the state as the check found it: missing, incomplete, restoring (the
// restore resumes at the next check), or as it was when JetStream did not
// answer.
func (k *Keeper) Check(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	e, err := ensureStream(ectx, k.js, k.cfg.Stream)
	cancel()
	switch {
	case err != nil && e.missing:
		// Not yet a loss: only a stream of another creation time proves
		// one (an answer "not found" during an election may be wrong).
		k.setState(StreamMissing, err)
		return err
	case err != nil && e.incomplete:
		k.setState(StreamIncomplete, err)
		return err
	case err != nil:
		return err
	}
	k.logKept(e)
	if len(e.added) > 0 || len(e.raised) > 0 {
		k.cfg.Logger.Warn("stream updated: this hub's subjects and settings merged into it",
			"stream", k.cfg.Stream.Name, "added_subjects", e.added, "raised", e.raised, "subjects", e.info.Config.Subjects)
	}
	if k.known != nil && !e.info.Created.Equal(k.known.created) {
		if e.created {
			k.noteLoss("deleted")
		} else {
			k.noteLoss("replaced by a new stream of the same name")
		}
	}
	if e.created && k.known == nil && k.lost == nil {
		k.cfg.Logger.Info("stream created", "stream", k.cfg.Stream.Name, "subjects", e.info.Config.Subjects,
			"hint", "if a stream of this name held events before and was deleted while no hub ran, republish them: hub reconcile --since <time> --republish")
	}
	k.known = identityOf(e.info)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = subjectConflicts(cctx, k.js, k.cfg.Stream)
	cancel()
	if errors.Is(err, errSubjectConflict) {
		k.setState(StreamConflict, err)
		return err
	}
	if err != nil {
		return err
	}
	// Before a restore: what it re-queues would be diverted or refused too.
	if err := k.checkSettings(e.info.Config); err != nil {
		k.setState(StreamMisconfigured, err)
		return err
	}
	if e.created || len(e.added) > 0 || k.State() == StreamConflict || k.State() == StreamMisconfigured {
		// Rows that failed for want of the stream (or of their subjects,
		// or because another stream answered for them, or a setting
		// refused them) are due now; the restore does not need to wait for
		// them.
		k.relay.makeDue(ctx)
	}
	if k.lost != nil {
		k.setState(StreamRestoring, nil)
		if err := k.restore(ctx, *k.lost); err != nil {
			return fmt.Errorf("restore stream %s: %w", k.cfg.Stream.Name, err)
		}
		k.lost = nil
	}
	k.setState(StreamOK, nil)
	return nil
}

// noteLoss records that the stream last seen is gone, for the restore.
func (k *Keeper) noteLoss(how string) {
	if k.known == nil {
		return // noted already, or never seen
	}
	lost := lostRange{since: k.known.since, maxAge: k.known.maxAge}
	if k.lost != nil { // lost again before its restore finished
		lost.since = minTime(lost.since, k.lost.since)
		if k.lost.maxAge == 0 || (lost.maxAge != 0 && k.lost.maxAge > lost.maxAge) {
			lost.maxAge = k.lost.maxAge
		}
	}
	k.lost, k.known = &lost, nil
	if k.cfg.Metrics != nil {
		k.cfg.Metrics.StreamLost.Inc()
	}
	k.cfg.Logger.Error("stream lost: "+how+"; recreating it and re-queueing the events it held",
		"stream", k.cfg.Stream.Name, "held_since", lost.since, "max_age", ageString(lost.maxAge))
}

// logKept warns, once per distinct difference, about the stream's
// settings this hub leaves as they are.
func (k *Keeper) logKept(e ensured) {
	kept := strings.Join(e.kept, "; ")
	if kept == k.keptLogged {
		return
	}
	k.keptLogged = kept
	if kept != "" {
		k.cfg.Logger.Warn("stream settings differ from this hub's; the hub raises them but never lowers them (lower them with `nats stream edit` if intended)",
			"stream", k.cfg.Stream.Name, "differences", kept)
	}
}

func identityOf(info *jetstream.StreamInfo) *streamIdentity {
	id := &streamIdentity{created: info.Created, since: info.Created, maxAge: info.Config.MaxAge}
	if info.State.Msgs > 0 && info.State.FirstTime.After(id.since) {
		id.since = info.State.FirstTime
	}
	return id
}

// restore re-queues the events the lost stream held and the current one
// does not: every archived event of this hub's providers that JetStream
// acknowledged between the lost stream's first message (less
// restoreMargin) and the start of the restore, younger than the lost
// stream's maximum age (less the margin: retention would have removed it
// soon, and it is not brought back for another full age), that the stream
// does not hold under its message id (or as a republished copy). The relay
// publishes them with their original message ids. Other providers' events
// are left to the replicas that serve them (each restores its own): this
// hub's stream may not hold their subjects, and a provider no hub serves
// any more would leave rows PENDING for ever.
//
// Several hub replicas restore concurrently, and the relays publish
// meanwhile, without a second copy of any event: the stream is read after
// the restore started, and a row is re-queued only if it is still
// PROCESSED and was acknowledged before the restore started. An event
// published again before that point is in the stream as read; one
// published after it is not re-queued. (Across replicas, a clock skew
// smaller than the duplicate window is covered by JetStream's dedup.)
// Before reading, the restore waits until every publish this process sent
// earlier is recorded (recordBarrier), so no acknowledgement of the lost
// stream is still on its way to the archive; other replicas restore their
// own the same way.
func (k *Keeper) restore(ctx context.Context, lost lostRange) error {
	began, start := time.Now(), k.cfg.Now()
	from := lost.since.Add(-restoreMargin)
	if lost.maxAge > 0 {
		if edge := start.Add(-lost.maxAge + restoreMargin); edge.After(from) {
			from = edge
		}
	}
	if !from.Before(start) {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := k.relay.recorded.wait(wctx)
	cancel()
	if err != nil {
		return fmt.Errorf("wait for publishes in flight to be recorded: %w", err)
	}
	waited := time.Since(began)
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	held, err := StreamMsgIDs(sctx, k.js, Scan{Stream: k.cfg.Stream.Name})
	cancel()
	if err != nil {
		return fmt.Errorf("read the stream: %w", err)
	}
	log := k.cfg.Logger.With("stream", k.cfg.Stream.Name)
	log.Warn("stream restore started: re-queueing the events the lost stream held",
		"acknowledged_since", from, "acknowledged_before", start, "now_on_stream", len(held),
		"waited_for_publishes_in_flight", waited.Round(time.Millisecond))
	page := hub.PublishedPage{ReceivedSince: from.Add(-restoreLookback), From: from, Until: start,
		Providers: k.cfg.Stream.Providers, Limit: k.cfg.RestoreBatch}
	var checked, requeued int64
	progress := time.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		events, err := k.archive.PublishedBetween(pctx, page)
		if err != nil {
			cancel()
			return err
		}
		var ids []uuid.UUID
		for _, ev := range events {
			if !held[schema.MsgID(ev.Provider, ev.EventID)] {
				ids = append(ids, ev.ArchiveID)
			}
		}
		n, err := k.archive.Requeue(pctx, ids, start, restoreReason)
		cancel()
		if err != nil {
			return err
		}
		checked += int64(len(events))
		requeued += n
		if n > 0 {
			if k.cfg.Metrics != nil {
				k.cfg.Metrics.StreamRestored.Add(float64(n))
			}
			k.relay.notify()
		}
		if len(events) < page.Limit {
			break
		}
		page.After = events[len(events)-1]
		if time.Since(progress) > 10*time.Second {
			progress = time.Now()
			log.Info("stream restore in progress", "checked", checked, "requeued", requeued, "received_up_to", page.After.ReceivedAt)
		}
	}
	log.Warn("stream restore done: the relay publishes the re-queued events", "checked", checked, "requeued", requeued,
		"took", time.Since(began).Round(time.Millisecond))
	return nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
