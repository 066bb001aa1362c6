package deststate

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/internal/redact"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Outcomes of an attempt (Attempt.Outcome).
const (
	// OutcomeDelivered: the endpoint answered 2xx.
	OutcomeDelivered = "delivered"
	// OutcomeFailed: no answer or a failing one; the event is retried.
	OutcomeFailed = "failed"
	// OutcomeGone: the endpoint answered 410; the destination is disabled.
	OutcomeGone = "gone"
	// OutcomeDeadLettered: a failure past the retry horizon (or a
	// permanent one); the event was dead-lettered.
	OutcomeDeadLettered = "dead_lettered"
)

// Caps on the text an attempt stores.
const (
	MaxErrorBytes    = 2 << 10
	MaxResponseBytes = 1 << 10
	// maxKeyBytes bounds the provider and event id stored (the hub's are
	// far shorter).
	maxKeyBytes = 1 << 10
)

// Attempt is one HTTP attempt to deliver an event. Its JSON is what the
// admin API and `hub events show --json` print (Latency in nanoseconds).
type Attempt struct {
	Destination string        `json:"destination"`
	Provider    string        `json:"provider"`
	EventID     string        `json:"event_id"`
	StreamSeq   uint64        `json:"stream_seq,omitempty"` // 0 if unknown
	At          time.Time     `json:"at"`                   // when the attempt started; zero: now
	Status      int           `json:"status,omitempty"`     // HTTP status; 0 when there was no answer
	Latency     time.Duration `json:"latency_ns"`
	Outcome     string        `json:"outcome"`            // OutcomeDelivered, OutcomeFailed, OutcomeGone, OutcomeDeadLettered
	Error       string        `json:"error,omitempty"`    // the transport error or why the answer failed
	Response    string        `json:"response,omitempty"` // the start of the response body
}

func validOutcome(o string) bool {
	switch o {
	case OutcomeDelivered, OutcomeFailed, OutcomeGone, OutcomeDeadLettered:
		return true
	}
	return false
}

// eventKey is the provider and event id as stored: sanitized the same way
// when written and when looked up, so a lookup finds what was written.
func eventKey(provider, eventID string) (string, string) {
	return subscriber.SanitizeText(provider, maxKeyBytes), subscriber.SanitizeText(eventID, maxKeyBytes)
}

// RecordAttempt logs a in the destination's attempts table. Its texts are
// redacted and sanitized (storedText): Error cut at 2 KiB, Response at
// 1 KiB. db is the handler's transaction for a success, so the record
// commits with the event's; a pool otherwise.
func RecordAttempt(ctx context.Context, db DB, a Attempt) error {
	t, err := Table(a.Destination, "attempts")
	if err != nil {
		return err
	}
	if !validOutcome(a.Outcome) {
		return fmt.Errorf("record attempt of %s: invalid outcome %q", a.Destination, a.Outcome)
	}
	at := a.At
	if at.IsZero() {
		at = time.Now()
	}
	var status *int
	if a.Status > 0 {
		status = &a.Status
	}
	var seq *int64
	if a.StreamSeq > 0 {
		s := int64(min(a.StreamSeq, math.MaxInt64))
		seq = &s
	}
	provider, eventID := eventKey(a.Provider, a.EventID)
	latency := max(a.Latency, 0).Seconds() * 1000
	_, err = db.Exec(ctx, `INSERT INTO `+t+` (provider, event_id, stream_seq, attempted_at, status, latency_ms, outcome, error, response)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		provider, eventID, seq, at, status, latency, a.Outcome,
		storedText(a.Error, MaxErrorBytes), storedText(a.Response, MaxResponseBytes))
	if err != nil {
		return DBError("record attempt", a.Destination, err)
	}
	return nil
}

// RecordAttempts logs the attempts of as, all of destination dest, with
// one INSERT: the batch form of RecordAttempt (the same checks and
// sanitizing), which the runner's group commit uses for delivered
// attempts. Nothing is written when one of them is invalid.
func RecordAttempts(ctx context.Context, db DB, dest string, as []Attempt) error {
	if len(as) == 0 {
		return nil
	}
	t, err := Table(dest, "attempts")
	if err != nil {
		return err
	}
	n := len(as)
	var (
		providers, ids, outcomes, errs, responses = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		seqs, statuses                            = make([]*int64, 0, n), make([]*int32, 0, n)
		ats                                       = make([]time.Time, 0, n)
		latencies                                 = make([]float64, 0, n)
	)
	for _, a := range as {
		if a.Destination != dest {
			return fmt.Errorf("record attempts of %s: an attempt of %q", dest, a.Destination)
		}
		if !validOutcome(a.Outcome) {
			return fmt.Errorf("record attempts of %s: invalid outcome %q", dest, a.Outcome)
		}
		at := a.At
		if at.IsZero() {
			at = time.Now()
		}
		var status *int32
		if a.Status > 0 {
			st := int32(min(a.Status, math.MaxInt32))
			status = &st
		}
		var seq *int64
		if a.StreamSeq > 0 {
			sq := int64(min(a.StreamSeq, math.MaxInt64))
			seq = &sq
		}
		provider, eventID := eventKey(a.Provider, a.EventID)
		providers, ids = append(providers, provider), append(ids, eventID)
		seqs, ats, statuses = append(seqs, seq), append(ats, at), append(statuses, status)
		latencies = append(latencies, max(a.Latency, 0).Seconds()*1000)
		outcomes = append(outcomes, a.Outcome)
		errs = append(errs, storedText(a.Error, MaxErrorBytes))
		responses = append(responses, storedText(a.Response, MaxResponseBytes))
	}
	_, err = db.Exec(ctx, `INSERT INTO `+t+` (provider, event_id, stream_seq, attempted_at, status, latency_ms, outcome, error, response)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::timestamptz[], $5::int[], $6::double precision[], $7::text[], $8::text[], $9::text[])`,
		providers, ids, seqs, ats, statuses, latencies, outcomes, errs, responses)
	if err != nil {
		return DBError("record attempts", dest, err)
	}
	return nil
}

// FirstAttempt returns when the destination first attempted the event, and
// false if it never did (or the record was purged): the start of the
// event's retry horizon. One index lookup.
func FirstAttempt(ctx context.Context, db DB, dest, provider, eventID string) (time.Time, bool, error) {
	t, err := Table(dest, "attempts")
	if err != nil {
		return time.Time{}, false, err
	}
	p, id := eventKey(provider, eventID)
	var first *time.Time
	// The current round of attempts starts after the event's last
	// delivery or dead letter: a replay of a delivered event, or a
	// redrive of a dead letter, gets a whole horizon of its own.
	if err := db.QueryRow(ctx, `SELECT min(attempted_at) FROM `+t+` WHERE provider = $1 AND event_id = $2
		AND attempted_at > coalesce((SELECT max(attempted_at) FROM `+t+` WHERE provider = $1 AND event_id = $2
			AND outcome IN ('`+OutcomeDelivered+`', '`+OutcomeDeadLettered+`')), '-infinity')`, p, id).Scan(&first); err != nil {
		return time.Time{}, false, DBError("first attempt", dest, err)
	}
	if first == nil {
		return time.Time{}, false, nil
	}
	return *first, true, nil
}

// DefaultAttemptsLimit and MaxAttemptsLimit bound AttemptsFor.
const (
	DefaultAttemptsLimit = 100
	MaxAttemptsLimit     = 1000
)

// AttemptsFor returns the destination's last limit attempts of the event
// (limit <= 0: DefaultAttemptsLimit; at most MaxAttemptsLimit), oldest
// first. FirstAttempt gives the first one when there were more.
func AttemptsFor(ctx context.Context, db DB, dest, provider, eventID string, limit int) ([]Attempt, error) {
	p, id := eventKey(provider, eventID)
	return newestAttempts(ctx, db, dest, "attempts", `WHERE provider = $2 AND event_id = $3`, limit, p, id)
}

// RecentAttempts returns the destination's last limit attempts, whatever
// their event (limit <= 0: DefaultAttemptsLimit; at most
// MaxAttemptsLimit), oldest first: what `hub destinations status` shows.
// It reads them newest first through the attempted_at index.
func RecentAttempts(ctx context.Context, db DB, dest string, limit int) ([]Attempt, error) {
	return newestAttempts(ctx, db, dest, "recent attempts", "", limit)
}

// newestAttempts returns the destination's newest limit attempts (as
// AttemptsFor bounds it) that where (on $2, $3... args) selects, oldest
// first; op names the read in its error.
func newestAttempts(ctx context.Context, db DB, dest, op, where string, limit int, args ...any) ([]Attempt, error) {
	t, err := Table(dest, "attempts")
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultAttemptsLimit
	}
	rows, err := db.Query(ctx, `SELECT * FROM (
			SELECT `+attemptColumns+` FROM `+t+` `+where+`
			ORDER BY attempted_at DESC, id DESC LIMIT $1) last
		ORDER BY attempted_at, id`, append([]any{min(limit, MaxAttemptsLimit)}, args...)...)
	if err != nil {
		return nil, DBError(op, dest, err)
	}
	return collectAttempts(dest, rows)
}

// attemptColumns are the columns collectAttempts scans, in its order.
const attemptColumns = `id, provider, event_id, COALESCE(stream_seq, 0), attempted_at, COALESCE(status, 0), latency_ms, outcome, error, response`

// collectAttempts reads the rows of a query selecting attemptColumns.
func collectAttempts(dest string, rows pgx.Rows) ([]Attempt, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Attempt, error) {
		a := Attempt{Destination: dest}
		var rowID, seq int64
		var ms float64
		err := r.Scan(&rowID, &a.Provider, &a.EventID, &seq, &a.At, &a.Status, &ms, &a.Outcome, &a.Error, &a.Response)
		a.StreamSeq = uint64(max(seq, 0))
		// Rows written before the attempt log was redacted at write time
		// are redacted as they are read.
		a.Error, a.Response = storedText(a.Error, MaxErrorBytes), storedText(a.Response, MaxResponseBytes)
		a.Latency = msDuration(ms)
		return a, err
	})
	if err != nil {
		return nil, DBError("attempts", dest, err)
	}
	return out, nil
}

// msDuration converts milliseconds to a Duration.
func msDuration(ms float64) time.Duration {
	return time.Duration(ms * float64(time.Millisecond))
}

// DefaultPurgeBatch and MaxPurgeBatch bound PurgeAttempts' batches.
const (
	DefaultPurgeBatch = 1000
	MaxPurgeBatch     = 100_000
)

// PurgeAttempts deletes the destination's attempts older than olderThan, in
// batches of batch rows (<= 0: DefaultPurgeBatch; at most MaxPurgeBatch),
// each its own statement, so no statement holds many locks or runs long.
// It returns how many it deleted, also when ctx ends it early.
func PurgeAttempts(ctx context.Context, db DB, dest string, olderThan time.Time, batch int) (int64, error) {
	t, err := Table(dest, "attempts")
	if err != nil {
		return 0, err
	}
	if batch <= 0 {
		batch = DefaultPurgeBatch
	}
	batch = min(batch, MaxPurgeBatch)
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("purge attempts of %s: %w", dest, err)
		}
		tag, err := db.Exec(ctx, `DELETE FROM `+t+` WHERE id IN (
			SELECT id FROM `+t+` WHERE attempted_at < $1 ORDER BY attempted_at LIMIT $2)`, olderThan, batch)
		if err != nil {
			return total, DBError("purge attempts", dest, err)
		}
		total += tag.RowsAffected()
		// Rows older than olderThan are not written any more: the loop
		// ends once a batch comes back short.
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}

// storedText is an attempt's text as the log stores and shows it: what the
// client left (Client redacts the destination's own credentials) passed
// once more through the rules every destination shares (a nil
// redact.Redactor: authentication schemes, credential fields,
// signatures, URL tokens), then sanitized and cut to n bytes.
func storedText(s string, n int) string {
	var shared *redact.Redactor
	return subscriber.SanitizeText(shared.Text(s), n)
}
