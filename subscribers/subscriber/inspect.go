package subscriber

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Inspection: what operators (the hub's `hub status`, `hub events show`,
// `hub replay`) read from the subscribers' tables. Those tables are the
// library's, so only the library reads them; every function takes the
// subscriber's name, which is its schema's.

// EventKey names an event: the hub's provider and event id.
type EventKey struct {
	Provider string
	EventID  string
}

// ProcessedMessage is the record of an event a subscriber handled.
type ProcessedMessage struct {
	EventKey
	Subject     string
	StreamSeq   uint64 // of the delivery that was processed; 0 if unknown
	ProcessedAt time.Time
	// Outcome is "processed", or "skipped_stale" when ApplyIfNewer found
	// the event older than what the subscriber had applied.
	Outcome string
	// DeadLetterID is the dead letter whose redrive processed the event;
	// 0 when a delivery did.
	DeadLetterID int64
}

// DeadLetterState is a dead letter without its message (headers and body):
// what became of it.
type DeadLetterState struct {
	ID int64
	EventKey
	Error              string
	Attempts           int
	CreatedAt          time.Time
	RedriveRequestedAt *time.Time
	RedrivenAt         *time.Time
}

// ListSubscribers lists the subscribers whose tables live in db: every
// schema with the library's processed_messages and dead_letters tables
// (Migrate creates them, in a schema named after the subscriber), sorted.
// A schema whose name cannot name a subscriber (ValidName) is not one.
func ListSubscribers(ctx context.Context, db DB) ([]string, error) {
	names, err := SchemasWith(ctx, db, "processed_messages", "dead_letters")
	if err != nil {
		return nil, fmt.Errorf("list subscribers: %w", err)
	}
	return names, nil
}

// SchemasWith lists the schemas in db that hold both a table named table
// and one named other, sorted, leaving out those whose name cannot name a
// subscriber (ValidName).
func SchemasWith(ctx context.Context, db DB, table, other string) ([]string, error) {
	rows, err := db.Query(ctx, `
		SELECT a.table_schema::text FROM information_schema.tables a
		JOIN information_schema.tables b ON b.table_schema = a.table_schema AND b.table_name = $2::text
		WHERE a.table_name = $1::text ORDER BY 1`, table, other)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(names, func(n string) bool { return !ValidName(n) }), nil
}

// CountWaitingDeadLetters counts the subscriber's dead letters not
// redriven yet (a redrive requested or not).
func CountWaitingDeadLetters(ctx context.Context, db DB, subscriber string) (int64, error) {
	table, err := deadLetterTable(subscriber)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := db.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE redriven_at IS NULL").Scan(&n); err != nil {
		return 0, dlError(subscriber, err)
	}
	return n, nil
}

// LastDeadLetterID returns the id of the subscriber's newest dead letter,
// 0 if it has none: dead letters with a larger id are written after the
// call.
func LastDeadLetterID(ctx context.Context, db DB, subscriber string) (int64, error) {
	table, err := deadLetterTable(subscriber)
	if err != nil {
		return 0, err
	}
	var id int64
	if err := db.QueryRow(ctx, "SELECT COALESCE(max(id), 0) FROM "+table).Scan(&id); err != nil {
		return 0, dlError(subscriber, err)
	}
	return id, nil
}

// keyArrays splits keys into the two arrays the queries unnest.
func keyArrays(keys []EventKey) ([]string, []string) {
	providers := make([]string, len(keys))
	ids := make([]string, len(keys))
	for i, k := range keys {
		providers[i], ids[i] = k.Provider, k.EventID
	}
	return providers, ids
}

// ProcessedMessages returns the subscriber's records of the events in
// keys it has handled (in no particular order; an event it has not handled
// has none). One query on the table's primary key, whatever the number of
// keys.
func ProcessedMessages(ctx context.Context, db DB, subscriber string, keys []EventKey) ([]ProcessedMessage, error) {
	if err := checkName(subscriber); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, nil
	}
	providers, ids := keyArrays(keys)
	rows, err := db.Query(ctx, `SELECT provider, event_id, subject, COALESCE(stream_seq, 0), processed_at, outcome, COALESCE(dead_letter_id, 0)
		FROM `+pgx.Identifier{subscriber, "processed_messages"}.Sanitize()+`
		WHERE subscriber = $1 AND (provider, event_id) IN (SELECT * FROM unnest($2::text[], $3::text[]))`, subscriber, providers, ids)
	if err != nil {
		return nil, processedError(subscriber, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ProcessedMessage, error) {
		var m ProcessedMessage
		var seq int64
		err := r.Scan(&m.Provider, &m.EventID, &m.Subject, &seq, &m.ProcessedAt, &m.Outcome, &m.DeadLetterID)
		m.StreamSeq = uint64(max(seq, 0))
		return m, err
	})
	if err != nil {
		return nil, processedError(subscriber, err)
	}
	return out, nil
}

// DeadLettersOf returns the subscriber's dead letters of the events in
// keys with an id above afterID (0: all of them), oldest first.
func DeadLettersOf(ctx context.Context, db DB, subscriber string, keys []EventKey, afterID int64) ([]DeadLetterState, error) {
	table, err := deadLetterTable(subscriber)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, nil
	}
	providers, ids := keyArrays(keys)
	rows, err := db.Query(ctx, `SELECT id, provider, event_id, error, attempts, created_at, redrive_requested_at, redriven_at
		FROM `+table+`
		WHERE subscriber = $1 AND id > $4 AND (provider, event_id) IN (SELECT * FROM unnest($2::text[], $3::text[]))
		ORDER BY id`, subscriber, providers, ids, afterID)
	if err != nil {
		return nil, dlError(subscriber, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadLetterState, error) {
		var d DeadLetterState
		err := r.Scan(&d.ID, &d.Provider, &d.EventID, &d.Error, &d.Attempts, &d.CreatedAt, &d.RedriveRequestedAt, &d.RedrivenAt)
		return d, err
	})
	if err != nil {
		return nil, dlError(subscriber, err)
	}
	return out, nil
}

func processedError(subscriber string, err error) error {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && (pgErr.Code == "42P01" || pgErr.Code == "3F000") { // undefined_table, invalid_schema_name
		return fmt.Errorf("%w: %s (no processed_messages table)", ErrUnknownSubscriber, subscriber)
	}
	return fmt.Errorf("processed messages of %s: %w", subscriber, err)
}

// checkName refuses what cannot name a subscriber, as deadLetterTable does.
func checkName(subscriber string) error {
	_, err := deadLetterTable(subscriber)
	return err
}
