package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"regexp"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// ErrPending is returned by Check when migrations are not applied yet.
var ErrPending = errors.New("migrations pending")

// Migrator applies one embedded set of migrations to one database.
type Migrator struct {
	db       *sql.DB
	provider *goose.Provider
	// precondition, when set, is checked before the first operation that
	// reads or changes the database; passed is set once it has held.
	precondition func(ctx context.Context, db *sql.DB) error
	passed       atomic.Bool
}

// Option configures a Migrator (New).
type Option func(*Migrator)

// WithPrecondition makes Up, Down, Status and Check fail with f's error
// until f has returned nil once (it is not asked again afterwards): for a
// set of migrations that must refuse a database it cannot migrate, such as
// one created by an earlier, incompatible set. f reads the database through
// db, the Migrator's own handle.
func WithPrecondition(f func(ctx context.Context, db *sql.DB) error) Option {
	return func(m *Migrator) { m.precondition = f }
}

// checkPrecondition runs the precondition, if any and not yet passed.
func (m *Migrator) checkPrecondition(ctx context.Context) error {
	if m.precondition == nil || m.passed.Load() {
		return nil
	}
	if err := m.precondition(ctx, m.db); err != nil {
		return err
	}
	m.passed.Store(true)
	return nil
}

// Result is the outcome of applying one migration.
type Result struct {
	Version   int64
	Name      string
	Direction string // "up" or "down"
	Duration  string
}

// Status is the state of one migration.
type Status struct {
	Version int64
	Name    string
	Applied bool
	At      string // when it was applied, RFC 3339; empty if pending
}

// Dir returns the directory dir of fsys: the one way a package exposes
// the migrations it embeds, as an fs.FS with the *.sql files at its root
// (what New, ForSchema and subscriber.Config.Migrations take):
//
//	//go:embed migrations/*.sql
//	var migrationsFS embed.FS
//
//	var Migrations = migrate.Dir(migrationsFS, "migrations")
//
// It panics if dir is not a valid path (a programming error).
func Dir(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(fmt.Sprintf("migrate: %v", err))
	}
	return sub
}

// ForSchema returns a Migrator for a set of migrations that owns one
// Postgres schema, such as a subscriber's. The schema is created if
// missing, and its version table lives inside it
// ("<schema>.schema_version"), so each owner migrates independently.
func ForSchema(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS, schema string) (*Migrator, error) {
	return ForSchemaTable(ctx, pool, fsys, schema, "schema_version")
}

// ForSchemaTable is ForSchema with the version table's name chosen by the
// caller, for several migration sets in one schema (a library's tables
// and a service's own).
func ForSchemaTable(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS, schema, versionTable string) (*Migrator, error) {
	if !identifier.MatchString(schema) || !identifier.MatchString(versionTable) {
		return nil, fmt.Errorf("migrate: %q.%q: schema and table must be lower-case identifiers", schema, versionTable)
	}
	if err := createSchema(ctx, pool, schema); err != nil {
		return nil, err
	}
	// Unquoted: goose looks "schema.table" up in pg_tables verbatim, so a
	// quoted name is never found and the second run fails with "relation
	// already exists". The identifier check above makes quoting needless.
	return New(pool, fsys, schema+"."+versionTable, schema+"."+versionTable)
}

// identifier matches the names ForSchema accepts: plain lower-case
// Postgres identifiers, the same quoted or not.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// New returns a Migrator for the *.sql files at the root of fsys, recording
// versions in versionTable. lockName names the advisory lock that
// serialises concurrent runs of this set.
func New(pool *pgxpool.Pool, fsys fs.FS, versionTable, lockName string, opts ...Option) (*Migrator, error) {
	// Replicas starting together wait for the lock in 1 s steps (goose's
	// default is 5 s), for up to 5 minutes.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID(lockName)), lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithTableName(versionTable),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	m := &Migrator{db: db, provider: p}
	for _, o := range opts {
		o(m)
	}
	return m, nil
}

// Close releases the Migrator's database handle (not the pool).
func (m *Migrator) Close() error { return m.db.Close() }

// Up applies every pending migration. Applying none is not an error.
func (m *Migrator) Up(ctx context.Context) ([]Result, error) {
	if err := m.checkPrecondition(ctx); err != nil {
		return nil, err
	}
	rs, err := m.provider.Up(ctx)
	if err != nil {
		return results(rs), fmt.Errorf("migrate up: %w", err)
	}
	return results(rs), nil
}

// Down rolls back the most recently applied migration.
func (m *Migrator) Down(ctx context.Context) (Result, error) {
	if err := m.checkPrecondition(ctx); err != nil {
		return Result{}, err
	}
	r, err := m.provider.Down(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("migrate down: %w", err)
	}
	return results([]*goose.MigrationResult{r})[0], nil
}

// Status lists every known migration and whether it is applied.
func (m *Migrator) Status(ctx context.Context) ([]Status, error) {
	if err := m.checkPrecondition(ctx); err != nil {
		return nil, err
	}
	ss, err := m.provider.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migration status: %w", err)
	}
	out := make([]Status, 0, len(ss))
	for _, s := range ss {
		st := Status{Version: s.Source.Version, Name: baseName(s.Source.Path), Applied: s.State == goose.StateApplied}
		if st.Applied {
			st.At = s.AppliedAt.UTC().Format("2006-01-02T15:04:05Z07:00")
		}
		out = append(out, st)
	}
	return out, nil
}

// Check returns nil when every migration is applied, an error wrapping
// ErrPending (with the current and target versions) when some are not, or
// the error that prevented the check.
func (m *Migrator) Check(ctx context.Context) error {
	if err := m.checkPrecondition(ctx); err != nil {
		return err
	}
	current, target, err := m.provider.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("migration versions: %w", err)
	}
	if current < target {
		return fmt.Errorf("%w: database at version %d, binary needs %d", ErrPending, current, target)
	}
	return nil
}

func results(rs []*goose.MigrationResult) []Result {
	out := make([]Result, 0, len(rs))
	for _, r := range rs {
		if r == nil || r.Source == nil {
			continue
		}
		out = append(out, Result{Version: r.Source.Version, Name: baseName(r.Source.Path), Direction: r.Direction, Duration: r.Duration.String()})
	}
	return out
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// lockID derives a stable advisory lock id from a name, so each migration
// set has its own lock.
func lockID(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("hookhub-migrations:" + name))
	return int64(h.Sum64() >> 1)
}

// createSchema creates schema if it does not exist. Concurrent CREATE SCHEMA
// IF NOT EXISTS can still collide on the catalog's unique index, so it runs
// under a transaction-scoped advisory lock.
func createSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockID("schema:"+schema)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
		return err
	})
	if err != nil {
		return fmt.Errorf("create schema %s: %w", schema, err)
	}
	return nil
}
