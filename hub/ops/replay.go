package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// ReplayRequest selects a range of the stream to redeliver to one
// subscriber.
type ReplayRequest struct {
	Subscriber string
	Since      time.Time // required
	Until      time.Time // zero: up to now
	Subject    string    // optional filter, may use * and >; must be one the subscriber consumes
	DryRun     bool
	// Rate is the copies published per second: 0 (as fast as JetStream
	// acknowledges) or MinReplayRate..MaxReplayRate.
	Rate float64
	// Wait is how long to wait for the subscriber to settle the copies,
	// MinReplayWait..MaxReplayWait (DefaultReplayWait is a good value);
	// unused by a dry run.
	Wait time.Duration
	// PublishWithin, when set, refuses (before publishing anything) a
	// replay whose Rate would make publishing the range take longer: the
	// admin API answers within a bounded time.
	PublishWithin time.Duration
	// Progress, when set, is called with the counts so far: after the
	// range is read, as copies are published, and at each check of what
	// the subscriber settled. It runs on the replay's goroutine and must
	// return quickly.
	Progress func(ReplayResult)
}

// check refuses a request out of bounds before anything is read.
func (req ReplayRequest) check() error {
	if err := checkSubscriberName(req.Subscriber); err != nil {
		return err
	}
	if req.Since.IsZero() {
		return inputErr("since", "required (90m, 36h, 7d, 2026-11-30 or RFC 3339)")
	}
	if !req.Until.IsZero() && !req.Until.After(req.Since) {
		return inputErr("until", "must be after since")
	}
	if req.Subject != "" {
		if err := checkSubjectFilter("subject", req.Subject); err != nil {
			return err
		}
	}
	if err := checkRate(req.Rate); err != nil {
		return err
	}
	if !req.DryRun && (req.Wait < MinReplayWait || req.Wait > MaxReplayWait) {
		return inputErr("wait", "must be within %s..%s, got %s", MinReplayWait, MaxReplayWait, req.Wait)
	}
	return nil
}

// ReplayResult counts what a replay did. Events are counted once even if
// the stream held several copies (republishes).
type ReplayResult struct {
	RunID     string `json:"run_id"`
	Matched   int    `json:"matched"`   // events in the range the subscriber consumes
	Delivered int    `json:"delivered"` // copies published to the subscriber
	Processed int    `json:"processed"` // processed now (had not been before)
	Skipped   int    `json:"skipped"`   // already processed before: skipped by the subscriber
	// ToProcess is what the replay is for: the matched events the
	// subscriber had not processed (Matched - Skipped), the ones a run
	// would process. A dry run reports it (and Skipped) too.
	ToProcess    int    `json:"to_process"`
	DeadLettered int    `json:"dead_lettered"` // failed again and were dead-lettered
	Unsettled    int    `json:"unsettled"`     // not settled within the wait
	FirstSeq     uint64 `json:"first_stream_seq,omitempty"`
	LastSeq      uint64 `json:"last_stream_seq,omitempty"`
	DryRun       bool   `json:"dry_run"`
	// Destination says the subscriber is an HTTP destination, which sends
	// every copy, also of an event it delivered before
	// (subscriber.Config.ResendReplays): nothing is skipped, ToProcess is
	// every matched event, Resend of them were delivered before and are
	// sent again, and Resent of those were (an attempt delivered since the
	// replay began).
	Destination bool `json:"destination,omitempty"`
	Resend      int  `json:"resend,omitempty"`
	Resent      int  `json:"resent,omitempty"`
}

type replayMsg struct {
	provider, eventID, subject string
	seq                        uint64
	data                       []byte
	header                     nats.Header
}

// Replay redelivers the stream's messages of [Since, Until) that the
// subscriber consumes to that subscriber alone. It publishes copies on the
// subscriber's private replay subjects (schema.ReplaySubject), which only
// its own durable consumer filters, so no other subscriber sees anything.
// The subscriber's idempotency makes the replay safe: events it processed
// already are skipped without running the handler, so replaying a whole day
// re-runs only what never succeeded (dead letters included).
//
// Replay then waits for the subscriber to settle every copy (up to Wait)
// and reports how many were processed, skipped and dead-lettered.
//
// A run is recorded in the audit trail (action "replay"); a dry run,
// which changes nothing, is not.
func (o *Ops) Replay(ctx context.Context, req ReplayRequest) (ReplayResult, error) {
	if req.DryRun {
		return o.replay(ctx, req)
	}
	params := map[string]any{"subscriber": clip(req.Subscriber, maxAuditParam), "since": auditTime(req.Since),
		"until": auditTime(req.Until), "subject": clip(req.Subject, maxAuditParam), "rate": req.Rate, "wait": req.Wait.String()}
	return auditedResult(ctx, o, ActionReplay, "subscriber "+req.Subscriber, params, func() (ReplayResult, error) {
		return o.replay(ctx, req)
	})
}

func (o *Ops) replay(ctx context.Context, req ReplayRequest) (ReplayResult, error) {
	// Unpaced, the copies are published and acknowledged a batch at a time.
	j := newJob(ReplayResult{DryRun: req.DryRun, RunID: strconv.FormatInt(o.now().UnixNano(), 36)}, req.Progress).at(req.Rate, 1)
	if req.Rate == 0 {
		j.chunk = replayBatch
	}
	res := &j.res
	if err := req.check(); err != nil {
		return *res, err
	}
	if err := o.needStream(); err != nil {
		return *res, err
	}
	// A dry run is a read, a run an action: each in its own pool.
	pool, what := PoolActions, AdmitReplay
	if req.DryRun {
		pool, what = PoolReads, AdmitDryRun
	}
	permit, err := o.admission.admit(pool, what, Cost{})
	if err != nil {
		return *res, err
	}
	defer permit.Release()
	if err := o.checkSubscriber(ctx, req.Subscriber); err != nil {
		return *res, err
	}
	if !req.DryRun {
		if err := o.checkNotDiverted(ctx); err != nil {
			return *res, err
		}
	}
	filters, err := o.subscriberFilters(ctx, req.Subscriber)
	if err != nil {
		return *res, err
	}
	if req.Subject != "" && !slices.ContainsFunc(filters, func(f string) bool { return schema.SubjectsOverlap(f, req.Subject) }) {
		return *res, inputErr("subject", "%s does not consume %s (it consumes %s)", req.Subscriber, req.Subject, strings.Join(filters, ", "))
	}
	msgs, err := o.readRange(ctx, filters, req, permit)
	if err != nil {
		return *res, err
	}
	res.Matched = len(msgs)
	if res.Matched == 0 {
		return *res, fmt.Errorf("%w: no message in that range for %s", ErrNotFound, req.Subscriber)
	}
	res.FirstSeq, res.LastSeq = msgs[0].seq, msgs[len(msgs)-1].seq
	if !req.DryRun && req.Rate > 0 && req.PublishWithin > 0 {
		if took := time.Duration(float64(len(msgs)) / req.Rate * float64(time.Second)); took > req.PublishWithin {
			return *res, inputErr("rate", "at %g a second the %d events of the range take %s to publish, more than the %s this API waits: raise the rate (0 is unlimited), narrow the range, or use `hub replay`",
				req.Rate, len(msgs), took.Round(time.Second), req.PublishWithin)
		}
	}
	before, err := o.processedSet(ctx, req.Subscriber, msgs)
	if err != nil {
		return *res, err
	}
	if err := o.planCounts(ctx, req.Subscriber, len(before), res); err != nil || req.DryRun {
		return *res, err
	}
	j.report()
	err = o.replayCopies(ctx, j, req.Subscriber, req.Wait, msgs, before)
	return *res, err
}

// replayBatch is the copies an unpaced replay publishes before it waits
// for their acknowledgements.
const replayBatch = 256

// replayCopies publishes a copy of each of msgs to sub (publishReplay), in
// the steps of job j, and waits up to wait for sub to settle them,
// counting into j; before is those of msgs it had processed already.
// Replay and bulk replays (bulk.go) share it.
func (o *Ops) replayCopies(ctx context.Context, j *job[ReplayResult], sub string, wait time.Duration, msgs []replayMsg, before map[subscriber.EventKey]bool) error {
	res := &j.res
	// Dead letters written from here on are the replay's.
	lastDeadLetter, err := subscriber.LastDeadLetterID(ctx, o.subs, sub)
	if err != nil {
		return subscriberErr(err)
	}
	began := time.Now()
	if err := j.steps(ctx, len(msgs), func(lo, hi int) error { return o.publishReplay(ctx, sub, msgs[lo:hi], res) }); err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	for {
		done, dead, err := o.settled(ctx, sub, msgs, lastDeadLetter)
		if err != nil {
			return err
		}
		res.Processed = len(done) - len(before)
		res.DeadLettered = len(dead)
		res.Unsettled = res.Matched - len(done) - len(dead)
		if res.Destination {
			if res.Resent, err = o.resent(ctx, sub, before, began); err != nil {
				return err
			}
			res.Unsettled += res.Resend - res.Resent // sent again, or not yet
		}
		j.report()
		if res.Unsettled <= 0 || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readRange reads [Since, Until) of the stream on filters, keeping one
// message per event (the first), and only those matching req.Subject. It
// reads up to the stream's last message when it started (relay.Scan): a
// read that cannot get there fails with ErrIncompleteRead, never returns
// part of the range. A dry run reads headers only. The bytes it keeps are
// added to permit (its pool's bytes, given back when the caller releases
// it); past the pool's bound it fails with ErrBusy.
func (o *Ops) readRange(ctx context.Context, filters []string, req ReplayRequest, permit *Permit) ([]replayMsg, error) {
	seen := map[subscriber.EventKey]bool{}
	var out []replayMsg
	size, scanned := 0, 0
	scan := relay.Scan{Stream: o.stream, Subjects: filters, StartTime: req.Since, HeadersOnly: req.DryRun, Stall: o.scanStall}
	read, err := scan.Run(ctx, o.js, func(m relay.ScanMsg) error {
		md := m.Meta
		if !req.Until.IsZero() && !md.Timestamp.Before(req.Until) {
			return relay.ErrStopScan
		}
		if req.Subject != "" && !schema.MatchSubject(req.Subject, m.Msg.Subject()) {
			return nil
		}
		h := m.Msg.Headers()
		if schema.IsServerMarker(h) {
			return nil // a subject delete marker, not an event
		}
		if scanned++; scanned%pacedMsgs == 0 {
			if err := permit.Pace(ctx, pacedMsgs*streamMsgCost); err != nil {
				return err
			}
		}
		meta, err := schema.ParseMetadata(h)
		key := subscriber.EventKey{Provider: meta.Provider, EventID: meta.EventID}
		if err != nil || seen[key] {
			return nil
		}
		seen[key] = true
		rm := replayMsg{provider: meta.Provider, eventID: meta.EventID, subject: m.Msg.Subject(), seq: md.Sequence.Stream, header: h}
		if req.DryRun {
			// Counted as the run would hold it.
			n, _ := strconv.Atoi(h.Get(nats.MsgSize))
			size += n
		} else {
			rm.data = m.Msg.Data()
			size += len(rm.data)
		}
		size += headerSize(h)
		out = append(out, rm)
		if err := permit.Grow(int64(len(rm.data) + headerSize(h))); err != nil {
			return err
		}
		if len(out) > MaxReplayEvents || size > MaxReplayBytes {
			return inputErr("until", "the range holds more than %d events or %d MiB (it reached %s at stream seq %d): replay it in parts (consecutive ranges are safe to replay)",
				MaxReplayEvents, MaxReplayBytes>>20, md.Timestamp.UTC().Format(time.RFC3339), md.Sequence.Stream)
		}
		return nil
	})
	permit.Scanned(int64(read.Msgs) * streamMsgCost)
	if err != nil {
		if err = o.scanErr(err); errors.Is(err, ErrIncompleteRead) {
			err = fmt.Errorf("%w; nothing was replayed (running it again is safe)", err)
		}
		return nil, err
	}
	return out, nil
}

// publishReplay publishes a copy of each of msgs on sub's replay subject,
// under a message id of its own, and waits for their acknowledgements.
func (o *Ops) publishReplay(ctx context.Context, sub string, msgs []replayMsg, res *ReplayResult) error {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, m := range msgs {
		if m.header == nil {
			// A bulk replay's message, read now by its sequence.
			var err error
			if m, err = o.loadMsg(ctx, m); err != nil {
				return err
			}
		}
		h := nats.Header{}
		for k, v := range m.header {
			h[k] = slices.Clone(v)
		}
		h.Set(schema.HeaderMsgID, schema.MsgID(m.provider, m.eventID)+":replay:"+sub+":"+res.RunID)
		h.Set(schema.HeaderReplayOf, strconv.FormatUint(m.seq, 10))
		f, err := o.js.PublishMsgAsync(&nats.Msg{Subject: schema.ReplaySubject(sub, m.subject), Data: m.data, Header: h},
			jetstream.WithExpectStream(o.stream))
		if err != nil {
			return fmt.Errorf("publish replay copy: %w", err)
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
			res.Delivered++
		case err := <-f.Err():
			return fmt.Errorf("publish replay copy: %w (%d delivered so far; running the replay again is safe)", err, res.Delivered)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// processedSet returns the events of msgs the subscriber has processed.
func (o *Ops) processedSet(ctx context.Context, sub string, msgs []replayMsg) (map[subscriber.EventKey]bool, error) {
	done, err := subscriber.ProcessedMessages(ctx, o.subs, sub, keys(msgs))
	if err != nil {
		return nil, subscriberErr(err)
	}
	out := make(map[subscriber.EventKey]bool, len(done))
	for _, m := range done {
		out[m.EventKey] = true
	}
	return out, nil
}

// settled returns the events of msgs now processed, and those (not
// processed) dead-lettered after dead letter afterID.
func (o *Ops) settled(ctx context.Context, sub string, msgs []replayMsg, afterID int64) (map[subscriber.EventKey]bool, map[subscriber.EventKey]bool, error) {
	done, err := o.processedSet(ctx, sub, msgs)
	if err != nil {
		return nil, nil, err
	}
	dls, err := subscriber.DeadLettersOf(ctx, o.subs, sub, keys(msgs), afterID)
	if err != nil {
		return nil, nil, subscriberErr(err)
	}
	dead := map[subscriber.EventKey]bool{}
	for _, d := range dls {
		if !done[d.EventKey] {
			dead[d.EventKey] = true
		}
	}
	return done, dead, nil
}

// headerSize is about the memory a message's headers take.
func headerSize(h nats.Header) int {
	n := 0
	for k, vs := range h {
		n += len(k)
		for _, v := range vs {
			n += len(v)
		}
	}
	return n
}

func keys(msgs []replayMsg) []subscriber.EventKey {
	out := make([]subscriber.EventKey, len(msgs))
	for i, m := range msgs {
		out[i] = subscriber.EventKey{Provider: m.provider, EventID: m.eventID}
	}
	return out
}
