package ops

import (
	"context"
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
	dls, err := subscriber.ListDeadLetters(ctx, o.pool, sub)
	if err != nil {
		return nil, err
	}
	out := make([]DeadLetter, len(dls))
	for i, d := range dls {
		out[i] = DeadLetter{ID: d.ID, Provider: d.Provider, EventID: d.EventID, Subject: d.Subject, StreamSeq: d.StreamSeq,
			Error: d.Error, Attempts: d.Attempts, CreatedAt: d.CreatedAt, RedriveRequestedAt: d.RedriveRequestedAt,
			RedrivenAt: d.RedrivenAt, RedriveError: d.RedriveError}
	}
	return out, nil
}

// Redrive asks a subscriber to process dead letters again: one (id > 0)
// or all that are waiting (id == 0). The running subscriber picks the
// requests up within seconds and handles each in the same transaction as
// its processed-row insert, so an event it already processed is skipped.
// It returns how many were requested.
func (o *Ops) Redrive(ctx context.Context, sub string, id int64) (int64, error) {
	if err := o.checkSubscriber(ctx, sub); err != nil {
		return 0, err
	}
	if id > 0 {
		return subscriber.RequestRedrive(ctx, o.pool, sub, id)
	}
	return subscriber.RequestRedriveAll(ctx, o.pool, sub)
}
