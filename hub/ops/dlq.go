package ops

import (
	"context"

	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// DeadLetters lists a subscriber's dead letters.
func (o *Ops) DeadLetters(ctx context.Context, sub string) ([]subscriber.DeadLetter, error) {
	if err := o.checkSubscriber(ctx, sub); err != nil {
		return nil, err
	}
	return subscriber.ListDeadLetters(ctx, o.pool, sub)
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
