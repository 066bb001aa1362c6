package ops

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/hookhub/hookhub/hub"
)

// RepublishFilter selects the archived events to publish again.
type RepublishFilter struct {
	Provider string
	// Status must be PROCESSED (the default): PENDING events are the
	// relay's, SKIPPED rows are duplicates, and FAILED events have no
	// subject to be published on.
	Status hub.Status
	Since  time.Time
	Until  time.Time
	Event  string // "<provider>:<event_id>": just this one
	// ArchiveIDs, when set, selects exactly these first deliveries (what
	// Reconcile found missing).
	ArchiveIDs []string
	DryRun     bool
	Limit      int // 0: no limit
}

// RepublishResult reports a republish.
type RepublishResult struct {
	Matched   int    `json:"matched"`
	Published int    `json:"published"`
	Failed    int    `json:"failed"`
	RunID     string `json:"run_id"`
	DryRun    bool   `json:"dry_run"`
	FirstSeq  uint64 `json:"first_stream_seq,omitempty"`
	LastSeq   uint64 `json:"last_stream_seq,omitempty"`
}

const (
	// republishPage is the rows read, published and acknowledged at a
	// time: a republish of a month holds one page in memory, not the month.
	republishPage = 512
	// republishAckWait bounds the wait for one page's PubAcks.
	republishAckWait = 30 * time.Second
)

// Republish publishes archived first deliveries back into the stream, for
// events the stream no longer holds (retention, a lost stream). The copies
// are built by the hub's publisher (the Republisher: the relay), as the
// originals were: the exact body and the hub's headers, so subscribers
// decode and deduplicate the copy like the original. The message id is
// "<provider>:<event_id>:republish:<run>", which the duplicate window
// cannot confuse with the original's, and Hub-Republish-Of names the
// original id. Every subscriber receives the copy; its idempotency skips
// what it processed already, so the side effects stay single.
//
// A run is recorded in the audit trail (action "republish"); a dry run,
// which changes nothing, is not.
func (o *Ops) Republish(ctx context.Context, f RepublishFilter) (RepublishResult, error) {
	if f.DryRun {
		// A dry run is a read (admission.go), admitted at a page of rows
		// and settled at the rows it counted; a bad filter is refused as
		// such first.
		if _, err := f.check(); err != nil {
			return RepublishResult{DryRun: true}, err
		}
		permit, err := o.admitRead(AdmitDryRun, Cost{Rows: republishPage})
		if err != nil {
			return RepublishResult{DryRun: true}, err
		}
		res, err := o.republish(ctx, f)
		permit.Scanned(int64(res.Matched))
		permit.Release()
		return res, err
	}
	params := map[string]any{"provider": clip(f.Provider, maxAuditParam), "status": clip(string(f.Status), maxAuditParam),
		"since": auditTime(f.Since), "until": auditTime(f.Until), "event": clip(f.Event, maxAuditParam), "limit": f.Limit}
	if f.ArchiveIDs != nil {
		params["archive_ids"] = len(f.ArchiveIDs)
	}
	target := "all providers"
	switch {
	case f.Event != "":
		target = "event " + f.Event
	case f.ArchiveIDs != nil:
		target = fmt.Sprintf("%d archived events", len(f.ArchiveIDs))
	case f.Provider != "":
		target = "provider " + f.Provider
	}
	return auditedResult(ctx, o, ActionRepublish, target, params, func() (RepublishResult, error) { return o.republish(ctx, f) })
}

func (o *Ops) republish(ctx context.Context, f RepublishFilter) (RepublishResult, error) {
	res := RepublishResult{DryRun: f.DryRun, RunID: strconv.FormatInt(o.now().UnixNano(), 36)}
	q, err := f.check()
	if err != nil {
		return res, err
	}
	if !f.DryRun {
		if err := o.needStream(); err != nil {
			return res, err
		}
		if o.republisher == nil {
			return res, fmt.Errorf("%w: this hub has no publisher for republished copies", ErrNoStream)
		}
		if err := o.checkNotDiverted(ctx); err != nil {
			return res, err
		}
	}
	err = o.publishedPages(ctx, q, f.Limit, func(rows []hub.OutboxRow) {
		res.Matched += len(rows)
		if f.DryRun {
			return
		}
		for _, r := range o.republisher.Republish(ctx, rows, res.RunID, republishAckWait) {
			if r.Seq == 0 {
				res.Failed++
				continue
			}
			res.Published++
			if res.FirstSeq == 0 || r.Seq < res.FirstSeq {
				res.FirstSeq = r.Seq
			}
			res.LastSeq = max(res.LastSeq, r.Seq)
		}
	})
	if err != nil {
		return res, err
	}
	if res.Matched == 0 {
		return res, fmt.Errorf("%w: no %s event in that range", ErrNotFound, hub.Processed)
	}
	return res, nil
}

// publishedPages hands fn the rows q selects a page at a time, at most
// limit rows in all (0: no limit). Archive ids are taken a page at a time,
// so that a long list (what Reconcile found missing) is read once, not
// once per page.
func (o *Ops) publishedPages(ctx context.Context, q hub.PublishedFilter, limit int, fn func([]hub.OutboxRow)) error {
	remaining := limit
	pageSize := func() int {
		if limit == 0 {
			return republishPage
		}
		return min(republishPage, remaining)
	}
	ids := q.ArchiveIDs
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		q.Limit = pageSize()
		if ids != nil {
			n := min(len(ids), republishPage)
			q.ArchiveIDs, ids = ids[:n], ids[n:]
		}
		rows, err := o.archive.PublishedRows(ctx, q)
		if err != nil {
			return fmt.Errorf("republish: %w", err)
		}
		if len(rows) > 0 {
			fn(rows)
		}
		remaining -= len(rows)
		switch {
		case limit > 0 && remaining <= 0:
			return nil
		case q.ArchiveIDs != nil:
			if len(ids) == 0 {
				return nil
			}
		case len(rows) < q.Limit:
			return nil
		default:
			last := rows[len(rows)-1]
			q.After = hub.ArchiveCursor{ReceivedAt: last.ReceivedAt, ArchiveID: last.ArchiveID}
		}
	}
}

// check refuses a filter out of bounds and returns the store's filter.
func (f *RepublishFilter) check() (hub.PublishedFilter, error) {
	var q hub.PublishedFilter
	switch f.Status {
	case "", hub.Processed:
		f.Status = hub.Processed
	case hub.Failed:
		return q, inputErr("status", "FAILED events cannot be republished: their type cannot form a subject (decided when they were archived), so they were never published; see `hub events list --status FAILED`")
	default:
		return q, inputErr("status", "%s: PENDING events are the relay's (it publishes them), SKIPPED rows are duplicates; republish PROCESSED events", f.Status)
	}
	if err := checkProvider("provider", f.Provider); err != nil {
		return q, err
	}
	if f.Since.IsZero() && f.Event == "" && f.ArchiveIDs == nil {
		return q, inputErr("since", "give since (and optionally until) or event: republishing the whole archive is never the default")
	}
	if !f.Until.IsZero() && !f.Since.IsZero() && !f.Until.After(f.Since) {
		return q, inputErr("until", "must be after since")
	}
	if f.Limit < 0 {
		return q, inputErr("limit", "must not be negative, got %d", f.Limit)
	}
	if f.Event != "" {
		provider, eventID, err := checkEventRef("event", f.Event)
		if err != nil {
			return q, err
		}
		if f.Provider != "" && f.Provider != provider {
			return q, inputErr("event", "%s and provider %s disagree", quote(f.Event), quote(f.Provider))
		}
		q.Provider, q.EventID = provider, eventID
	} else {
		q.Provider = f.Provider
	}
	q.Since, q.Until = f.Since, f.Until
	if f.ArchiveIDs != nil {
		q.ArchiveIDs = make([]uuid.UUID, 0, len(f.ArchiveIDs))
		seen := make(map[uuid.UUID]bool, len(f.ArchiveIDs))
		for _, s := range f.ArchiveIDs {
			id, err := uuid.Parse(s)
			if err != nil {
				return q, inputErr("archive_ids", "%s is not an archive id (UUID)", quote(s))
			}
			if !seen[id] { // each event once
				seen[id] = true
				q.ArchiveIDs = append(q.ArchiveIDs, id)
			}
		}
	}
	return q, nil
}
