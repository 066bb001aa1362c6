package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// DeadLetter is a subscriber's dead letter as operators see it (the body
// and headers stay in the table; `hub events show` has the body).
type DeadLetter struct {
	ID                 int64      `json:"id"`
	Provider           string     `json:"provider"`
	EventID            string     `json:"event_id"`
	Subject            string     `json:"subject"`
	StreamSeq          uint64     `json:"stream_seq,omitempty"`
	Error              string     `json:"error"`
	Attempts           int        `json:"attempts"`
	CreatedAt          time.Time  `json:"created_at"`
	RedriveRequestedAt *time.Time `json:"redrive_requested_at,omitempty"`
	RedrivenAt         *time.Time `json:"redriven_at,omitempty"`
	RedriveError       string     `json:"redrive_error,omitempty"`
}

// DeadLetters lists a subscriber's dead letters, oldest first.
func (o *Ops) DeadLetters(ctx context.Context, sub string) ([]DeadLetter, error) {
	if err := o.checkSubscriber(ctx, sub); err != nil {
		return nil, err
	}
	dls, err := subscriber.ListDeadLetters(ctx, o.subs, sub)
	if err != nil {
		return nil, subscriberErr(err)
	}
	out := make([]DeadLetter, len(dls))
	for i, d := range dls {
		out[i] = DeadLetter{ID: d.ID, Provider: d.Provider, EventID: d.EventID, Subject: d.Subject, StreamSeq: d.StreamSeq,
			Error: d.Error, Attempts: d.Attempts, CreatedAt: d.CreatedAt, RedriveRequestedAt: d.RedriveRequestedAt,
			RedrivenAt: d.RedrivenAt, RedriveError: d.RedriveError}
	}
	return out, nil
}

// RedriveRequest selects the dead letters to redrive: one (ID) or every
// one waiting (All), never both.
type RedriveRequest struct {
	Subscriber string
	ID         int64
	All        bool
}

// RedriveResult reports a redrive request.
type RedriveResult struct {
	Subscriber string `json:"subscriber"`
	Requested  int64  `json:"requested"`
}

// Redrive asks a subscriber to process dead letters again. The running
// subscriber picks the requests up within seconds and handles each in the
// same transaction as its processed-row insert, so an event it already
// processed is skipped. It reports how many were requested; none at all is
// ErrNotFound (no such dead letter, or it was redriven already).
//
// It is recorded in the audit trail (action "redrive").
func (o *Ops) Redrive(ctx context.Context, req RedriveRequest) (RedriveResult, error) {
	params := map[string]any{"subscriber": clip(req.Subscriber, maxAuditParam), "id": req.ID, "all": req.All}
	return auditedResult(ctx, o, ActionRedrive, "subscriber "+req.Subscriber, params, func() (RedriveResult, error) { return o.redrive(ctx, req) })
}

func (o *Ops) redrive(ctx context.Context, req RedriveRequest) (RedriveResult, error) {
	res := RedriveResult{Subscriber: req.Subscriber}
	if req.ID < 0 {
		return res, inputErr("id", "must be a dead letter's id (a positive number), got %d", req.ID)
	}
	if (req.ID > 0) == req.All {
		return res, inputErr("id", "give exactly one of id (one dead letter) or all (every one waiting)")
	}
	if err := o.checkSubscriber(ctx, req.Subscriber); err != nil {
		return res, err
	}
	var err error
	if req.All {
		res.Requested, err = subscriber.RequestRedriveAll(ctx, o.subs, req.Subscriber)
	} else {
		res.Requested, err = subscriber.RequestRedrive(ctx, o.subs, req.Subscriber, req.ID)
	}
	switch {
	case err != nil:
		return res, subscriberErr(err)
	case res.Requested == 0 && req.All:
		return res, fmt.Errorf("%w: %s has no dead letter waiting for a redrive", ErrNotFound, req.Subscriber)
	case res.Requested == 0:
		return res, fmt.Errorf("%w: %s has no dead letter %d waiting for a redrive", ErrNotFound, req.Subscriber, req.ID)
	}
	return res, nil
}
