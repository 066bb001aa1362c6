package destination

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Parked events: a failed event whose next attempt is not soon (more than
// MaxHeldRetry away) leaves the stream for the destination's parked
// table, so that it does not hold a place of the consumer's window
// (MaxAckPending) while it waits; see the package documentation.

// MaxHeldRetry is the longest retry delay a failed event waits for in the
// stream (a nak with that delay, holding a place of the window); a longer
// one parks the event.
const MaxHeldRetry = 10 * time.Second

// ParkPollInterval is how often the runner looks for parked events that
// are due (retry-now takes effect within it).
const ParkPollInterval = time.Second

// maxWaitingCount bounds the count of parked events the runner reads for
// its gauge (the status counts them all).
const maxWaitingCount = 1_000_000

// parked is the record a handler returns for an event it parks: written
// by recordDelivered in the transaction that records the event as
// processed.
type parked struct {
	ev            subscriber.Event
	due, at       time.Time
	attempts      int
	receiverAsked bool
	reason        string
}

// Parked is a parked event as the runner's scheduler reads it.
type Parked struct {
	ID       int64
	Event    subscriber.Event
	Due      time.Time
	Attempts int
	// ReceiverAsked says the wait is a Retry-After's.
	ReceiverAsked bool
	// bad is why the row cannot be read back as an event (it is
	// dead-lettered as it is, not retried).
	bad error
}

// park writes ps in tx, with one INSERT; an event parked already (a
// replay copy of it failed too) keeps its row.
func park(ctx context.Context, tx pgx.Tx, dest string, ps []parked) error {
	t, err := deststate.Table(dest, "parked")
	if err != nil {
		return err
	}
	n := len(ps)
	providers, ids, subjects, reasons := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	seqs, attempts := make([]*int64, 0, n), make([]int32, 0, n)
	headers, data := make([][]byte, 0, n), make([][]byte, 0, n)
	ats, dues, asked := make([]time.Time, 0, n), make([]time.Time, 0, n), make([]bool, 0, n)
	for _, p := range ps {
		h, err := json.Marshal(map[string][]string(p.ev.Header))
		if err != nil {
			return fmt.Errorf("park an event of %s: headers: %w", dest, err)
		}
		var seq *int64
		if p.ev.StreamSeq > 0 {
			s := int64(min(p.ev.StreamSeq, math.MaxInt64))
			seq = &s
		}
		body := p.ev.Data
		if body == nil {
			body = []byte{}
		}
		providers, ids = append(providers, p.ev.Provider), append(ids, p.ev.EventID)
		subjects, reasons = append(subjects, subscriber.SanitizeText(p.ev.Subject, 0)), append(reasons, subscriber.SanitizeText(p.reason, MaxErrorBytes))
		seqs, attempts = append(seqs, seq), append(attempts, int32(min(p.attempts, math.MaxInt32)))
		headers, data = append(headers, h), append(data, body)
		ats, dues, asked = append(ats, p.at), append(dues, p.due), append(asked, p.receiverAsked)
	}
	_, err = tx.Exec(ctx, `INSERT INTO `+t+` (provider, event_id, subject, stream_seq, headers, data, parked_at, due_at, attempts, receiver_asked, reason)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bytea[], $6::bytea[], $7::timestamptz[], $8::timestamptz[], $9::int[], $10::bool[], $11::text[])
		ON CONFLICT (provider, event_id) DO NOTHING`,
		providers, ids, subjects, seqs, headers, data, ats, dues, attempts, asked, reasons)
	if err != nil {
		return deststate.DBError("park events", dest, err)
	}
	return nil
}

// claimParked takes up to limit parked events due at now, oldest due
// first, and moves their due time to leaseEnd while they are sent: a
// scheduler that dies meanwhile leaves them to be taken again then. With
// ordered, only the head (the first parked) is taken, and only when it is
// due: nothing overtakes it.
func claimParked(ctx context.Context, db DB, dest string, ordered bool, now, leaseEnd time.Time, limit int) ([]Parked, error) {
	t, err := deststate.Table(dest, "parked")
	if err != nil {
		return nil, err
	}
	pick := `SELECT id FROM ` + t + ` WHERE due_at <= $1 ORDER BY due_at, id LIMIT $3 FOR UPDATE SKIP LOCKED`
	if ordered {
		// Not SKIP LOCKED: a head locked by another replica must not let
		// this one take the second row.
		pick = `SELECT id FROM (SELECT id, due_at FROM ` + t + ` ORDER BY id LIMIT 1 FOR UPDATE) h WHERE h.due_at <= $1 AND $3 > 0`
	}
	rows, err := db.Query(ctx, `UPDATE `+t+` p SET due_at = $2 WHERE p.id IN (`+pick+`)
		RETURNING p.id, p.provider, p.event_id, p.subject, COALESCE(p.stream_seq, 0), p.headers, p.data, p.attempts, p.receiver_asked`,
		now, leaseEnd, limit)
	if err != nil {
		return nil, deststate.DBError("claim parked events", dest, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Parked, error) {
		var p Parked
		var seq int64
		var h []byte
		if err := row.Scan(&p.ID, &p.Event.Provider, &p.Event.EventID, &p.Event.Subject, &seq, &h, &p.Event.Data, &p.Attempts, &p.ReceiverAsked); err != nil {
			return p, err
		}
		p.Event.StreamSeq = uint64(max(seq, 0))
		p.Event.NumDelivered = uint64(max(p.Attempts, 0)) + 1
		p.Due = leaseEnd
		var m map[string][]string
		if err := json.Unmarshal(h, &m); err != nil {
			p.bad = fmt.Errorf("parked event %d: headers: %w", p.ID, err)
			return p, nil
		}
		p.Event.Header = nats.Header(m)
		md, err := schema.ParseMetadata(p.Event.Header)
		if err != nil {
			p.bad = fmt.Errorf("parked event %d: %w", p.ID, err)
			return p, nil
		}
		p.Event.Metadata = md
		return p, nil
	})
	if err != nil {
		return nil, deststate.DBError("claim parked events", dest, err)
	}
	return out, nil
}

// unpark deletes the parked event id (delivered, or dead-lettered).
func unpark(ctx context.Context, db DB, dest string, id int64) error {
	t, err := deststate.Table(dest, "parked")
	if err != nil {
		return err
	}
	if _, err := db.Exec(ctx, `DELETE FROM `+t+` WHERE id = $1`, id); err != nil {
		return deststate.DBError("unpark event", dest, err)
	}
	return nil
}

// repark sets the parked event id's next due time after a failed attempt.
func repark(ctx context.Context, db DB, dest string, id int64, due time.Time, attempts int, receiverAsked bool, reason string) error {
	t, err := deststate.Table(dest, "parked")
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, `UPDATE `+t+` SET due_at = $2, attempts = $3, receiver_asked = $4, reason = $5 WHERE id = $1`,
		id, due, int32(min(attempts, math.MaxInt32)), receiverAsked, subscriber.SanitizeText(reason, MaxErrorBytes))
	if err != nil {
		return deststate.DBError("repark event", dest, err)
	}
	return nil
}

// hasParked reports whether the destination has a parked event.
func hasParked(ctx context.Context, db DB, dest string) (bool, error) {
	t, err := deststate.Table(dest, "parked")
	if err != nil {
		return false, err
	}
	var ok bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+t+`)`).Scan(&ok); err != nil {
		return false, deststate.DBError("look for parked events", dest, err)
	}
	return ok, nil
}

// shortenWaits makes every parked event whose wait was the hub's own
// backoff (not a receiver's Retry-After) due at now: the runner calls it
// when its endpoint recovered from an outage (the circuit closed).
func shortenWaits(ctx context.Context, db DB, dest string, now time.Time) (int64, error) {
	t, err := deststate.Table(dest, "parked")
	if err != nil {
		return 0, err
	}
	tag, err := db.Exec(ctx, `UPDATE `+t+` SET due_at = $1 WHERE due_at > $1 AND NOT receiver_asked AND attempts > 0`, now)
	if err != nil {
		return 0, deststate.DBError("shorten waits", dest, err)
	}
	return tag.RowsAffected(), nil
}

// Waiting is what the parked table says of a destination: how many
// events wait for a retry (or, on an ordered destination, behind one),
// and when the next one is due (zero when none waits).
type Waiting struct {
	Events  int64
	NextDue time.Time
}

// GetWaiting reads the destination's waiting events. A destination whose
// tables predate the parked table (a process not yet upgraded) has none.
func GetWaiting(ctx context.Context, db DB, name string) (Waiting, error) {
	t, err := deststate.Table(name, "parked")
	if err != nil {
		return Waiting{}, err
	}
	var w Waiting
	var next *time.Time
	// The rows of an ordered destination parked behind its head, unsent
	// (no attempt), are due at once but wait for it: not the next due.
	err = db.QueryRow(ctx, `SELECT count(*), COALESCE(min(due_at) FILTER (WHERE attempts > 0), min(due_at)) FROM `+t).Scan(&w.Events, &next)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "42P01" { // undefined_table
		return Waiting{}, nil
	}
	if err != nil {
		return Waiting{}, deststate.DBError("waiting events", name, err)
	}
	w.NextDue = deref(next)
	return w, nil
}

// countWaiting counts the parked events, at most maxWaitingCount.
func countWaiting(ctx context.Context, db DB, dest string) (int64, error) {
	t, err := deststate.Table(dest, "parked")
	if err != nil {
		return 0, err
	}
	var n int64
	err = db.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM `+t+` LIMIT $1) w`, maxWaitingCount).Scan(&n)
	if err != nil {
		return 0, deststate.DBError("count waiting events", dest, err)
	}
	return n, nil
}
