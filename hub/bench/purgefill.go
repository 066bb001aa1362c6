package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
)

// purgeFillChunk is the rows one fill statement writes (a transaction of
// about 1 GB of WAL at most).
const purgeFillChunk = 200_000

// purgeFillSQL writes archive rows $1..$2 and the dedup rows of their
// first deliveries, shaped as the hub writes them (hub/store, ingest):
// Paddle deliveries of the body $5 with its event id $6 replaced, every
// $8-th row a duplicate of the row before it (SKIPPED, no body; 0: none),
// received $4 microseconds apart from $3, archive ids UUIDv7 of the
// receipt time, entities of the kinds $9 with ids of the row, every event
// published (stream_seq set, out of the outbox). $7 is the width of the
// event number in the event id.
const purgeFillSQL = `
WITH r AS (
    SELECT g, ts, dup, ev,
           (lpad(to_hex(floor(extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7' ||
            substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid AS id,
           'evt_purge_' || lpad(ev::text, $7, '0') AS eid
    FROM (SELECT g, $3::timestamptz + g * make_interval(secs => $4::bigint / 1e6) AS ts,
                 ($8 > 0 AND g % $8 = $8 - 1) AS dup, md5(g::text) AS h,
                 CASE WHEN $8 > 0 AND g % $8 = $8 - 1 THEN (g - 1) - (g - 1) / $8
                      WHEN $8 > 0 THEN g - g / $8 ELSE g END AS ev
          FROM generate_series($1::bigint, $2::bigint) AS g) s
), archived AS (
    INSERT INTO webhook_events (id, provider, event_id, event_type, payload, signature, processing_status,
                                created_at, body, signed_at, occurred_at, origin, entities)
    SELECT id, 'paddle', eid, 'subscription.created', replace($5, $6, eid)::jsonb,
           't=' || floor(extract(epoch FROM ts))::bigint || ';h1=' || md5(eid) || md5(g::text),
           CASE WHEN dup THEN 'SKIPPED' END, ts,
           CASE WHEN NOT dup THEN convert_to(replace($5, $6, eid), 'UTF8') END,
           date_trunc('second', ts - interval '1 second'), ts - interval '2 seconds', 'webhook',
           (SELECT array_agg(k || ':' || left(k, 3) || '_' || ev) FROM unnest($9::text[]) AS k)
    FROM r
)
INSERT INTO processed_webhook_events (id, provider, event_id, event_type, processed_at, publish_attempts,
                                      first_attempt_at, stream_seq, published_at)
SELECT id, 'paddle', eid, 'subscription.created', ts, 1, ts, ev + 1, ts + interval '20 milliseconds'
FROM r WHERE NOT dup`

// purgeFill describes the archive a purge bench fills.
type purgeFill struct {
	rows     int
	dupEvery int       // every dupEvery-th row a duplicate; 0: none
	end      time.Time // the youngest row was received before it
	span     time.Duration
}

// fillArchive writes f's rows into the database url: without the
// archive's secondary indexes, which are built afterwards (much faster
// than maintaining 12 indexes row by row), then VACUUM (FREEZE, ANALYZE),
// as an archive of rows weeks old is.
func fillArchive(ctx context.Context, url string, f purgeFill, log io.Writer) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	defer conn.Close(context.Background())
	p, err := provider.NewPaddle([]string{benchSecret}, provider.Options{})
	if err != nil {
		return err
	}
	width := len(fmt.Sprint(max(f.rows-1, 0)))
	placeholder := "evt_purge_" + strings.Repeat("0", width)
	body, err := samples.Body(p.Name(), placeholder, "subscription.created", nil, f.end.Add(-f.span/2))
	if err != nil {
		return err
	}
	ev, err := provider.PaddleEvent(body)
	if err != nil {
		return err
	}
	var kinds []string
	for _, e := range ev.Entities {
		kinds = append(kinds, e.Kind)
	}
	var defs []string
	rows, err := conn.Query(ctx, `SELECT pg_get_indexdef(indexrelid), indexrelid::regclass::text FROM pg_index
		WHERE indrelid = 'webhook_events'::regclass AND NOT indisprimary`)
	if err != nil {
		return fmt.Errorf("fill: indexes: %w", err)
	}
	var drop []string
	for rows.Next() {
		var def, name string
		if err := rows.Scan(&def, &name); err != nil {
			return fmt.Errorf("fill: indexes: %w", err)
		}
		defs, drop = append(defs, def), append(drop, name)
	}
	if rows.Err() != nil {
		return fmt.Errorf("fill: indexes: %w", rows.Err())
	}
	for _, name := range drop {
		if _, err := conn.Exec(ctx, "DROP INDEX "+name); err != nil {
			return fmt.Errorf("fill: %w", err)
		}
	}
	start := time.Now()
	step := f.span / time.Duration(max(f.rows, 1))
	first := f.end.Add(-f.span)
	for lo := 0; lo < f.rows; lo += purgeFillChunk {
		hi := min(lo+purgeFillChunk, f.rows) - 1
		if _, err := conn.Exec(ctx, purgeFillSQL, lo, hi, first, step.Microseconds(), string(body), placeholder, width, f.dupEvery, kinds); err != nil {
			return fmt.Errorf("fill rows %d..%d: %w", lo, hi, err)
		}
		fmt.Fprintf(log, "… %d archive rows after %.0f s\n", hi+1, time.Since(start).Seconds())
	}
	_, _ = conn.Exec(ctx, "SET maintenance_work_mem = '256MB'")
	for _, def := range defs {
		if _, err := conn.Exec(ctx, def); err != nil {
			return fmt.Errorf("fill: %w", err)
		}
	}
	fmt.Fprintf(log, "… %d indexes built after %.0f s\n", len(defs), time.Since(start).Seconds())
	for _, t := range []string{"webhook_events", "processed_webhook_events"} {
		if _, err := conn.Exec(ctx, "VACUUM (FREEZE, ANALYZE) "+t); err != nil {
			return fmt.Errorf("fill: %w", err)
		}
	}
	fmt.Fprintf(log, "filled in %.0f s (body %d B, entities %v)\n", time.Since(start).Seconds(), len(body), kinds)
	return nil
}
