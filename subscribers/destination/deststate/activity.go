package deststate

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AttemptBucket is one step's HTTP attempts of a destination.
type AttemptBucket struct {
	Start time.Time
	// Attempts counts the attempts, Failed those that did not deliver.
	Attempts, Failed int64
	// P50, P95 and P99 are the attempts' latency percentiles (0 without
	// attempts).
	P50, P95, P99 time.Duration
}

// AttemptActivity counts the destination's attempts per step from from
// to until, with their latency percentiles, through
// ix_attempts_attempted_at, reading at most maxRows attempts (the newest);
// partial is true when that bound was reached (the oldest buckets are
// then short).
func AttemptActivity(ctx context.Context, db DB, dest string, from, until time.Time, step time.Duration, maxRows int) (buckets []AttemptBucket, partial bool, err error) {
	attempts, err := Table(dest, "attempts")
	if err != nil {
		return nil, false, err
	}
	if step <= 0 || !until.After(from) || maxRows <= 0 {
		return nil, false, fmt.Errorf("attempts of %s: bad window", dest)
	}
	steps := int((until.Sub(from) + step - 1) / step)
	buckets = make([]AttemptBucket, steps)
	for i := range buckets {
		buckets[i].Start = from.Add(time.Duration(i) * step)
	}
	rows, err := db.Query(ctx, `SELECT date_bin(make_interval(secs => $1), attempted_at, $2), count(*),
			count(*) FILTER (WHERE outcome <> 'delivered'),
			percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY latency_ms)
		FROM (SELECT attempted_at, outcome, latency_ms FROM `+attempts+`
			WHERE attempted_at >= $2 AND attempted_at < $3 ORDER BY attempted_at DESC LIMIT $4) r
		GROUP BY 1`, step.Seconds(), from, until, maxRows)
	if err != nil {
		return nil, false, DBError("attempts", dest, err)
	}
	var total int64
	var b time.Time
	var n, failed int64
	var pct []float64
	_, err = pgx.ForEachRow(rows, []any{&b, &n, &failed, &pct}, func() error {
		total += n
		i := int(b.Sub(from) / step)
		if i < 0 || i >= steps {
			return nil
		}
		ab := &buckets[i]
		ab.Attempts, ab.Failed = n, failed
		if len(pct) == 3 {
			ab.P50, ab.P95, ab.P99 = msDuration(pct[0]), msDuration(pct[1]), msDuration(pct[2])
		}
		return nil
	})
	if err != nil {
		return nil, false, DBError("attempts", dest, err)
	}
	return buckets, total >= int64(maxRows), nil
}
