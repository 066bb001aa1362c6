package ops

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/nats-io/nats.go"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/schema"
)

// StrayEvent is an event the archive says was published whose message the
// stream holds only under another subject than <provider>.<event_type>
// (a subject transform on the stream moved it): no subscriber filtering
// on its type ever sees it.
type StrayEvent struct {
	MissingEvent
	Subject     string `json:"subject"`      // where the stream holds it
	WantSubject string `json:"want_subject"` // <provider>.<event_type>
}

// UnwatchedSubject counts the events of a reconcile's range the stream
// holds on a subject no subscriber's durable consumer matches.
type UnwatchedSubject struct {
	Subject string `json:"unwatched_subject"`
	Events  int    `json:"events"`
}

// maxDurables bounds the consumers a reconcile reads for their filters.
const maxDurables = 10_000

// placement is what a reconcile learns of where the stream holds events,
// beside the message ids it holds: the subjects of each message id
// (republished copies under their original's id), and the filters of the
// subscribers' durable consumers. It finds the events stored where no
// subscriber looks.
type placement struct {
	subjects map[string][]string // message id -> subjects it is stored under
	// filters are the durable consumers' filter subjects (replay copies'
	// left out); durables counts those consumers; all is set when one of
	// them has no filter (it sees every subject).
	filters  []string
	durables int
	all      bool

	astray    []StrayEvent
	unwatched map[string]int
}

// newPlacement reads the stream's durable consumers' filters.
func (o *Ops) newPlacement(ctx context.Context) (*placement, error) {
	p := &placement{subjects: map[string][]string{}, unwatched: map[string]int{}}
	st, err := o.js.Stream(ctx, o.stream)
	if err != nil {
		return nil, o.streamErr(err)
	}
	// Read to the end (the server pages the list; the lister's goroutine
	// would block on a list left half read), keeping at most maxDurables.
	list := st.ListConsumers(ctx)
	for ci := range list.Info() {
		if ci.Config.Durable == "" {
			continue // a scan (replay, reconcile), not a subscriber
		}
		if p.durables++; p.durables > maxDurables {
			continue
		}
		if unfiltered(ci.Config) {
			p.all = true
		}
		for _, f := range ConsumerFilters(ci.Config) {
			if !slices.Contains(p.filters, f) {
				p.filters = append(p.filters, f)
			}
		}
	}
	if err := list.Err(); err != nil {
		return nil, fmt.Errorf("reconcile: list consumers of stream %s: %w", o.stream, err)
	}
	if p.durables > maxDurables {
		return nil, fmt.Errorf("reconcile: %d durable consumers on stream %s, more than the %d it reads", p.durables, o.stream, maxDurables)
	}
	return p, nil
}

// add records a message the stream holds: its subject under its message
// id and, for a republished copy, its original's. Replay copies (a
// subscriber's private subjects) are not where the event belongs.
func (p *placement) add(subject string, h nats.Header) {
	if _, _, replay := schema.SplitReplaySubject(subject); replay || schema.IsServerMarker(h) {
		return
	}
	for _, id := range []string{h.Get(schema.HeaderMsgID), h.Get(schema.HeaderRepublish)} {
		if id != "" && !slices.Contains(p.subjects[id], subject) {
			p.subjects[id] = append(p.subjects[id], subject)
		}
	}
}

// check looks at an archived event the stream holds: stored only under
// another subject than its own, it is astray; on a subject no durable
// consumer matches (while there are durables), unwatched.
func (p *placement) check(d hub.ArchivedDelivery) {
	id := schema.MsgID(d.Provider, d.EventID)
	stored := p.subjects[id]
	if len(stored) == 0 {
		return // missing, or held only as a replay copy: Reconcile's part
	}
	want, err := schema.Subject(d.Provider, d.EventType)
	if err != nil {
		return // never published by the hub under a subject of its own
	}
	if !slices.Contains(stored, want) {
		p.astray = append(p.astray, StrayEvent{MissingEvent: MissingEvent{ArchiveID: d.ArchiveID.String(), Provider: d.Provider,
			EventID: d.EventID, EventType: d.EventType, StreamSeq: d.StreamSeq, ReceivedAt: d.ReceivedAt},
			Subject: stored[0], WantSubject: want})
		return
	}
	if p.durables == 0 || p.all || slices.ContainsFunc(p.filters, func(f string) bool { return schema.MatchSubject(f, want) }) {
		return
	}
	p.unwatched[want]++
}

// result fills in what placement found, oldest astray event first.
func (p *placement) result(res *ReconcileResult) {
	res.Astray = slices.Clone(p.astray)
	slices.Reverse(res.Astray) // the archive is read newest first
	res.Durables = p.durables
	for s, n := range p.unwatched {
		res.Unwatched = append(res.Unwatched, UnwatchedSubject{Subject: s, Events: n})
	}
	sort.Slice(res.Unwatched, func(i, j int) bool { return res.Unwatched[i].Subject < res.Unwatched[j].Subject })
}

// streamFaults are the stream's settings that divert or refuse the hub's
// publishes (relay.StreamFaults, without the checks that need the hub's
// own configuration).
func (o *Ops) streamFaults(ctx context.Context) ([]relay.StreamFault, error) {
	st, err := o.js.Stream(ctx, o.stream)
	if err != nil {
		return nil, o.streamErr(err)
	}
	return relay.StreamFaults(st.CachedInfo().Config, relay.StreamNeeds{}), nil
}

// checkNotDiverted refuses to publish copies (republish, replay) while
// the stream stores what it is sent under another subject (relay.Diverted):
// each copy would be acknowledged, counted as published and reach no
// subscriber. The hub's relay holds its own publishes then too.
func (o *Ops) checkNotDiverted(ctx context.Context) error {
	faults, err := o.streamFaults(ctx)
	if err != nil {
		return err
	}
	if err := relay.Diverted(o.stream, faults); err != nil {
		return fmt.Errorf("%w; copies published now would be stored where no subscriber looks: fix the stream first (`hub reconcile` says how)", err)
	}
	return nil
}
