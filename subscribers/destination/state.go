package destination

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookhub/hookhub/internal/migrate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Postgres: each destination keeps its tables (attempts, destination_state)
// in its subscriber's schema, named after the destination. Every function
// here takes the destination's name and refuses one that cannot name a
// subscriber (subscriber.ValidName) with ErrUnknownDestination.

//go:embed migrations/*.sql
var migrationsFS embed.FS

// schemaPlaceholder is replaced by the quoted schema name in the migrations.
const schemaPlaceholder = "__SCHEMA__"

// Migrations returns the goose migrations of the destination name's tables,
// for subscriber.Config.Migrations (or subscriber.Migrate): the embedded SQL
// with the schema name filled in, since one set serves every destination
// and each lives in its own schema. The name is quoted, so any string is
// safe here; subscriber.Migrate refuses one that is not ValidName.
func Migrations(name string) fs.FS {
	quoted := pgx.Identifier{name}.Sanitize()
	src := migrate.Dir(migrationsFS, "migrations")
	out := fstest.MapFS{}
	entries, err := fs.ReadDir(src, ".")
	if err != nil { // embedded: cannot fail
		panic(fmt.Sprintf("destination: migrations: %v", err))
	}
	for _, e := range entries {
		b, err := fs.ReadFile(src, e.Name())
		if err != nil {
			panic(fmt.Sprintf("destination: migrations: %v", err))
		}
		out[e.Name()] = &fstest.MapFile{Data: []byte(strings.ReplaceAll(string(b), schemaPlaceholder, quoted)), Mode: 0o444}
	}
	return out
}

// DB is what the functions here read and write through: a *pgxpool.Pool,
// or the pgx.Tx of a handler (a successful attempt is recorded in the
// transaction that marks the event processed).
type DB = subscriber.DB

// ErrUnknownDestination is wrapped by the errors of functions given a name
// that is no destination's: no destination tables in its schema, or not a
// valid name.
var ErrUnknownDestination = errors.New("unknown destination")

// ErrInvalidState is wrapped by SetState's error for a State that is none
// of StateActive, StatePaused and StateDisabled.
var ErrInvalidState = errors.New("invalid destination state")

// table returns the quoted name of the destination's table.
func table(dest, name string) (string, error) {
	if !subscriber.ValidName(dest) {
		return "", fmt.Errorf("%w: %q is not a valid name", ErrUnknownDestination, dest)
	}
	return pgx.Identifier{dest, name}.Sanitize(), nil
}

// dbError wraps err from a statement on dest's tables: a missing table or
// schema is ErrUnknownDestination.
func dbError(op, dest string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") { // undefined_table, invalid_schema_name
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

// states lists every State, in the order metrics show them.
func states() [3]State { return [3]State{StateActive, StatePaused, StateDisabled} }

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
	t, err := table(name, "destination_state")
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
		return false, dbError("set state", name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// GetState returns the destination's state and the reason of the change
// that led to it: one primary-key read, cheap enough to poll.
func GetState(ctx context.Context, db DB, name string) (State, string, error) {
	t, err := table(name, "destination_state")
	if err != nil {
		return "", "", err
	}
	var s, reason string
	err = db.QueryRow(ctx, `SELECT state, reason FROM `+t+` WHERE singleton`).Scan(&s, &reason)
	if errors.Is(err, pgx.ErrNoRows) { // the migration inserts the row; never deleted
		return StateActive, "", nil
	}
	if err != nil {
		return "", "", dbError("get state", name, err)
	}
	return State(s), reason, nil
}

// Register records what the running process delivers for the destination
// name (its url and subject filters; never secrets), keeping its state. The
// runner calls it at start and on reload.
func Register(ctx context.Context, db DB, name, url string, subjects []string) error {
	t, err := table(name, "destination_state")
	if err != nil {
		return err
	}
	subs := make([]string, len(subjects))
	for i, s := range subjects {
		subs[i] = subscriber.SanitizeText(s, 0)
	}
	_, err = db.Exec(ctx, `INSERT INTO `+t+` AS d (url, subjects, updated_at) VALUES ($1, $2, NOW())
		ON CONFLICT (singleton) DO UPDATE SET url = EXCLUDED.url, subjects = EXCLUDED.subjects, updated_at = EXCLUDED.updated_at`,
		subscriber.SanitizeText(url, 0), subs)
	if err != nil {
		return dbError("register", name, err)
	}
	return nil
}

// ErrNotDestination says a destination's name is taken by a subscriber
// that is not a destination (say, credits), or by a schema holding other
// tables (the hub's public): its consumer and schema would be shared, and
// the destination's documented removal (DROP SCHEMA … CASCADE) would drop
// them.
var ErrNotDestination = errors.New("the name belongs to a subscriber that is not a destination")

// CheckName refuses a reserved name (ReservedNames, pg_*) and a
// destination name that something else already uses: a schema holding
// tables (a subscriber's, the hub's) but no destination_state.
func CheckName(ctx context.Context, db DB, name string) error {
	if why, ok := ReservedNames[name]; ok || !subscriber.ValidName(name) {
		return fmt.Errorf("destination %s: %w (%s)", name, ErrNotDestination, cmp.Or(why, "not a valid name"))
	}
	var other bool
	err := db.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = $1)
		   AND NOT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'destination_state')`, name).Scan(&other)
	if err != nil {
		return fmt.Errorf("destination %s: check the name: %w", name, err)
	}
	if other {
		return fmt.Errorf("destination %s: %w", name, ErrNotDestination)
	}
	return nil
}

// Names lists the destinations the database holds (schemas with a
// destination_state and an attempts table, whose name can name a
// subscriber), sorted: one catalog query, no error for the schemas of
// other subscribers.
func Names(ctx context.Context, db DB) ([]string, error) {
	rows, err := db.Query(ctx, `
		SELECT s.table_schema::text FROM information_schema.tables s
		JOIN information_schema.tables a ON a.table_schema = s.table_schema AND a.table_name = 'attempts'
		WHERE s.table_name = 'destination_state' ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("list destinations: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list destinations: %w", err)
	}
	return slices.DeleteFunc(names, func(n string) bool { return !subscriber.ValidName(n) }), nil
}
