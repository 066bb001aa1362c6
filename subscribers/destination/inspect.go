package destination

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Status is what operators see of a destination (`hub destinations`): what
// it delivers, its state, and its recent attempts.
type Status struct {
	Name     string
	URL      string
	Subjects []string
	State    State
	Reason   string // of the change to State
	// ChangedAt is when State was set (the destination's creation for a
	// destination never paused or disabled).
	ChangedAt time.Time
	// LastSuccess and LastAttempt are zero when there was none (since the
	// attempts were last purged).
	LastSuccess, LastAttempt time.Time
	// Attempts1h and Failures1h count the last hour's attempts and those of
	// them that did not deliver.
	Attempts1h, Failures1h int64
	// P99 is the 99th percentile of the last hour's attempt latencies, 0
	// without attempts.
	P99 time.Duration
	// Waiting is the destination's parked events: waiting for a retry
	// (or, ordered, behind one), out of the stream (GetWaiting).
	Waiting Waiting
}

// Window is the span of Status's recent figures.
const Window = time.Hour

// GetStatus returns the destination name's status, ErrUnknownDestination
// when it has no tables. Every figure is read through an index: the state
// row, the newest attempt and the newest success, and the last hour's
// attempts (Window); and the parked events (Waiting), counted.
func GetStatus(ctx context.Context, db DB, name string) (Status, error) {
	attempts, err := deststate.Table(name, "attempts")
	if err != nil {
		return Status{}, err
	}
	state, _ := deststate.Table(name, "destination_state")
	st := Status{Name: name}
	var s, url, reason *string
	var changedAt, lastSuccess, lastAttempt *time.Time
	var p99 *float64
	err = db.QueryRow(ctx, `SELECT d.state, d.reason, d.changed_at, d.url, d.subjects,
			(SELECT max(attempted_at) FROM `+attempts+` WHERE outcome = 'delivered'),
			(SELECT max(attempted_at) FROM `+attempts+`),
			w.n, w.failures, w.p99
		FROM (SELECT 1) one
		LEFT JOIN `+state+` d ON d.singleton
		CROSS JOIN LATERAL (
			SELECT count(*) AS n, count(*) FILTER (WHERE outcome <> 'delivered') AS failures,
				percentile_cont(0.99) WITHIN GROUP (ORDER BY latency_ms) AS p99
			FROM `+attempts+` WHERE attempted_at > NOW() - make_interval(secs => $1)) w`,
		Window.Seconds()).Scan(&s, &reason, &changedAt, &url, &st.Subjects,
		&lastSuccess, &lastAttempt, &st.Attempts1h, &st.Failures1h, &p99)
	if err != nil {
		return Status{}, deststate.DBError("status", name, err)
	}
	st.State = StateActive
	if s != nil {
		st.State = State(*s)
	}
	st.Reason = deref(reason)
	st.URL = RedactURL(deref(url)) // a row written before path tokens were redacted
	st.ChangedAt = deref(changedAt)
	st.LastSuccess = deref(lastSuccess)
	st.LastAttempt = deref(lastAttempt)
	if p99 != nil {
		st.P99 = time.Duration(*p99 * float64(time.Millisecond))
	}
	if st.Waiting, err = GetWaiting(ctx, db, name); err != nil {
		return Status{}, err
	}
	return st, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// List returns the status of every destination whose tables live in db
// (every schema with a destination_state and an attempts table, whose name
// can name a subscriber), sorted by name.
func List(ctx context.Context, db DB) ([]Status, error) {
	names, err := deststate.Names(ctx, db)
	if err != nil {
		return nil, err
	}
	out := make([]Status, 0, len(names))
	for _, n := range names {
		if !subscriber.ValidName(n) {
			continue
		}
		st, err := GetStatus(ctx, db, n)
		if errors.Is(err, ErrUnknownDestination) {
			continue // dropped since the list was read
		}
		if err != nil {
			return nil, fmt.Errorf("list destinations: %w", err)
		}
		out = append(out, st)
	}
	return out, nil
}
