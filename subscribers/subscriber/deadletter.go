package subscriber

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/schema"
)

// DB is what the dead-letter functions need: a *pgxpool.Pool, a
// *pgx.Conn or a pgx.Tx.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// DeadLetter is a message a subscriber gave up on.
type DeadLetter struct {
	ID         int64
	Subscriber string
	Provider   string // empty when the hub headers were unreadable
	EventID    string
	Subject    string
	StreamSeq  uint64 // 0 if unknown
	Headers    nats.Header
	Data       []byte // the exact body
	Error      string // why the last attempt failed
	Attempts   int    // deliveries (and failed redrives) so far
	CreatedAt  time.Time
	// RedriveRequestedAt is set by RequestRedrive and cleared when a redrive
	// fails; RedrivenAt is set when a redrive succeeded.
	RedriveRequestedAt *time.Time
	RedrivenAt         *time.Time
	RedriveError       string // the last failed redrive's error
}

// Limits on what is stored with a dead letter.
const (
	maxErrorLen      = 8 << 10
	maxTermReasonLen = 200
)

// deadLetter stores the message as a dead letter and terminates it. If it
// cannot be stored, the message is redelivered later instead.
func (s *Subscriber) deadLetter(msg jetstream.Msg, ev Event, cause error) {
	log := s.log.With("subject", ev.Subject, "provider", ev.Provider, "event_id", ev.EventID, "stream_seq", ev.StreamSeq, "attempt", ev.NumDelivered)
	headers, err := json.Marshal(map[string][]string(ev.Header))
	if err != nil {
		headers = []byte("{}")
	}
	data := ev.Data
	if data == nil {
		data = []byte{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var id int64
	err = s.cfg.Pool.QueryRow(ctx, s.q.insertDeadLetter, s.cfg.Name, ev.Provider, ev.EventID, ev.Subject,
		int64(ev.StreamSeq), headers, data, truncate(cause.Error(), maxErrorLen), int64(ev.NumDelivered), s.cfg.Now().UTC()).Scan(&id)
	if err != nil {
		delay := s.cfg.backoff(ev.NumDelivered)
		log.Error("cannot store dead letter; will retry the message", "error", err, "cause", cause, "retry_in", delay)
		s.nak(msg, delay, log)
		return
	}
	s.m.countDead()
	log.Error("dead-lettered", "dead_letter_id", id, "error", cause)
	reason := strings.Join(strings.Fields(fmt.Sprintf("dead letter %d: %s", id, cause)), " ")
	if err := msg.TermWithReason(truncate(reason, maxTermReasonLen)); err != nil {
		log.Warn("term failed; the redelivery will fail and be dead-lettered again", "error", err)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

const deadLetterColumns = `id, subscriber, COALESCE(provider, ''), COALESCE(event_id, ''), subject, COALESCE(stream_seq, 0),
    headers, data, error, attempts, created_at, redrive_requested_at, redriven_at, COALESCE(redrive_error, '')`

func scanDeadLetter(row pgx.Row) (DeadLetter, error) {
	var d DeadLetter
	var seq int64
	var headers []byte
	err := row.Scan(&d.ID, &d.Subscriber, &d.Provider, &d.EventID, &d.Subject, &seq, &headers, &d.Data,
		&d.Error, &d.Attempts, &d.CreatedAt, &d.RedriveRequestedAt, &d.RedrivenAt, &d.RedriveError)
	if err != nil {
		return d, err
	}
	d.StreamSeq = uint64(seq)
	var h map[string][]string
	if err := json.Unmarshal(headers, &h); err != nil {
		return d, fmt.Errorf("dead letter %d: headers: %w", d.ID, err)
	}
	d.Headers = nats.Header(h)
	return d, nil
}

// ListDeadLetters returns the subscriber's dead letters, oldest first,
// redriven ones included (see RedrivenAt).
func ListDeadLetters(ctx context.Context, db DB, subscriber string) ([]DeadLetter, error) {
	table, err := deadLetterTable(subscriber)
	if err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, "SELECT "+deadLetterColumns+" FROM "+table+" ORDER BY id")
	if err != nil {
		return nil, dlError(subscriber, err)
	}
	defer rows.Close()
	var out []DeadLetter
	for rows.Next() {
		d, err := scanDeadLetter(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, dlError(subscriber, err)
	}
	return out, nil
}

// GetDeadLetter returns one dead letter, or pgx.ErrNoRows.
func GetDeadLetter(ctx context.Context, db DB, subscriber string, id int64) (DeadLetter, error) {
	table, err := deadLetterTable(subscriber)
	if err != nil {
		return DeadLetter{}, err
	}
	d, err := scanDeadLetter(db.QueryRow(ctx, "SELECT "+deadLetterColumns+" FROM "+table+" WHERE id = $1", id))
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return d, dlError(subscriber, err)
	}
	return d, err
}

// RequestRedrive asks the running subscriber to process dead letter id
// again (through the same transaction as a delivery: a redrive of an event
// processed meanwhile is a no-op). It returns 1, or 0 when there is no such
// dead letter or it was already redriven. The subscriber picks requests up
// every RedriveInterval.
func RequestRedrive(ctx context.Context, db DB, subscriber string, id int64) (int64, error) {
	return requestRedrive(ctx, db, subscriber, "AND id = $1", id)
}

// RequestRedriveAll asks for a redrive of every dead letter of the
// subscriber not yet redriven, and returns how many.
func RequestRedriveAll(ctx context.Context, db DB, subscriber string) (int64, error) {
	return requestRedrive(ctx, db, subscriber, "")
}

func requestRedrive(ctx context.Context, db DB, subscriber, where string, args ...any) (int64, error) {
	table, err := deadLetterTable(subscriber)
	if err != nil {
		return 0, err
	}
	tag, err := db.Exec(ctx, "UPDATE "+table+" SET redrive_requested_at = NOW() WHERE redriven_at IS NULL "+where, args...)
	if err != nil {
		return 0, dlError(subscriber, err)
	}
	return tag.RowsAffected(), nil
}

func deadLetterTable(subscriber string) (string, error) {
	if !ValidName(subscriber) {
		return "", fmt.Errorf("%w: %q is not a valid subscriber name", ErrUnknownSubscriber, subscriber)
	}
	return pgx.Identifier{subscriber, "dead_letters"}.Sanitize(), nil
}

func dlError(subscriber string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") { // undefined_table, invalid_schema_name
		return fmt.Errorf("%w: %s (no dead-letter table)", ErrUnknownSubscriber, subscriber)
	}
	return fmt.Errorf("dead letters of %s: %w", subscriber, err)
}

// redriveLoop processes requested redrives every RedriveInterval until
// runCtx is done; a redrive in progress finishes on workCtx.
func (s *Subscriber) redriveLoop(runCtx, workCtx context.Context) {
	t := time.NewTicker(s.cfg.RedriveInterval)
	defer t.Stop()
	for {
		for runCtx.Err() == nil {
			more, err := s.redriveOne(workCtx)
			if err != nil {
				s.log.Warn("redrive", "error", err)
				break
			}
			if !more {
				break
			}
		}
		select {
		case <-runCtx.Done():
			return
		case <-t.C:
		}
	}
}

// redriveOne claims one requested dead letter and processes it. It reports
// whether it found one.
func (s *Subscriber) redriveOne(ctx context.Context) (bool, error) {
	tx, err := s.cfg.Pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var (
		ev      Event
		headers []byte
		seq     int64
		tries   int64
	)
	err = tx.QueryRow(ctx, s.q.claimRedrive).Scan(&ev.DeadLetterID, &ev.Subject, &headers, &ev.Data, &seq, &tries)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, tx.Commit(ctx)
	}
	if err != nil {
		return false, fmt.Errorf("claim dead letter: %w", err)
	}
	ev.StreamSeq, ev.NumDelivered = uint64(seq), uint64(tries)+1
	log := s.log.With("dead_letter_id", ev.DeadLetterID, "subject", ev.Subject)

	out, perr := s.redriveIn(ctx, tx, &ev, headers)
	if perr == nil {
		if _, err := tx.Exec(ctx, s.q.markRedriven, ev.DeadLetterID, s.cfg.Now().UTC()); err != nil {
			return false, fmt.Errorf("mark redriven: %w", err)
		}
		if err := tx.Commit(ctx); err != nil {
			return false, fmt.Errorf("commit redrive: %w", err)
		}
		s.m.count(out)
		s.m.countRedriven()
		log.Info("redriven", "provider", ev.Provider, "event_id", ev.EventID, "outcome", out)
		return true, nil
	}
	_ = tx.Rollback(ctx)
	s.m.countFailed()
	if isInfra(perr) {
		return false, perr // left requested; retried on the next round
	}
	log.Error("redrive failed; request cleared", "provider", ev.Provider, "event_id", ev.EventID, "error", perr)
	if _, err := s.cfg.Pool.Exec(ctx, s.q.markRedriveFailed, ev.DeadLetterID, truncate(perr.Error(), maxErrorLen)); err != nil {
		return false, fmt.Errorf("record failed redrive: %w", err)
	}
	return true, nil
}

func (s *Subscriber) redriveIn(ctx context.Context, tx pgx.Tx, ev *Event, headers []byte) (outcome, error) {
	var h map[string][]string
	if err := json.Unmarshal(headers, &h); err != nil {
		return 0, fmt.Errorf("headers: %w", err)
	}
	ev.Header = nats.Header(h)
	md, err := schema.ParseMetadata(ev.Header)
	if err != nil {
		return 0, fmt.Errorf("invalid hub headers: %w", err)
	}
	ev.Metadata = md
	handler := s.handler(ev.Subject)
	if handler == nil {
		return 0, fmt.Errorf("no handler for subject %s", ev.Subject)
	}
	return s.processIn(ctx, tx, *ev, handler)
}
