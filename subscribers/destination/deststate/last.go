package deststate

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// MaxLastAttemptsKeys bounds the events one LastAttempts call looks up.
const MaxLastAttemptsKeys = 1000

// LastAttempts returns the destination's last attempt of each event in
// keys that it attempted (in no particular order; an event it never
// attempted has none): one query, one descent of the attempts' event
// index per key, whatever the number of keys (at most
// MaxLastAttemptsKeys; more are not looked up).
func LastAttempts(ctx context.Context, db DB, dest string, keys []subscriber.EventKey) ([]Attempt, error) {
	t, err := Table(dest, "attempts")
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, nil
	}
	providers, ids := lookupKeys(keys)
	rows, err := db.Query(ctx, `SELECT l.* FROM unnest($1::text[], $2::text[]) AS k(provider, event_id)
		CROSS JOIN LATERAL (
			SELECT `+attemptColumns+` FROM `+t+`
			WHERE provider = k.provider AND event_id = k.event_id
			ORDER BY attempted_at DESC, id DESC LIMIT 1) l`, providers, ids)
	if err != nil {
		return nil, DBError("last attempts", dest, err)
	}
	return collectAttempts(dest, rows)
}

// lookupKeys are the first MaxLastAttemptsKeys of keys as the
// destination's tables store them (eventKey), in two arrays for unnest.
func lookupKeys(keys []subscriber.EventKey) (providers, ids []string) {
	keys = keys[:min(len(keys), MaxLastAttemptsKeys)]
	providers, ids = make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		providers[i], ids[i] = eventKey(k.Provider, k.EventID)
	}
	return providers, ids
}

// ParkedOf returns which of keys the destination has parked (waiting for
// a retry, or behind one): one query, at most MaxLastAttemptsKeys keys
// (more are not looked up). A destination whose tables predate the
// parked table has none.
func ParkedOf(ctx context.Context, db DB, dest string, keys []subscriber.EventKey) (map[subscriber.EventKey]bool, error) {
	t, err := Table(dest, "parked")
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, nil
	}
	providers, ids := lookupKeys(keys)
	rows, err := db.Query(ctx, `SELECT p.provider, p.event_id FROM `+t+` p
		JOIN unnest($1::text[], $2::text[]) AS k(provider, event_id) ON p.provider = k.provider AND p.event_id = k.event_id`, providers, ids)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "42P01" { // undefined_table
		return nil, nil
	}
	if err != nil {
		return nil, DBError("parked events", dest, err)
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (subscriber.EventKey, error) {
		var k subscriber.EventKey
		err := row.Scan(&k.Provider, &k.EventID)
		return k, err
	})
	if err != nil {
		return nil, DBError("parked events", dest, err)
	}
	out := make(map[subscriber.EventKey]bool, len(got))
	for _, k := range got {
		out[k] = true
	}
	return out, nil
}
