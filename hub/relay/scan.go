package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/internal/backoff"
	"github.com/hookhub/hookhub/schema"
)

// DefaultScanStall is how long a Scan waits for the stream to deliver
// anything before it gives up (Scan.Stall).
const DefaultScanStall = 30 * time.Second

const (
	// scanFetchWait is the longest one fetch waits for messages; an empty
	// fetch is retried until the scan's Stall.
	scanFetchWait = 2 * time.Second
	// scanBatch is the most messages one fetch asks for.
	scanBatch = 1000
	// scanBatchBytes is the least bytes one fetch asks for; a fetch always
	// has room for the largest message the server accepts.
	scanBatchBytes = 4 << 20
	// scanRetryPause separates a failed fetch from the next attempt.
	scanRetryPause = 250 * time.Millisecond
)

// Errors a Scan fails with, wrapped in a *ScanError.
var (
	// ErrScanStalled: the stream delivered nothing for the scan's Stall
	// before the scan reached its end.
	ErrScanStalled = errors.New("the stream delivered nothing")
	// ErrStreamGone: the stream was deleted (or replaced by another of the
	// same name) while it was read.
	ErrStreamGone = errors.New("the stream was deleted during the read")
)

// ErrStopScan, returned by a Scan's callback, ends the scan early without
// an error (like fs.SkipAll).
var ErrStopScan = errors.New("stop the scan")

// ScanError is a scan that did not reach its end: Err says why (ErrScanStalled,
// ErrStreamGone, a context's error or the server's), Reached is the last
// stream sequence read (0: none) and End the sequence the scan had to reach.
type ScanError struct {
	Stream       string
	Reached, End uint64
	Err          error
}

func (e *ScanError) Error() string {
	return fmt.Sprintf("read stream %s: %v (read up to sequence %d of %d)", e.Stream, e.Err, e.Reached, e.End)
}

func (e *ScanError) Unwrap() error { return e.Err }

// Scan reads a stream from a start to an end it knows before it starts:
// the stream's last sequence at that moment. It never decides it is done
// because nothing arrived for a while: it ends at a message at or past the
// end, at a message after which none matching its subjects is pending
// (gaps: deleted messages, purged ranges, other subjects), or when the
// server says nothing matching is pending. A fetch that brings nothing is
// retried until Stall passes without progress; then the scan fails with a
// *ScanError naming the sequence it reached.
//
// Every stream-scan of the hub is a Scan (the relay's look-up of earlier
// attempts, the keeper's restore, replay, reconcile, bench): one end rule.
type Scan struct {
	Stream string
	// Subjects filter the messages read; none reads every subject.
	Subjects []string
	// StartSeq, else StartTime, else the stream's first message is where
	// the scan starts.
	StartSeq  uint64
	StartTime time.Time
	// HeadersOnly reads headers without data (JetStream adds the data's
	// size as the header Nats-Msg-Size).
	HeadersOnly bool
	// Stall is how long the scan tolerates no progress; 0 is
	// DefaultScanStall.
	Stall time.Duration

	// fetchWait and batch override scanFetchWait and scanBatch (tests).
	fetchWait time.Duration
	batch     int
	// onConsumer is called with the name of every consumer the scan
	// creates (tests).
	onConsumer func(name string)
}

// ScanMsg is a message a Scan read, with its metadata.
type ScanMsg struct {
	Msg  jetstream.Msg
	Meta *jetstream.MsgMetadata
}

// ScanResult says where a scan ended.
type ScanResult struct {
	End     uint64 // the stream's last sequence when the scan started
	Reached uint64 // the last sequence read (0: none)
	Msgs    int    // messages passed to the callback
}

// Run reads the stream on js and calls fn with each message, in stream
// order, up to the end. fn returning ErrStopScan ends the scan without an
// error; any other error ends it with that error. Run returns a
// *ScanError when it cannot reach the end; the context's error (wrapped)
// when ctx ends; jetstream.ErrStreamNotFound (wrapped) when the stream does
// not exist when it starts.
func (s Scan) Run(ctx context.Context, js jetstream.JetStream, fn func(ScanMsg) error) (ScanResult, error) {
	var res ScanResult
	st, err := js.Stream(ctx, s.Stream)
	if err != nil {
		return res, fmt.Errorf("stream %s: %w", s.Stream, err)
	}
	info := st.CachedInfo()
	res.End = info.State.LastSeq
	if res.End == 0 || s.StartSeq > res.End || info.State.Msgs == 0 {
		return res, nil
	}
	sc := &scanner{Scan: s, js: js, st: st, created: info.Created, res: &res, fn: fn,
		maxInactive: info.Config.ConsumerLimits.InactiveThreshold}
	if sc.Stall <= 0 {
		sc.Stall = DefaultScanStall
	}
	if sc.fetchWait <= 0 {
		sc.fetchWait = scanFetchWait
	}
	sc.fetchWait = min(sc.fetchWait, sc.Stall)
	if sc.batch <= 0 {
		sc.batch = scanBatch
	}
	sc.batchBytes = scanBatchBytes
	if nc := js.Conn(); nc != nil {
		sc.batchBytes = max(sc.batchBytes, 2*int(nc.MaxPayload()))
	}
	defer sc.dropConsumer(ctx)
	err = sc.run(ctx)
	if errors.Is(err, ErrStopScan) {
		return res, nil
	}
	return res, err
}

type scanner struct {
	Scan
	js      jetstream.JetStream
	st      jetstream.Stream
	created time.Time // of the stream when the scan started
	// maxInactive is the stream's limit on a consumer's inactive
	// threshold (consumer_limits; 0: none): the server refuses a consumer
	// asking for more.
	maxInactive time.Duration
	res         *ScanResult
	fn          func(ScanMsg) error
	batchBytes  int

	cons     jetstream.Consumer
	lastCons uint64    // consumer sequence of the last message of cons
	progress time.Time // last message read
	lastErr  error     // last error retried
}

// errDone ends run: the scan reached its end.
var errDone = errors.New("done")

func (sc *scanner) fail(err error) error {
	return &ScanError{Stream: sc.Scan.Stream, Reached: sc.res.Reached, End: sc.res.End, Err: err}
}

func (sc *scanner) run(ctx context.Context) error {
	sc.progress = time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return sc.fail(err)
		}
		if sc.cons == nil {
			err := sc.newConsumer(ctx)
			switch {
			case errors.Is(err, errDone):
				return nil
			case errors.Is(err, jetstream.ErrStreamNotFound):
				return sc.fail(ErrStreamGone)
			case err != nil:
				if err := sc.retry(ctx, fmt.Errorf("create consumer: %w", err)); err != nil {
					return err
				}
				continue
			}
		}
		read, err := sc.fetch(ctx)
		switch {
		case errors.Is(err, errDone):
			return nil
		case errors.Is(err, ErrStopScan):
			return err
		case err != nil:
			return err // from fn, or the context
		case read:
			continue
		}
		// Nothing read: slow, lost in transit, or nothing left. Ask the
		// server rather than guess.
		switch err := sc.check(ctx); {
		case errors.Is(err, errDone):
			return nil
		case err != nil:
			return err
		}
	}
}

// newConsumer creates a consumer from the message after the last one read
// (or the scan's start); errDone when nothing matching is pending from
// there.
func (sc *scanner) newConsumer(ctx context.Context) error {
	cfg := jetstream.ConsumerConfig{
		AckPolicy:         jetstream.AckNonePolicy,
		HeadersOnly:       sc.HeadersOnly,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: max(time.Minute, 2*sc.Stall),
	}
	if sc.maxInactive > 0 {
		// Above the stream's limit, every consumer would be refused (and
		// every scan stall): a consumer removed early is read again from
		// the last message read (check).
		cfg.InactiveThreshold = min(cfg.InactiveThreshold, sc.maxInactive)
	}
	if len(sc.Subjects) == 1 {
		cfg.FilterSubject = sc.Subjects[0]
	} else {
		cfg.FilterSubjects = sc.Subjects
	}
	switch {
	case sc.res.Reached > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, sc.res.Reached+1
	case sc.StartSeq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, sc.StartSeq
	case !sc.StartTime.IsZero():
		t := sc.StartTime
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	default:
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	cons, err := sc.js.CreateConsumer(cctx, sc.Scan.Stream, cfg)
	cancel()
	if err != nil {
		return err
	}
	sc.cons, sc.lastCons = cons, 0
	if sc.onConsumer != nil {
		sc.onConsumer(cons.CachedInfo().Name)
	}
	if cons.CachedInfo().NumPending == 0 {
		// Nothing matching from the start to the stream's last message now
		// (at or past the end).
		return errDone
	}
	return nil
}

// fetch reads one batch; read says whether it brought a message. It
// returns errDone at the end, the error of fn, or that of the context.
// A fetch that fails is recorded in lastErr and reported as nothing read.
func (sc *scanner) fetch(ctx context.Context) (read bool, err error) {
	began := time.Now()
	fctx, cancel := context.WithTimeout(ctx, sc.fetchWait)
	defer cancel()
	batch, err := sc.cons.Fetch(sc.batch, jetstream.FetchMaxBytes(sc.batchBytes), jetstream.FetchContext(fctx))
	if err != nil {
		if ctx.Err() != nil {
			return false, sc.fail(ctx.Err())
		}
		sc.lastErr = fmt.Errorf("fetch: %w", err)
		if err := backoff.Sleep(ctx, scanRetryPause); err != nil {
			return false, sc.fail(err)
		}
		return false, nil
	}
	for m := range batch.Messages() {
		md, err := m.Metadata()
		if err != nil {
			return read, sc.fail(fmt.Errorf("message metadata: %w", err))
		}
		if md.Sequence.Consumer != sc.lastCons+1 {
			// Messages lost on the way (the consumer does not redeliver):
			// read again from the last one read.
			sc.lastErr = fmt.Errorf("consumer sequence %d after %d: messages lost in transit", md.Sequence.Consumer, sc.lastCons)
			sc.dropConsumer(ctx)
			return read, nil
		}
		sc.lastCons = md.Sequence.Consumer
		if md.Sequence.Stream > sc.res.End {
			return read, errDone
		}
		read = true
		sc.res.Reached, sc.progress = md.Sequence.Stream, time.Now()
		if err := sc.fn(ScanMsg{Msg: m, Meta: md}); err != nil {
			return read, err
		}
		sc.res.Msgs++
		if md.Sequence.Stream == sc.res.End || md.NumPending == 0 {
			return read, errDone
		}
	}
	if ctx.Err() != nil {
		return read, sc.fail(ctx.Err())
	}
	if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
		sc.lastErr = fmt.Errorf("fetch: %w", err)
	}
	if !read && time.Since(began) < sc.fetchWait/2 {
		// An empty answer given at once must not spin.
		if err := backoff.Sleep(ctx, scanRetryPause); err != nil {
			return read, sc.fail(err)
		}
	}
	return read, nil
}

// check runs after a fetch that read nothing: it fails when the stream is
// gone or the scan made no progress for Stall, returns nil to fetch again
// (a new consumer if messages were lost), or errDone when the server says
// nothing matching is left before the end.
func (sc *scanner) check(ctx context.Context) error {
	ictx, cancel := context.WithTimeout(ctx, sc.fetchWait)
	defer cancel()
	info, err := sc.st.Info(ictx)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return sc.fail(ErrStreamGone)
	case err == nil && !info.Created.Equal(sc.created):
		return sc.fail(fmt.Errorf("%w (a stream of the same name was created at %s)", ErrStreamGone, info.Created.UTC().Format(time.RFC3339)))
	case err == nil && (info.State.Msgs == 0 || info.State.FirstSeq > sc.res.End):
		return errDone // the rest of the range was purged or removed
	case err != nil:
		sc.lastErr = fmt.Errorf("stream info: %w", err)
	}
	if sc.cons != nil {
		ci, err := sc.cons.Info(ictx)
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			sc.cons = nil // removed (e.g. inactive): read again from the last one read
		case err != nil:
			sc.lastErr = fmt.Errorf("consumer info: %w", err)
		case ci.Delivered.Consumer > sc.lastCons:
			// Delivered, never received: read again from the last one read.
			sc.lastErr = fmt.Errorf("consumer delivered %d messages, %d received", ci.Delivered.Consumer, sc.lastCons)
			sc.dropConsumer(ctx)
		case ci.NumPending == 0:
			return errDone // nothing matching after the last message read
		}
	}
	return sc.retry(ctx, nil)
}

// retry fails the scan when it made no progress for Stall, else returns
// nil (after a pause when err, the reason, is set).
func (sc *scanner) retry(ctx context.Context, err error) error {
	if err != nil {
		sc.lastErr = err
	}
	if errors.Is(sc.lastErr, nats.ErrConnectionClosed) {
		return sc.fail(sc.lastErr) // for good
	}
	if since := time.Since(sc.progress); since >= sc.Stall {
		if sc.lastErr != nil {
			return sc.fail(fmt.Errorf("%w for %s (last error: %v)", ErrScanStalled, since.Round(time.Second), sc.lastErr))
		}
		return sc.fail(fmt.Errorf("%w for %s", ErrScanStalled, since.Round(time.Second)))
	}
	if err != nil {
		if err := backoff.Sleep(ctx, scanRetryPause); err != nil {
			return sc.fail(err)
		}
	}
	return nil
}

// dropConsumer deletes the scan's consumer, if any (its inactive threshold
// removes it anyway).
func (sc *scanner) dropConsumer(ctx context.Context) {
	if sc.cons == nil {
		return
	}
	name := sc.cons.CachedInfo().Name
	sc.cons = nil
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = sc.js.DeleteConsumer(dctx, sc.Scan.Stream, name)
}

// StreamMsgIDs reads the message ids the stream holds from s's start (s
// is read headers only), with the originals of republished copies: what
// the keeper's restore and reconcile compare the archive with.
func StreamMsgIDs(ctx context.Context, js jetstream.JetStream, s Scan) (map[string]bool, error) {
	held := map[string]bool{}
	s.HeadersOnly = true
	_, err := s.Run(ctx, js, func(m ScanMsg) error {
		AddMsgIDs(held, m.Msg.Headers())
		return nil
	})
	if err != nil {
		return nil, err
	}
	return held, nil
}

// AddMsgIDs adds to held the message id a stored message's headers h
// carry, and the original's id when it is a republished copy. A subject
// delete marker the server wrote (schema.IsServerMarker) and a message
// without an id add nothing.
func AddMsgIDs(held map[string]bool, h nats.Header) {
	if schema.IsServerMarker(h) {
		return
	}
	if id := h.Get(schema.HeaderMsgID); id != "" {
		held[id] = true
	}
	if orig := h.Get(schema.HeaderRepublish); orig != "" {
		held[orig] = true
	}
}
