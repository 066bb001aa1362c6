package subscriber

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/internal/startstop"
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
	// maxKeyLen bounds a provider or event id: they are indexed, and a
	// btree entry must fit in a third of a page. The hub's own are at most
	// 255 characters.
	maxKeyLen = 1 << 10
)

// deadLetter stores the message as a dead letter and terminates it. Every
// text is sanitized (SanitizeText) and the headers too (storableHeaders);
// the body is stored exactly. If Postgres still refuses the row for its
// values (SQLSTATE class 22, 23 or 54: a server encoding other than UTF-8,
// a constraint an operator added), the message is stored bare: no
// headers, ASCII text, the exact body. If it cannot be stored at all, the
// message is redelivered later and reported as stuck (Healthy, the
// stuck_messages gauge) until it is.
func (s *Subscriber) deadLetter(msg jetstream.Msg, ev Event, cause error) {
	log := s.log.With("subject", ev.Subject, "provider", ev.Provider, "event_id", ev.EventID, "stream_seq", ev.StreamSeq, "attempt", ev.NumDelivered)
	headers, changed := storableHeaders(ev.Header)
	if changed {
		log.Warn("headers hold NUL bytes or invalid UTF-8: the dead letter keeps a sanitized copy")
	}
	data := ev.Data
	if data == nil {
		data = []byte{}
	}
	causeText := SanitizeText(cause.Error(), maxErrorLen)
	attempts := int64(min(ev.NumDelivered, math.MaxInt32))
	now := s.cfg.Now().UTC()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var id int64
	err := s.cfg.Pool.QueryRow(ctx, s.q.insertDeadLetter, s.cfg.Name, SanitizeText(ev.Provider, maxKeyLen), SanitizeText(ev.EventID, maxKeyLen),
		SanitizeText(ev.Subject, 0), int64(ev.StreamSeq), headers, data, causeText, attempts, now).Scan(&id)
	if err != nil && isDataError(err) {
		s.m.countDeadLetterError()
		log.Error("Postgres refused the dead letter; storing it bare (no headers, ASCII text, exact body)", "error", err, "cause", causeText)
		bare := asciiText(fmt.Sprintf("stored without headers: Postgres refused the dead letter (%v); %s %q, %s %q; error: %s",
			err, schema.HeaderMsgID, ev.Header.Get(schema.HeaderMsgID), schema.HeaderEventID, ev.Header.Get(schema.HeaderEventID), causeText), maxErrorLen)
		err = s.cfg.Pool.QueryRow(ctx, s.q.insertBareDeadLetter, s.cfg.Name, asciiText(ev.Subject, maxKeyLen), int64(ev.StreamSeq), data, bare, attempts, now).Scan(&id)
	}
	if err != nil {
		s.m.countDeadLetterError()
		s.deadLetterFailed(ev.StreamSeq, err)
		delay := s.cfg.backoff(ev.NumDelivered)
		log.Error("cannot store dead letter; will retry the message", "error", err, "cause", causeText, "retry_in", delay)
		s.nak(msg, delay, log)
		return
	}
	s.settled(ev.StreamSeq)
	s.m.countDead()
	log.Error("dead-lettered", "dead_letter_id", id, "error", causeText)
	reason := strings.Join(strings.Fields(fmt.Sprintf("dead letter %d: %s", id, causeText)), " ")
	if err := msg.TermWithReason(SanitizeText(reason, maxTermReasonLen)); err != nil {
		log.Warn("term failed; the redelivery will fail and be dead-lettered again", "error", err)
	}
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
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && (pgErr.Code == "42P01" || pgErr.Code == "3F000") { // undefined_table, invalid_schema_name
		return fmt.Errorf("%w: %s (no dead-letter table)", ErrUnknownSubscriber, subscriber)
	}
	return fmt.Errorf("dead letters of %s: %w", subscriber, err)
}

// redriveLoop processes requested redrives every RedriveInterval until
// runCtx is done; a redrive in progress finishes on workCtx. It also
// forgets stuck messages gone for good (pruneStuck).
func (s *Subscriber) redriveLoop(runCtx, workCtx context.Context) {
	startstop.Poll(runCtx, s.cfg.RedriveInterval, func() (bool, error) { return s.redriveOne(workCtx) },
		func(err error) { s.log.Warn("redrive", "error", err) }, s.pruneStuck)
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
	if _, ok := errors.AsType[*unsettledError](perr); ok {
		s.m.countCrashLoop()
		// A later request starts counting afresh.
		if _, err := s.cfg.Pool.Exec(ctx, s.q.clearAttempts, ev.Provider, ev.EventID); err != nil {
			return false, fmt.Errorf("clear handler call count: %w", err)
		}
	} else {
		s.m.countFailed()
	}
	if isInfra(perr) {
		return false, perr // left requested; retried on the next round
	}
	text := SanitizeText(perr.Error(), maxErrorLen)
	log.Error("redrive failed; request cleared", "provider", ev.Provider, "event_id", ev.EventID, "error", text)
	_, err = s.cfg.Pool.Exec(ctx, s.q.markRedriveFailed, ev.DeadLetterID, text)
	if err != nil && isDataError(err) {
		_, err = s.cfg.Pool.Exec(ctx, s.q.markRedriveFailed, ev.DeadLetterID, asciiText(text, maxErrorLen))
	}
	if err != nil {
		return false, fmt.Errorf("record failed redrive: %w", err)
	}
	return true, nil
}

// redriveIn processes a claimed dead letter in tx, through the same path
// as a delivery. Every handler call of a redrive is counted in
// handler_attempts: a redrive that kills the process is given up (its
// request cleared) once crashLimit calls never returned, instead of being
// claimed again at every start.
func (s *Subscriber) redriveIn(ctx context.Context, tx pgx.Tx, ev *Event, headers []byte) (outcome, error) {
	var h map[string][]string
	if err := json.Unmarshal(headers, &h); err != nil {
		return 0, fmt.Errorf("headers: %w", err)
	}
	ev.Header = nats.Header(h)
	md, err := schema.ParseMetadata(ev.Header)
	if err == nil {
		err = storableKey(md)
	}
	if err != nil {
		return 0, fmt.Errorf("invalid hub headers: %w", err)
	}
	ev.Metadata = md
	r, ok := s.route(ev.Subject)
	handler, effect := r.h, r.fx
	if !ok {
		return 0, fmt.Errorf("no handler for subject %s", ev.Subject)
	}
	unfinished, tracked, err := s.startAttempt(ctx, *ev, false)
	if err != nil {
		return 0, err
	}
	if tracked && unfinished >= s.crashLimit() {
		return 0, &unsettledError{delivered: ev.NumDelivered, unfinished: unfinished}
	}
	var out outcome
	if effect != nil {
		out, err = s.redriveEffect(ctx, tx, *ev, effect, tracked)
	} else {
		out, err = s.processIn(ctx, tx, *ev, handler, tracked)
	}
	if err != nil && tracked {
		s.finishAttempt(ctx, *ev)
	}
	return out, err
}
