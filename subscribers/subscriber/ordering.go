package subscriber

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

type handlerStateKey struct{}

// handlerState travels in a handler's context.
type handlerState struct {
	subscriber string
	q          *queries
	eventID    string
	now        func() time.Time
	stale      bool
}

// ApplyIfNewer is the ordering helper. It records, in the subscriber's
// entity_versions table and within the handler's transaction, that the
// entity (kind, id) was last changed by an event that occurred at
// occurredAt, and returns true, unless an event that occurred at the same
// time or later was already applied to it: then it changes nothing and
// returns false. A kind or id that is not Storable, or longer than 1 KiB,
// is a permanent error (wrapping ErrUnstorable when not storable). Call
// it from a handler, with the handler's ctx and tx, before changing the
// entity:
//
//	ok, err := subscriber.ApplyIfNewer(ctx, tx, "paddle.subscription", sub.ID, ev.OccurredAt)
//	if err != nil {
//		return err
//	}
//	if !ok {
//		return subscriber.ErrStale // recorded as skipped_stale, acked
//	}
//
// The upsert locks the entity's row until the transaction ends, so events
// for one entity handled concurrently are applied one at a time, each
// compared with the last one committed. An event whose ApplyIfNewer
// returned false is recorded as skipped_stale even if the handler then
// returns nil. A zero occurredAt cannot be ordered: ApplyIfNewer returns a
// permanent error wrapping ErrNoOccurredAt.
func ApplyIfNewer(ctx context.Context, tx pgx.Tx, kind, id string, occurredAt time.Time) (bool, error) {
	st, ok := ctx.Value(handlerStateKey{}).(*handlerState)
	if !ok {
		return false, ErrNotInHandler
	}
	if occurredAt.IsZero() {
		return false, Permanent(fmt.Errorf("%w: %s %q", ErrNoOccurredAt, kind, id))
	}
	for _, f := range []struct{ name, v string }{{"kind", kind}, {"id", id}} {
		if err := CheckStorable("entity "+f.name, f.v); err != nil {
			return false, err
		}
		if len(f.v) > maxKeyLen {
			return false, Permanentf("entity %s is %d bytes long, more than %d", f.name, len(f.v), maxKeyLen)
		}
	}
	var applied bool
	err := tx.QueryRow(ctx, st.q.applyIfNewer, kind, id, occurredAt.UTC(), st.eventID, st.now().UTC()).Scan(&applied)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		st.stale = true
		return false, nil
	case err != nil:
		return false, fmt.Errorf("apply if newer %s %q: %w", kind, id, err)
	}
	return true, nil
}
