package ops

import (
	"cmp"
	"context"
	"fmt"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/schema"
)

// Entity timelines: every event about one entity id, newest first, across
// providers, each with what every subscriber and destination did with it.

// DefaultTimelineLimit is how many events a timeline page holds by
// default; at most MaxTimelineLimit.
const (
	DefaultTimelineLimit = 50
	MaxTimelineLimit     = 200
)

// CheckEntity checks an entity id an operator searches for: required, by
// the entity rule (hub.CheckText, at most hub.MaxEntityIDLen bytes). The
// command line, the admin API and the console check a given entity with
// it, so each answers with the same message.
func CheckEntity(id string) error {
	if id == "" {
		return inputErr("entity", "required: an entity id, e.g. cus_123")
	}
	return checkText("entity", id, hub.MaxEntityIDLen)
}

// TimelineQuery selects a page of an entity's timeline.
type TimelineQuery struct {
	Entity string // required, exact
	// Before continues the timeline: the previous page's Next.
	Before string
	Limit  int // 1..MaxTimelineLimit; 0: DefaultTimelineLimit
}

// TimelineEvent is one event of a timeline with each subscriber's outcome
// (a destination's with its last HTTP attempt only).
type TimelineEvent struct {
	EventRow
	Subject     string              `json:"subject,omitempty"`
	Subscribers []SubscriberOutcome `json:"subscribers"`
}

// Timeline is a page of an entity's timeline.
type Timeline struct {
	Entity string          `json:"entity"`
	Events []TimelineEvent `json:"events"`
	// Next is the cursor of the next page (Before); "" on the last page.
	Next string `json:"next,omitempty"`
}

// EntityTimeline returns a page of the events about entity id q.Entity,
// newest first, across providers: an index look-up for the page (one more
// row tells whether a next page exists), then the outcomes of the whole
// page in a bounded number of queries (per subscriber: its processed
// records, its dead letters and, for a destination, its last attempts),
// never one per event.
func (o *Ops) EntityTimeline(ctx context.Context, q TimelineQuery) (Timeline, error) {
	if err := CheckEntity(q.Entity); err != nil {
		return Timeline{}, err
	}
	q.Limit = cmp.Or(q.Limit, DefaultTimelineLimit)
	if q.Limit < 1 || q.Limit > MaxTimelineLimit {
		return Timeline{}, inputErr("limit", "must be within 1..%d, got %d", MaxTimelineLimit, q.Limit)
	}
	var before hub.ArchiveCursor
	if q.Before != "" {
		c, err := ParseCursor("before", q.Before)
		if err != nil {
			return Timeline{}, err
		}
		before = c
	}
	ds, err := o.archive.ListArchive(ctx, hub.ArchiveFilter{Entity: q.Entity, Before: before, Limit: q.Limit + 1, CountDeliveries: true})
	if err != nil {
		return Timeline{}, fmt.Errorf("entity timeline: %w", err)
	}
	t := Timeline{Entity: q.Entity, Events: make([]TimelineEvent, 0, min(len(ds), q.Limit))}
	if len(ds) > q.Limit {
		ds = ds[:q.Limit]
		t.Next = FormatCursor(ds[len(ds)-1].Cursor())
	}
	rows := make([]EventRow, len(ds))
	for i, d := range ds {
		rows[i] = EventRow{ArchiveID: d.ArchiveID.String(), Provider: d.Provider, EventID: d.EventID,
			EventType: d.EventType, Status: string(d.Status), Error: d.Error, ReceivedAt: d.ReceivedAt,
			StreamSeq: d.StreamSeq, Deliveries: d.Deliveries, Entities: d.Entities, Cursor: FormatCursor(d.Cursor())}
	}
	evs, err := o.EventOutcomes(ctx, rows)
	if err != nil {
		return Timeline{}, fmt.Errorf("entity timeline: %w", err)
	}
	t.Events = append(t.Events, evs...)
	return t, nil
}

// EventOutcomes returns rows (a page of a listing, at most
// MaxTimelineLimit) with what each subscriber and destination did with
// each (a destination's last HTTP attempt only), as an entity's timeline
// shows them: a bounded number of queries per subscriber for the whole
// page, never one per event.
func (o *Ops) EventOutcomes(ctx context.Context, rows []EventRow) ([]TimelineEvent, error) {
	if len(rows) > MaxTimelineLimit {
		return nil, inputErr("limit", "must be within 1..%d to read each event's outcomes, got %d", MaxTimelineLimit, len(rows))
	}
	out := make([]TimelineEvent, len(rows))
	evs := make([]outcomeEvent, len(rows))
	for i, r := range rows {
		out[i].EventRow = r
		if s, err := schema.Subject(r.Provider, r.EventType); err == nil {
			out[i].Subject = s
		}
		published := r.StreamSeq != 0 || (r.Status != string(hub.Pending) && r.Status != string(hub.Failed))
		evs[i] = outcomeEvent{Provider: r.Provider, EventID: r.EventID, Subject: out[i].Subject, Published: published}
	}
	if len(evs) == 0 {
		return out, nil
	}
	outs, err := o.outcomes(ctx, evs, true)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Subscribers = outs[i]
	}
	return out, nil
}
