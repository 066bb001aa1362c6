package destination

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/internal/migrate"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
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

// DB is deststate.DB.
type DB = deststate.DB

// GetState returns the destination's state and the reason of the change
// that led to it: one primary-key read, cheap enough to poll.
func GetState(ctx context.Context, db DB, name string) (State, string, error) {
	t, err := deststate.Table(name, "destination_state")
	if err != nil {
		return "", "", err
	}
	var s, reason string
	err = db.QueryRow(ctx, `SELECT state, reason FROM `+t+` WHERE singleton`).Scan(&s, &reason)
	if errors.Is(err, pgx.ErrNoRows) { // the migration inserts the row; never deleted
		return StateActive, "", nil
	}
	if err != nil {
		return "", "", deststate.DBError("get state", name, err)
	}
	return State(s), reason, nil
}

// Register records what the running process delivers for the destination
// name (its url and subject filters; never secrets), keeping its state. The
// runner calls it at start and on reload.
func Register(ctx context.Context, db DB, name, url string, subjects []string) error {
	t, err := deststate.Table(name, "destination_state")
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
		return deststate.DBError("register", name, err)
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
