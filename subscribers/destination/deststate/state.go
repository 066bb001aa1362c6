// Package deststate reads and writes a destination's tables (state,
// attempt log, parked events' keys): the runtime (subscribers/destination,
// their owner) and hub/ops, which must not import the runtime, share it.
// A name that cannot name a subscriber is ErrUnknownDestination.
package deststate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// DB is a *pgxpool.Pool, or the pgx.Tx of a handler (a successful
// attempt is recorded in the transaction that marks the event processed).
type DB = subscriber.DB

// ErrUnknownDestination is wrapped by the errors of functions given a name
// that is no destination's: no destination tables in its schema, or not a
// valid name.
var ErrUnknownDestination = errors.New("unknown destination")

// ErrInvalidState is wrapped by SetState's error for a State that is none
// of StateActive, StatePaused and StateDisabled.
var ErrInvalidState = errors.New("invalid destination state")

// Table returns the quoted name of the destination's table.
func Table(dest, name string) (string, error) {
	if !subscriber.ValidName(dest) {
		return "", fmt.Errorf("%w: %q is not a valid name", ErrUnknownDestination, dest)
	}
	return pgx.Identifier{dest, name}.Sanitize(), nil
}

// DBError wraps err from a statement on dest's tables: a missing table or
// schema is ErrUnknownDestination.
func DBError(op, dest string, err error) error {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && (pgErr.Code == "42P01" || pgErr.Code == "3F000") { // undefined_table, invalid_schema_name
		return fmt.Errorf("%s: %w: %s (no destination tables)", op, ErrUnknownDestination, dest)
	}
	return fmt.Errorf("%s of %s: %w", op, dest, err)
}

// State is whether a destination delivers.
type State string

const (
	// StateActive: events are delivered.
	StateActive State = "active"
	// StatePaused: an operator paused it; events wait in the stream.
	StatePaused State = "paused"
	// StateDisabled: its endpoint answered 410 Gone; events wait in the
	// stream until an operator resumes it.
	StateDisabled State = "disabled"
)

// Valid reports whether s is StateActive, StatePaused or StateDisabled.
func (s State) Valid() bool {
	return s == StateActive || s == StatePaused || s == StateDisabled
}

// maxReasonBytes caps a state's reason.
const maxReasonBytes = 256

// SetState sets the destination's state, with reason (sanitized, at most
// 256 bytes) saying why, and reports whether it changed: setting the state
// it is already in changes nothing (the reason and changed_at of the
// change that led there are kept).
func SetState(ctx context.Context, db DB, name string, s State, reason string) (bool, error) {
	t, err := Table(name, "destination_state")
	if err != nil {
		return false, err
	}
	if !s.Valid() {
		return false, fmt.Errorf("set state of %s: %w: %q", name, ErrInvalidState, s)
	}
	tag, err := db.Exec(ctx, `INSERT INTO `+t+` AS d (state, reason, changed_at) VALUES ($1, $2, NOW())
		ON CONFLICT (singleton) DO UPDATE SET state = EXCLUDED.state, reason = EXCLUDED.reason, changed_at = EXCLUDED.changed_at
		WHERE d.state <> EXCLUDED.state`, string(s), subscriber.SanitizeText(reason, maxReasonBytes))
	if err != nil {
		return false, DBError("set state", name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// RetryNow makes every parked event of the destination name due now (its
// running process sends them within ParkPollInterval, at its rate limit
// and concurrency; an ordered destination in order) and returns how many
// were waiting for a later time. `hub destinations retry-now`, through
// hub/ops, which audits it.
func RetryNow(ctx context.Context, db DB, name string) (int64, error) {
	t, err := Table(name, "parked")
	if err != nil {
		return 0, err
	}
	tag, err := db.Exec(ctx, `UPDATE `+t+` SET due_at = NOW() WHERE due_at > NOW()`)
	if err != nil {
		return 0, DBError("retry now", name, err)
	}
	return tag.RowsAffected(), nil
}

// Names lists the destinations the database holds (schemas with a
// destination_state and an attempts table, whose name can name a
// subscriber), sorted: one catalog query, no error for the schemas of
// other subscribers.
func Names(ctx context.Context, db DB) ([]string, error) {
	names, err := subscriber.SchemasWith(ctx, db, "destination_state", "attempts")
	if err != nil {
		return nil, fmt.Errorf("list destinations: %w", err)
	}
	return names, nil
}
