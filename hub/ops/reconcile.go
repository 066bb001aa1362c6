package ops

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/schema"
)

// MissingEvent is an event the archive says was published but the stream
// does not hold.
type MissingEvent struct {
	ArchiveID  string    `json:"archive_id"`
	Provider   string    `json:"provider"`
	EventID    string    `json:"event_id"`
	EventType  string    `json:"event_type"`
	StreamSeq  uint64    `json:"stream_seq"`
	ReceivedAt time.Time `json:"received_at"`
}

// ReconcileResult compares the archive with the stream.
type ReconcileResult struct {
	Checked int            `json:"checked"` // PROCESSED rows in the range
	Missing []MissingEvent `json:"missing"`
	// Where no subscriber looks (strays.go): events held only under
	// another subject than their own, the subjects no durable consumer
	// matches (with the number of durables), and the stream's settings
	// that divert or refuse publishes (republishing waits for them).
	Astray       []StrayEvent        `json:"astray"`
	Unwatched    []UnwatchedSubject  `json:"unwatched"`
	Durables     int                 `json:"durables"`
	StreamFaults []relay.StreamFault `json:"stream_faults"`
}

// Reconcile lists the PROCESSED events received in [since, until) whose
// message the stream no longer holds (under its original id or a
// republished copy): what a single-node stream loses to a power failure
// before its fsync, or retention removed; and those it holds where no
// subscriber looks (see placement). Feed Missing and Astray to Republish
// once StreamFaults is empty.
func (o *Ops) Reconcile(ctx context.Context, since, until time.Time) (ReconcileResult, error) {
	var res ReconcileResult
	if since.IsZero() {
		return res, inputErr("since", "required (90m, 36h, 7d, 2026-11-30 or RFC 3339)")
	}
	if !until.IsZero() && !until.After(since) {
		return res, inputErr("until", "must be after since")
	}
	if err := o.needStream(); err != nil {
		return res, err
	}
	var err error
	if res.StreamFaults, err = o.streamFaults(ctx); err != nil {
		return res, err
	}
	where, err := o.newPlacement(ctx)
	if err != nil {
		return res, err
	}
	// Every message id the stream holds from a little before the range on
	// (messages are stored after their archive row is committed).
	held := map[string]bool{}
	scan := relay.Scan{Stream: o.stream, StartTime: since.Add(-time.Minute), Stall: o.scanStall, HeadersOnly: true}
	if _, err := scan.Run(ctx, o.js, func(m relay.ScanMsg) error {
		relay.AddMsgIDs(held, m.Msg.Headers())
		where.add(m.Msg.Subject(), m.Msg.Headers())
		return nil
	}); err != nil {
		// Without the whole stream, present events would be called missing.
		return res, o.scanErr(err)
	}
	// The archive's PROCESSED first deliveries of the range, a page at a
	// time (newest first, on the archive's created_at index).
	f := hub.ArchiveFilter{Status: hub.Processed, Since: since, Until: until, Limit: reconcilePage}
	for {
		page, err := o.archive.ListArchive(ctx, f)
		if err != nil {
			return res, fmt.Errorf("reconcile: %w", err)
		}
		for _, d := range page {
			res.Checked++
			if !held[schema.MsgID(d.Provider, d.EventID)] {
				res.Missing = append(res.Missing, MissingEvent{ArchiveID: d.ArchiveID.String(), Provider: d.Provider,
					EventID: d.EventID, EventType: d.EventType, StreamSeq: d.StreamSeq, ReceivedAt: d.ReceivedAt})
			} else {
				where.check(d)
			}
		}
		if len(page) < f.Limit {
			break
		}
		f.Before = page[len(page)-1].Cursor()
	}
	// Oldest first, as received.
	slices.Reverse(res.Missing)
	where.result(&res)
	return res, nil
}

// reconcilePage is the archive rows Reconcile reads at a time.
const reconcilePage = 1000
