package ops

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/schema"
)

// RepublishFilter selects the archived events to publish again.
type RepublishFilter struct {
	Provider string
	Status   hub.Status // default PROCESSED; PENDING rows belong to the relay
	Since    time.Time
	Until    time.Time
	Event    string // "<provider>:<event_id>": just this one
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

// Republish publishes archived first deliveries back into the stream, for
// events the stream no longer holds (retention, a lost stream). The data is
// the exact body and the headers are the hub's, so subscribers decode and
// deduplicate the copy like the original. The message id is
// "<provider>:<event_id>:republish:<run>", which the duplicate window
// cannot confuse with the original's, and Hub-Republish-Of names the
// original id. Every subscriber receives the copy; its idempotency skips
// what it processed already, so the side effects stay single.
func (o *Ops) Republish(ctx context.Context, f RepublishFilter) (RepublishResult, error) {
	res := RepublishResult{DryRun: f.DryRun, RunID: strconv.FormatInt(o.now().UnixNano(), 36)}
	if f.Status == "" {
		f.Status = hub.Processed
	}
	if f.Status == hub.Pending || f.Status == hub.Skipped {
		return res, inputErr("status", "%s: PENDING rows are the relay's, SKIPPED rows are duplicates; republish PROCESSED or FAILED events", f.Status)
	}
	if err := checkProvider("provider", f.Provider); err != nil {
		return res, err
	}
	if f.Since.IsZero() && f.Event == "" && f.ArchiveIDs == nil {
		return res, inputErr("since", "give since (and optionally until) or event: republishing the whole archive is never the default")
	}
	if !f.Until.IsZero() && !f.Since.IsZero() && !f.Until.After(f.Since) {
		return res, inputErr("until", "must be after since")
	}
	if f.Limit < 0 {
		return res, inputErr("limit", "must not be negative, got %d", f.Limit)
	}
	var provider, eventID string
	if f.Event != "" {
		var err error
		if provider, eventID, err = checkEventRef("event", f.Event); err != nil {
			return res, err
		}
		if f.Provider != "" && f.Provider != provider {
			return res, inputErr("event", "%s and provider %s disagree", quote(f.Event), quote(f.Provider))
		}
		f.Provider = provider
	}
	if !f.DryRun {
		if err := o.needStream(); err != nil {
			return res, err
		}
	}
	limit := f.Limit
	if limit == 0 {
		limit = 1 << 30
	}
	rows, err := o.pool.Query(ctx, `
		SELECT id, provider, event_id, event_type, body, created_at, occurred_at
		FROM webhook_events
		WHERE processing_status = $1 AND body IS NOT NULL
		  AND ($2 = '' OR provider = $2) AND ($3 = '' OR event_id = $3)
		  AND ($4::timestamptz IS NULL OR created_at >= $4) AND ($5::timestamptz IS NULL OR created_at < $5)
		  AND ($7::uuid[] IS NULL OR id = ANY($7))
		ORDER BY created_at, id LIMIT $6`, string(f.Status), f.Provider, eventID, optTime(f.Since), optTime(f.Until), limit, f.ArchiveIDs)
	if err != nil {
		return res, fmt.Errorf("republish: %w", err)
	}
	defer rows.Close()
	var futures []jetstream.PubAckFuture
	for rows.Next() {
		var row hub.OutboxRow
		var occurred *time.Time
		if err := rows.Scan(&row.ArchiveID, &row.Provider, &row.EventID, &row.EventType, &row.Body, &row.ReceivedAt, &occurred); err != nil {
			return res, fmt.Errorf("republish: %w", err)
		}
		if occurred != nil {
			row.OccurredAt = *occurred
		}
		res.Matched++
		if f.DryRun {
			continue
		}
		subject, err := schema.Subject(row.Provider, row.EventType)
		if err != nil {
			res.Failed++ // a FAILED row whose type cannot form a subject
			continue
		}
		original := schema.MsgID(row.Provider, row.EventID)
		md := schema.Metadata{
			MsgID: original + ":republish:" + res.RunID, EventID: row.EventID, Provider: row.Provider,
			EventType: row.EventType, ArchiveID: row.ArchiveID.String(), ReceivedAt: row.ReceivedAt, OccurredAt: row.OccurredAt,
		}
		h := md.Header()
		h.Set(schema.HeaderRepublish, original)
		fut, err := o.js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: row.Body, Header: h}, jetstream.WithExpectStream(o.stream))
		if err != nil {
			return res, fmt.Errorf("republish %s: %w", original, err)
		}
		futures = append(futures, fut)
		if len(futures) >= 512 {
			o.settle(ctx, futures, &res)
			futures = futures[:0]
		}
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("republish: %w", err)
	}
	o.settle(ctx, futures, &res)
	if res.Matched == 0 {
		return res, fmt.Errorf("%w: no %s event in that range", ErrNotFound, f.Status)
	}
	return res, nil
}

// settle waits for the PubAcks of a batch of republished messages.
func (o *Ops) settle(ctx context.Context, futures []jetstream.PubAckFuture, res *RepublishResult) {
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, f := range futures {
		select {
		case ack := <-f.Ok():
			res.Published++
			if res.FirstSeq == 0 || ack.Sequence < res.FirstSeq {
				res.FirstSeq = ack.Sequence
			}
			res.LastSeq = max(res.LastSeq, ack.Sequence)
		case <-f.Err():
			res.Failed++
		case <-wait.Done():
			res.Failed++
		}
	}
}
