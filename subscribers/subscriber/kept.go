package subscriber

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
)

// DeadLetterKept stores ev as a dead letter of subscriber, in tx (the
// caller's transaction), and deletes its processed row: for a service
// that recorded an event as processed while keeping it for a later
// attempt of its own (a destination's parked event, see
// subscribers/destination) and now gives up on it. What it leaves is what
// a message dead-lettered by the library leaves, so `hub redrive`
// delivers it again. cause is sanitized; ev.NumDelivered is the attempt
// count stored. It returns the dead letter's id.
func DeadLetterKept(ctx context.Context, tx pgx.Tx, subscriber string, ev Event, cause string, now func() time.Time) (int64, error) {
	if !ValidName(subscriber) {
		return 0, fmt.Errorf("%w: %q is not a valid subscriber name", ErrUnknownSubscriber, subscriber)
	}
	q := newQueries(subscriber)
	headers, _ := storableHeaders(ev.Header)
	data := ev.Data
	if data == nil {
		data = []byte{}
	}
	var id int64
	err := tx.QueryRow(ctx, q.insertDeadLetter, subscriber, SanitizeText(ev.Provider, maxKeyLen), SanitizeText(ev.EventID, maxKeyLen),
		SanitizeText(ev.Subject, 0), int64(min(ev.StreamSeq, math.MaxInt64)), headers, data, SanitizeText(cause, maxErrorLen),
		int64(min(ev.NumDelivered, math.MaxInt32)), now().UTC()).Scan(&id)
	if err != nil {
		return 0, dlError(subscriber, err)
	}
	if _, err := tx.Exec(ctx, q.forgetProcessed, subscriber, ev.Provider, ev.EventID); err != nil {
		return 0, dlError(subscriber, err)
	}
	return id, nil
}
