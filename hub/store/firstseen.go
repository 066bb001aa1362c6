package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/hub"
)

// MaxFirstSeenKeys bounds the events FirstSeen looks up at once.
const MaxFirstSeenKeys = 10_000

// FirstSeen returns when the hub first accepted each of the events named
// by providers[i], eventIDs[i] (their dedup rows, which outlive the
// archive), through the dedup table's unique index; events the hub never
// accepted are left out. At most MaxFirstSeenKeys keys.
func (s *Store) FirstSeen(ctx context.Context, providers, eventIDs []string) ([]hub.EventRecord, error) {
	if len(providers) != len(eventIDs) || len(providers) > MaxFirstSeenKeys {
		return nil, fmt.Errorf("first seen: %d providers, %d event ids (at most %d)", len(providers), len(eventIDs), MaxFirstSeenKeys)
	}
	if len(providers) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT p.provider, p.event_id, p.processed_at
		FROM unnest($1::text[], $2::text[]) AS k(provider, event_id)
		JOIN processed_webhook_events p ON p.provider = k.provider AND p.event_id = k.event_id`, providers, eventIDs)
	if err != nil {
		return nil, fmt.Errorf("first seen: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.EventRecord, error) {
		var e hub.EventRecord
		err := r.Scan(&e.Provider, &e.EventID, &e.FirstSeen)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("first seen: %w", err)
	}
	return out, nil
}
