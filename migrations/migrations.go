package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookhub/hookhub/internal/migrate"
)

//go:embed *.sql
var hubFS embed.FS

// HubVersionTable is the table that records the hub's applied migrations.
const HubVersionTable = "hub_schema_version"

// ErrPreRelease is returned by the hub's Migrator (every operation) for a
// database created by the pre-release migrations, which v0.1.0 squashed
// into one (docs/migrations.md): it cannot be migrated, only recreated.
var ErrPreRelease = errors.New("this database was created by a pre-release hookhub; recreate it")

// Files returns the hub's migrations, the *.sql files at its root: for
// tests that apply them with others (a rolling-deploy test's next
// migration, hub/service).
func Files() fs.FS { return hubFS }

// Hub returns the Migrator for the hub's own tables, the *.sql files of
// this package. It refuses a pre-release database with ErrPreRelease.
func Hub(pool *pgxpool.Pool) (*migrate.Migrator, error) {
	return migrate.New(pool, hubFS, HubVersionTable, "hub", migrate.WithPrecondition(refusePreRelease))
}

// Up applies the hub's pending migrations on pool (Hub's Migrator) and
// returns those it applied.
func Up(ctx context.Context, pool *pgxpool.Pool) ([]migrate.Result, error) {
	m, err := Hub(pool)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.Up(ctx)
}

// preReleaseSQL finds the mark of the pre-release schema: the archive row's
// own publication columns (webhook_events.stream_seq), which the squashed
// schema never had, in a database whose version table exists. It also
// returns the highest version that table records.
const preReleaseSQL = `
SELECT EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'webhook_events' AND column_name = 'stream_seq'),
       to_regclass('` + HubVersionTable + `') IS NOT NULL`

// refusePreRelease returns ErrPreRelease, with the versions the database
// records, for a database the pre-release migrations created.
func refusePreRelease(ctx context.Context, db *sql.DB) error {
	var legacy, versioned bool
	if err := db.QueryRowContext(ctx, preReleaseSQL).Scan(&legacy, &versioned); err != nil {
		return fmt.Errorf("inspect the hub schema: %w", err)
	}
	if !legacy || !versioned {
		return nil
	}
	var top int64
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(max(version_id), 0) FROM `+HubVersionTable+` WHERE is_applied`).Scan(&top); err != nil {
		return fmt.Errorf("inspect the hub schema: %w", err)
	}
	return fmt.Errorf("%w (its %s records pre-release version %d; v0.1.0 squashed the migrations, docs/migrations.md)",
		ErrPreRelease, HubVersionTable, top)
}

// Settings the hub's migrations read from their connection (set them in
// the pool's runtime parameters, pgxpool.Config.ConnConfig.RuntimeParams).
const (
	// DropAuditParam, "on", makes the down migration of 00004 drop the
	// audit trail; without it the trail is kept (`hub migrate down
	// --drop-audit`).
	DropAuditParam = "hookhub.drop_audit"
)

// GrantRuntime gives role, the role the hub and the subscribers connect
// as, what they need at run time and no more on the audit trail
// (hookhub_grant_runtime, migrations/00005_audit_trail.sql): read and
// write the hub's tables, insert audit entries and finish running ones,
// own nothing. It runs as the owner of the tables (`hub migrate up` with
// --runtime-role), after the migrations, and may run again.
func GrantRuntime(ctx context.Context, pool *pgxpool.Pool, role string) error {
	if _, err := pool.Exec(ctx, `SELECT hookhub_grant_runtime($1)`, role); err != nil {
		return fmt.Errorf("grant the runtime role %q: %w", role, err)
	}
	return nil
}
