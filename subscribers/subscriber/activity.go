package subscriber

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ActivityWindow is a span of time cut into equal steps, for Activity:
// the buckets start at From, From+Step, ... and the last ends at Until.
type ActivityWindow struct {
	From, Until time.Time
	Step        time.Duration
	// MaxRows bounds the rows of each table counted; past it the oldest
	// buckets undercount and Activity says Partial.
	MaxRows int
	// SamplesPerStep bounds the processed rows sampled per step for
	// latency (the newest of each step).
	SamplesPerStep int
}

// ActivityBucket is one step's processed events and dead letters.
type ActivityBucket struct {
	Start                   time.Time
	Processed, DeadLettered int64
}

// ProcessedSample is one processed row: its event and when it was
// processed (to measure from when the hub received it).
type ProcessedSample struct {
	EventKey
	ProcessedAt time.Time
}

// Activity is what a subscriber did over a window.
type Activity struct {
	Buckets []ActivityBucket
	Samples []ProcessedSample
	// Partial: a table had more than MaxRows rows in the window; the
	// counts of the oldest buckets are short.
	Partial bool
}

// ReadActivity counts the subscriber's processed events (by processed_at,
// through ix_processed_messages_processed_at) and dead letters (by
// created_at, read newest first by id, which follows the insertion order)
// per step of w, each read bounded to w.MaxRows rows, and samples up to
// w.SamplesPerStep processed rows per step. Four statements, no write.
func ReadActivity(ctx context.Context, db DB, subscriber string, w ActivityWindow) (Activity, error) {
	if !ValidName(subscriber) {
		return Activity{}, fmt.Errorf("%w: %q is not a valid subscriber name", ErrUnknownSubscriber, subscriber)
	}
	if w.Step <= 0 || !w.Until.After(w.From) || w.MaxRows <= 0 || w.SamplesPerStep < 0 {
		return Activity{}, fmt.Errorf("activity of %s: bad window %+v", subscriber, w)
	}
	steps := int((w.Until.Sub(w.From) + w.Step - 1) / w.Step)
	a := Activity{Buckets: make([]ActivityBucket, steps)}
	for i := range a.Buckets {
		a.Buckets[i].Start = w.From.Add(time.Duration(i) * w.Step)
	}
	processed := pgx.Identifier{subscriber, "processed_messages"}.Sanitize()
	dead := pgx.Identifier{subscriber, "dead_letters"}.Sanitize()
	secs := w.Step.Seconds()
	add := func(q string, set func(b *ActivityBucket, n int64)) error {
		rows, err := db.Query(ctx, q, secs, w.From, w.Until, w.MaxRows)
		if err != nil {
			return err
		}
		var total int64
		var b time.Time
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&b, &n}, func() error {
			total += n
			if i := int(b.Sub(w.From) / w.Step); i >= 0 && i < steps {
				set(&a.Buckets[i], n)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if total >= int64(w.MaxRows) {
			a.Partial = true
		}
		return nil
	}
	err := add(`SELECT date_bin(make_interval(secs => $1), processed_at, $2), count(*) FROM (
		SELECT processed_at FROM `+processed+` WHERE processed_at >= $2 AND processed_at < $3
		ORDER BY processed_at DESC LIMIT $4) r GROUP BY 1`,
		func(b *ActivityBucket, n int64) { b.Processed = n })
	if err != nil {
		return Activity{}, processedError(subscriber, err)
	}
	// dead_letters has no index on created_at: read the newest MaxRows by
	// id and keep those in the window (ids follow created_at but for
	// concurrent inserts).
	err = add(`SELECT date_bin(make_interval(secs => $1), created_at, $2), count(*) FROM (
		SELECT created_at FROM `+dead+` ORDER BY id DESC LIMIT $4) r
		WHERE created_at >= $2 AND created_at < $3 GROUP BY 1`,
		func(b *ActivityBucket, n int64) { b.DeadLettered = n })
	if err != nil {
		return Activity{}, dlError(subscriber, err)
	}
	if w.SamplesPerStep == 0 {
		return a, nil
	}
	rows, err := db.Query(ctx, `SELECT p.provider, p.event_id, p.processed_at
		FROM generate_series(0, $4::int - 1) k
		CROSS JOIN LATERAL (
			SELECT provider, event_id, processed_at FROM `+processed+`
			WHERE processed_at >= $2::timestamptz + k * make_interval(secs => $1)
			  AND processed_at < LEAST($3::timestamptz, $2::timestamptz + (k + 1) * make_interval(secs => $1))
			ORDER BY processed_at DESC LIMIT $5) p`,
		secs, w.From, w.Until, steps, w.SamplesPerStep)
	if err != nil {
		return Activity{}, processedError(subscriber, err)
	}
	a.Samples, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ProcessedSample, error) {
		var s ProcessedSample
		err := r.Scan(&s.Provider, &s.EventID, &s.ProcessedAt)
		return s, err
	})
	if err != nil {
		return Activity{}, processedError(subscriber, err)
	}
	return a, nil
}
