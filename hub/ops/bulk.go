package ops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Bulk actions: replay the events an EventFilter matches to one
// subscriber (or destination: destinations are subscribers), or republish
// them. A bulk action is planned first (a dry run: what matches, what the
// subscriber processed already, the first events), then run at a bounded
// rate, cancellable through its context, and safe to repeat:
//
//   - a bulk replay publishes copies of the events' original messages
//     (read by their stream sequence) on the subscriber's private replay
//     subjects, as Replay does and through the same code (replayCopies),
//     so no other subscriber sees them, and the subscriber's dedup skips
//     the events it processed;
//   - a bulk republish is Republish of the events' archive ids, a page at
//     a time at the rate: every subscriber receives the copies, and each
//     one's dedup skips what it processed.

// Bulk actions (BulkRequest.Action).
const (
	BulkReplay    = "replay"
	BulkRepublish = "republish"
)

// Bounds of bulk actions.
const (
	// MaxBulkEvents is the events one bulk action takes: past it the
	// action is refused before anything is published.
	MaxBulkEvents = 10_000
	// DefaultBulkRate and MaxBulkRate bound a bulk action's pace in events
	// a second (at least MinReplayRate): modest by default, so that live
	// traffic keeps its latency, and never unlimited.
	DefaultBulkRate = 50.0
	MaxBulkRate     = 1000.0
	// DefaultBulkSample and MaxBulkSample bound the events a plan lists.
	DefaultBulkSample = 20
	MaxBulkSample     = 100
	// MaxBulkScanRows bounds the archive rows a bulk action's payload
	// filter reads over all its pages.
	MaxBulkScanRows = 1_000_000
	// MaxBulkScanBytes bounds the payload bytes (as stored) it reads.
	MaxBulkScanBytes = 1 << 30
	// bulkPage is the rows the filter is read a page at a time.
	bulkPage = 1000
)

// BulkRequest is a bulk action on the events Filter matches.
type BulkRequest struct {
	Action string // BulkReplay or BulkRepublish
	// Filter selects the events: Since is required; Status is empty (first
	// deliveries) or PROCESSED; Before and Limit are not used.
	Filter EventFilter
	// Subscriber receives a bulk replay (required for one; not used by a
	// republish).
	Subscriber string
	DryRun     bool
	// Rate is the events published a second: 0 (DefaultBulkRate) or
	// MinReplayRate..MaxBulkRate.
	Rate float64
	// Wait is how long a bulk replay waits for the subscriber to settle
	// the copies: 0 (DefaultReplayWait) or MinReplayWait..MaxReplayWait.
	Wait time.Duration
	// Sample is the events a plan lists: 0 (DefaultBulkSample) up to
	// MaxBulkSample.
	Sample int
	// PublishWithin, when set, refuses (before publishing anything) a run
	// whose Rate would make publishing take longer: the admin API answers
	// within a bounded time.
	PublishWithin time.Duration
	// Progress, when set, is called with the counts so far as the run goes;
	// it runs on the action's goroutine and must return quickly.
	Progress func(BulkResult)
}

// BulkResult is what a bulk action matched and did.
type BulkResult struct {
	RunID      string  `json:"run_id"`
	Action     string  `json:"action"`
	Subscriber string  `json:"subscriber,omitempty"`
	DryRun     bool    `json:"dry_run"`
	Rate       float64 `json:"rate"`
	// Matched is the events (first deliveries) the filter matched;
	// Scanned the archive rows a payload filter read to find them.
	Matched int `json:"matched"`
	Scanned int `json:"scanned,omitempty"`
	// Left out of Matched: NotPublished events were never published
	// (PENDING, FAILED); NotConsumed are on subjects the subscriber does
	// not consume (a replay sends it only its own); Gone are no longer on
	// the stream (its retention): republish them instead.
	NotPublished int `json:"not_published"`
	NotConsumed  int `json:"not_consumed,omitempty"`
	Gone         int `json:"gone,omitempty"`
	// Eligible is what the action publishes: one copy each.
	Eligible int `json:"eligible"`
	// A replay's: AlreadyProcessed of Eligible the subscriber processed
	// before (its dedup skips them), ToProcess the rest. To a Destination,
	// which sends every copy (ReplayResult.Destination), ToProcess is
	// every eligible event and AlreadyProcessed those it sends again;
	// Resent counts them once sent.
	AlreadyProcessed int  `json:"already_processed,omitempty"`
	ToProcess        int  `json:"to_process,omitempty"`
	Destination      bool `json:"destination,omitempty"`
	Resent           int  `json:"resent,omitempty"`
	// Published is the copies published so far; Failed (republish) those
	// JetStream did not acknowledge.
	Published int `json:"published"`
	Failed    int `json:"failed,omitempty"`
	// A replay's, once the copies are settled (or the wait is over), as
	// Replay counts them.
	Processed    int `json:"processed,omitempty"`
	Skipped      int `json:"skipped,omitempty"`
	DeadLettered int `json:"dead_lettered,omitempty"`
	Unsettled    int `json:"unsettled,omitempty"`
	// Sample is the first matched events, newest first.
	Sample []EventRow `json:"sample,omitempty"`
	// Cancelled: the run's context was cancelled; what is counted was done.
	Cancelled bool `json:"cancelled,omitempty"`
}

// check refuses a request out of bounds and fills in the defaults.
func (req *BulkRequest) check(now time.Time) error {
	switch req.Action {
	case BulkReplay:
		if err := checkSubscriberName(req.Subscriber); err != nil {
			return err
		}
	case BulkRepublish:
		if req.Subscriber != "" {
			return inputErr("subscriber", "a republish goes to every subscriber; replay to send events to one")
		}
	default:
		return inputErr("action", "%s is not a bulk action (replay or republish)", quote(req.Action))
	}
	f := &req.Filter
	if f.Since.IsZero() {
		return inputErr("since", "required: a bulk action works on a bounded time range (90m, 36h, 7d, 2026-11-30 or RFC 3339)")
	}
	switch f.Status {
	case "", hub.Processed:
	default:
		return inputErr("status", "a bulk action takes published events (status PROCESSED, or any): %s events have no message on the stream", f.Status)
	}
	if f.Before != "" {
		return inputErr("before", "a bulk action takes the whole filter, not a page of it")
	}
	f.Limit = bulkPage
	if _, err := f.check(); err != nil {
		return err
	}
	if _, err := f.checkWhere(now); err != nil {
		return err
	}
	req.Rate = cmp.Or(req.Rate, DefaultBulkRate)
	if req.Rate < MinReplayRate || req.Rate > MaxBulkRate || req.Rate != req.Rate {
		return inputErr("rate", "must be within %g..%g events a second (0: %g), got %g", MinReplayRate, MaxBulkRate, DefaultBulkRate, req.Rate)
	}
	req.Wait = cmp.Or(req.Wait, DefaultReplayWait)
	if req.Wait < MinReplayWait || req.Wait > MaxReplayWait {
		return inputErr("wait", "must be within %s..%s, got %s", MinReplayWait, MaxReplayWait, req.Wait)
	}
	if req.Sample < 0 || req.Sample > MaxBulkSample {
		return inputErr("sample", "must be within 0..%d, got %d", MaxBulkSample, req.Sample)
	}
	req.Sample = cmp.Or(req.Sample, DefaultBulkSample)
	return nil
}

// Bulk plans (DryRun) or runs a bulk action. A run publishes at most
// Rate copies a second and stops when ctx is cancelled (the result says
// so, with what was done, and the error is ctx's); repeating it is safe.
//
// A run is recorded in the audit trail once, as one action (a dry run,
// which changes nothing, is not): a run refused before it starts (a bad
// filter, over the bounds, a busy hub, an unknown subscriber) as refused,
// with its reason and counts so far.
func (o *Ops) Bulk(ctx context.Context, req BulkRequest) (BulkResult, error) {
	j := newJob(BulkResult{RunID: strconv.FormatInt(o.now().UnixNano(), 36), Action: req.Action, Subscriber: req.Subscriber, DryRun: req.DryRun}, req.Progress)
	if req.Filter.Now.IsZero() {
		// One now for the check and every page of the filter: a range
		// read as "7d" is exactly the longest a payload filter searches.
		req.Filter.Now = o.now()
	}
	action, target := ActionBulkRepublish, "stream"
	if req.Action == BulkReplay {
		action, target = ActionBulkReplay, "subscriber "+req.Subscriber
	}
	p, err := o.planBulk(ctx, &req, &j.res)
	if p.release != nil {
		defer p.release()
	}
	if err != nil || req.DryRun {
		if err != nil && !req.DryRun && !errors.Is(err, ErrAuditUnavailable) {
			_ = o.Refuse(ctx, action, target, bulkAuditParams(req, j.res), err)
		}
		return j.res, err
	}
	j.report()
	_, err = auditedResult(ctx, o, action, target, bulkAuditParams(req, j.res), func() (BulkResult, error) {
		var err error
		if req.Action == BulkReplay {
			err = o.bulkReplay(ctx, j, req, p)
		} else {
			err = o.bulkRepublish(ctx, j.at(req.Rate, min(republishPage, int(req.Rate/5))), p.ids)
		}
		j.res.Cancelled = ctx.Err() != nil
		return j.res, err
	})
	j.report()
	return j.res, err
}

// bulkAuditParams are a bulk run's parameters in the audit trail.
func bulkAuditParams(req BulkRequest, res BulkResult) map[string]any {
	f := req.Filter
	return map[string]any{"action": clip(req.Action, maxAuditParam), "subscriber": clip(req.Subscriber, maxAuditParam),
		"provider": clip(f.Provider, maxAuditParam), "type": clip(f.Type, maxAuditParam),
		"entity": clip(f.Entity, maxAuditParam), "status": clip(string(f.Status), maxAuditParam),
		"since": auditTime(f.Since), "until": auditTime(f.Until), "where": clip(FormatWheres(f.Where), maxAuditParam),
		"rate": req.Rate, "matched": res.Matched, "eligible": res.Eligible}
}

// bulkPlan is what a bulk run publishes: a replay's messages and which of
// them the subscriber processed before, or a republish's archive ids;
// release settles and gives back the admission it holds (a plan's in the
// reads' pool, a run's in the actions').
type bulkPlan struct {
	msgs    []replayMsg
	ids     []string
	before  map[subscriber.EventKey]bool
	counts  ReplayResult // a replay's, as Replay plans them
	release func()
}

// planBulk checks req, admits it and counts what req matches into res (a
// dry run's answer); for a run, the plan of what to publish.
func (o *Ops) planBulk(ctx context.Context, req *BulkRequest, res *BulkResult) (bulkPlan, error) {
	var p bulkPlan
	if err := req.check(req.Filter.Now); err != nil {
		return p, err
	}
	res.Rate = req.Rate
	if req.Action == BulkReplay || !req.DryRun {
		if err := o.needStream(); err != nil {
			return p, err
		}
	}
	if req.Action == BulkRepublish && !req.DryRun && o.republisher == nil {
		return p, fmt.Errorf("%w: this hub has no publisher for republished copies", ErrNoStream)
	}
	permit, err := o.admitBulk(*req)
	if err != nil {
		return p, err
	}
	read := 0 // stream messages read, settled with the pool with the archive rows
	p.release = func() {
		permit.Scanned(int64(read)*streamMsgCost + int64(max(res.Scanned, res.Matched)))
		permit.Release()
	}
	filters, err := o.bulkFilters(ctx, *req)
	if err != nil {
		return p, err
	}
	if !req.DryRun {
		if err := o.checkNotDiverted(ctx); err != nil {
			return p, err
		}
	}
	rows, err := o.bulkMatch(ctx, *req, permit, res)
	if err != nil {
		return p, err
	}
	if p.msgs, p.ids, read, err = o.bulkSelect(ctx, *req, rows, filters, permit, res); err != nil {
		return p, err
	}
	res.Eligible = len(p.msgs) + len(p.ids)
	if req.Action == BulkReplay && len(p.msgs) > 0 {
		if p.before, err = o.processedSet(ctx, req.Subscriber, p.msgs); err != nil {
			return p, err
		}
		p.counts = ReplayResult{RunID: res.RunID, Matched: len(p.msgs)}
		if err := o.planCounts(ctx, req.Subscriber, len(p.before), &p.counts); err != nil {
			return p, err
		}
		res.Destination, res.AlreadyProcessed, res.ToProcess = p.counts.Destination, len(p.before), p.counts.ToProcess
	}
	if req.DryRun {
		return p, nil
	}
	if res.Eligible == 0 {
		return p, fmt.Errorf("%w: of the %d events the filter matched, none can be %sed (%d never published, %d not consumed by the subscriber, %d no longer on the stream)",
			ErrNotFound, res.Matched, req.Action, res.NotPublished, res.NotConsumed, res.Gone)
	}
	if req.PublishWithin > 0 {
		if took := time.Duration(float64(res.Eligible) / req.Rate * float64(time.Second)); took > req.PublishWithin {
			return p, inputErr("rate", "at %g a second the %d events take %s to publish, more than the %s this API waits: raise the rate, narrow the filter, or use `hub bulk`",
				req.Rate, res.Eligible, took.Round(time.Second), req.PublishWithin)
		}
	}
	return p, nil
}

// admitBulk admits a bulk action: a plan is a read (it holds a page of
// the filter's scan at a time), a run an action, each in its own pool.
func (o *Ops) admitBulk(req BulkRequest) (*Permit, error) {
	if !req.DryRun {
		return o.admission.admit(PoolActions, AdmitBulk, Cost{})
	}
	cost := Cost{Rows: bulkPage}
	if len(req.Filter.Where) > 0 {
		cost.Rows = int64(o.payloadScanRows)
	}
	return o.admission.admit(PoolReads, AdmitBulkPlan, cost)
}

// bulkFilters are the subjects a bulk replay's subscriber consumes
// (none for a republish).
func (o *Ops) bulkFilters(ctx context.Context, req BulkRequest) ([]string, error) {
	if req.Action != BulkReplay {
		return nil, nil
	}
	if err := o.checkSubscriber(ctx, req.Subscriber); err != nil {
		return nil, err
	}
	return o.subscriberFilters(ctx, req.Subscriber)
}

// subscriberFilters are the subjects sub's durable consumer takes
// (ErrUnknownSubscriber when it has none).
func (o *Ops) subscriberFilters(ctx context.Context, sub string) ([]string, error) {
	cons, err := o.js.Consumer(ctx, o.stream, sub)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("%w %q: no consumer of that name on stream %s (has the subscriber ever run?)", ErrUnknownSubscriber, sub, o.stream)
	}
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", sub, err)
	}
	return ConsumerFilters(cons.CachedInfo().Config), nil
}

// bulkSelect sorts the matched rows (newest first) into what the action
// publishes, oldest first: a replay's messages, still on the stream and
// on subjects its subscriber consumes (filters), or a republish's archive
// ids; it counts the others in res. read is the stream messages it read.
func (o *Ops) bulkSelect(ctx context.Context, req BulkRequest, rows []EventRow, filters []string, permit *Permit, res *BulkResult) (msgs []replayMsg, ids []string, read int, err error) {
	slices.Reverse(rows)
	for _, r := range rows {
		if r.StreamSeq == 0 {
			res.NotPublished++
			continue
		}
		if req.Action == BulkRepublish {
			ids = append(ids, r.ArchiveID)
			continue
		}
		subject, err := schema.Subject(r.Provider, r.EventType)
		if err != nil || !slices.ContainsFunc(filters, func(f string) bool { return schema.MatchSubject(f, subject) }) {
			res.NotConsumed++
			continue
		}
		msgs = append(msgs, replayMsg{provider: r.Provider, eventID: r.EventID, subject: subject, seq: r.StreamSeq})
	}
	if len(msgs) == 0 {
		return msgs, ids, 0, nil
	}
	// Which are still on the stream: from their headers, never their
	// bodies (a run reads each body as it publishes it).
	var gone int
	if msgs, gone, read, err = o.onStream(ctx, filters, msgs, res.Scanned, permit); err != nil {
		return nil, nil, read, err
	}
	res.Gone += gone
	return msgs, ids, read, nil
}

// bulkMatch reads the events req.Filter matches, newest first, a page at a
// time, at most MaxBulkEvents of them.
func (o *Ops) bulkMatch(ctx context.Context, req BulkRequest, permit *Permit, res *BulkResult) ([]EventRow, error) {
	f := req.Filter
	var out []EventRow
	var bytes int64 // payload bytes the filter read
	for {
		p, err := o.listEventPage(ctx, f, permit) // admitted with the action, paced by it
		if err != nil {
			return nil, err
		}
		res.Scanned += p.Scanned
		bytes += p.ScannedBytes
		out = append(out, p.Events...)
		if len(out) > o.maxBulkEvents {
			return nil, inputErr("since", "the filter matches more than %d events, the most one bulk action takes: narrow it (a later since, an earlier until, more conditions) and run it in parts (each part is safe to repeat)", o.maxBulkEvents)
		}
		if res.Scanned > MaxBulkScanRows || bytes > MaxBulkScanBytes {
			return nil, inputErr("since", "the payload filter read more than %d archive rows or %d MiB of payloads, the most one bulk action reads: narrow the time range",
				MaxBulkScanRows, MaxBulkScanBytes>>20)
		}
		if p.Next == "" {
			break
		}
		f.Before = p.Next
	}
	res.Matched = len(out)
	res.Sample = slices.Clone(out[:min(len(out), req.Sample)]) // the caller reverses out
	return out, nil
}

// bulkReplay replays p's messages to the subscriber as Replay does, in a
// job of its own whose counts are j's.
func (o *Ops) bulkReplay(ctx context.Context, j *job[BulkResult], req BulkRequest, p bulkPlan) error {
	rj := newJob(p.counts, func(rr ReplayResult) {
		res := &j.res
		res.Published, res.Processed, res.Skipped, res.Resent = rr.Delivered, rr.Processed, rr.Skipped, rr.Resent
		res.DeadLettered, res.Unsettled = rr.DeadLettered, rr.Unsettled
		j.report()
	}).at(req.Rate, 1)
	err := o.replayCopies(ctx, rj, req.Subscriber, req.Wait, p.msgs, p.before)
	rj.report()
	return err
}

// bulkRepublish republishes the events of ids (archive ids) through
// Republish, in the steps of j (a fifth of a second's worth at its rate).
func (o *Ops) bulkRepublish(ctx context.Context, j *job[BulkResult], ids []string) error {
	return j.steps(ctx, len(ids), func(lo, hi int) error {
		// The unaudited republish: the bulk action is recorded once, in Bulk.
		r, err := o.republish(ctx, RepublishFilter{ArchiveIDs: ids[lo:hi]})
		if err != nil && !errors.Is(err, ErrNotFound) { // purged meanwhile: nothing to publish
			return err
		}
		j.res.Published += r.Published
		j.res.Failed += r.Failed
		return nil
	})
}

// errGone: a message is no longer on the stream.
var errGone = errors.New("no longer on the stream")

// getMsg reads m's original message by its stream sequence; errGone when
// the stream no longer holds it (or holds another event there).
func (o *Ops) getMsg(ctx context.Context, st jetstream.Stream, m replayMsg) (replayMsg, error) {
	raw, err := st.GetMsg(ctx, m.seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return m, errGone
	}
	if err != nil {
		return m, fmt.Errorf("read stream %s seq %d: %w", o.stream, m.seq, err)
	}
	meta, err := schema.ParseMetadata(raw.Header)
	if err != nil || meta.Provider != m.provider || meta.EventID != m.eventID {
		return m, errGone
	}
	m.subject, m.header, m.data = raw.Subject, raw.Header, raw.Data
	return m, nil
}

// loadMsg reads the message of a bulk replay's m (publishReplay calls it
// for messages read without their body).
func (o *Ops) loadMsg(ctx context.Context, m replayMsg) (replayMsg, error) {
	st, err := o.js.Stream(ctx, o.stream)
	if err != nil {
		return m, o.streamErr(err)
	}
	out, err := o.getMsg(ctx, st, m)
	if errors.Is(err, errGone) {
		return m, fmt.Errorf("%w: %s (stream seq %d) left the stream during the replay; republish it", ErrNotFound, schema.MsgID(m.provider, m.eventID), m.seq)
	}
	return out, err
}

// MaxBulkPlanHeaderBytes bounds the header bytes a bulk replay reads to
// find which of its events are still on the stream (onStream).
const MaxBulkPlanHeaderBytes = 64 << 20

// onStream keeps the msgs (in stream order) whose original message the
// stream still holds, and counts the others (gone). It reads headers
// only, never bodies, with one scan from the first message's sequence to
// the last's on filters (the subscriber's subjects), counting the
// messages and header bytes it reads: past MaxBulkScanRows messages
// (with scanned, the archive rows already read) or MaxBulkPlanHeaderBytes
// it stops and refuses the filter as too wide. read is the messages it
// read.
func (o *Ops) onStream(ctx context.Context, filters []string, msgs []replayMsg, scanned int, permit *Permit) (kept []replayMsg, gone, read int, err error) {
	slices.SortFunc(msgs, func(a, b replayMsg) int { return cmp.Compare(a.seq, b.seq) })
	want := make(map[uint64]replayMsg, len(msgs))
	for _, m := range msgs {
		want[m.seq] = m
	}
	last := msgs[len(msgs)-1].seq
	found := make(map[uint64]bool, len(msgs))
	bytes := 0
	scan := relay.Scan{Stream: o.stream, Subjects: filters, StartSeq: msgs[0].seq, HeadersOnly: true, Stall: o.scanStall}
	_, err = scan.Run(ctx, o.js, func(m relay.ScanMsg) error {
		seq := m.Meta.Sequence.Stream
		if seq > last {
			return relay.ErrStopScan
		}
		h := m.Msg.Headers()
		read++
		if read%pacedMsgs == 0 {
			if err := permit.Pace(ctx, pacedMsgs*streamMsgCost); err != nil {
				return err
			}
		}
		bytes += headerSize(h)
		if scanned+read > MaxBulkScanRows || bytes > MaxBulkPlanHeaderBytes {
			return inputErr("since", "the events are spread over more than %d stream messages or %d MiB of their headers, the most one bulk action reads: narrow the time range",
				MaxBulkScanRows, MaxBulkPlanHeaderBytes>>20)
		}
		if w, ok := want[seq]; ok {
			meta, err := schema.ParseMetadata(h)
			found[seq] = err == nil && meta.Provider == w.provider && meta.EventID == w.eventID
		}
		return nil
	})
	if err != nil {
		return nil, 0, read, o.scanErr(err)
	}
	kept = msgs[:0]
	for _, m := range msgs {
		if found[m.seq] {
			kept = append(kept, m)
		} else {
			gone++
		}
	}
	return kept, gone, read, nil
}
