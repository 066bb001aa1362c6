package migrations_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/migrate"
	"github.com/hookhub/hookhub/migrations"
)

// statements run a release's own SQL, copied verbatim from its hub/store,
// on pool; they fail the test if the schema refuses any of them.
type statements func(t *testing.T, ctx context.Context, pool *pgxpool.Pool)

// sessions00003 are the console's statements of the release that brought
// migration 00003 (hub/store/sessions.go): open, read, touch, end, purge.
func sessions00003(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO console_sessions (id_hash, csrf, role, kind, name, cap_key, created_at, last_seen, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			[]byte{7}, "csrf", "admin", "token", "token 1a2b3c4d", "token:admin", "now()", "now()", "infinity"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE id_hash IN (
			SELECT id_hash FROM console_sessions WHERE cap_key = $1 ORDER BY created_at DESC, id_hash OFFSET $2 LIMIT $3)`,
			"token:admin", 8, 1000)
		return err
	})
	require.NoError(t, err)
	var csrf, role, kind, name, capKey string
	var created, lastSeen, expires any
	require.NoError(t, pool.QueryRow(ctx, `SELECT csrf, role, kind, name, cap_key, created_at, last_seen, expires_at
		FROM console_sessions WHERE id_hash = $1 AND expires_at > $2`, []byte{7}, "now()").
		Scan(&csrf, &role, &kind, &name, &capKey, &created, &lastSeen, &expires))
	_, err = pool.Exec(ctx, `UPDATE console_sessions SET last_seen = $2, expires_at = $3 WHERE id_hash = $1 AND expires_at > $2`, []byte{7}, "now()", "infinity")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `DELETE FROM console_sessions WHERE id_hash = $1`, []byte{7})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `DELETE FROM console_sessions WHERE id_hash IN (
		SELECT id_hash FROM console_sessions WHERE expires_at <= $1 LIMIT $2)`, "now()", 1000)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `DELETE FROM console_oidc_logins WHERE state_hash IN (
		SELECT state_hash FROM console_oidc_logins WHERE expires_at <= $1 LIMIT $2)`, "now()", 1000)
	require.NoError(t, err)
}

// audit00004 are the audit trail's statements of the release that brought
// migration 00004 (hub/store/audit.go): record an entry, finish it.
func audit00004(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	var id int64
	require.NoError(t, pool.QueryRow(ctx, `
INSERT INTO audit_log (at, actor_kind, actor_name, actor_role, via, action, target, params)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb) RETURNING id`,
		"now()", "cli", "alice@ops-1", "admin", "cli", "replay", "sub_a", `{"since":"1h"}`).Scan(&id))
	tag, err := pool.Exec(ctx, `
UPDATE audit_log SET outcome = $2, result = $3::jsonb, error = NULLIF($4, ''), duration_ms = $5, finished_at = now()
WHERE id = $1`, id, "ok", `{"matched":3}`, "", 12)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
}

// columns describes every column of the hub's schema, "table.column" to
// its type, nullability and default.
func columns(t *testing.T, ctx context.Context, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT table_name || '.' || column_name, data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
		FROM information_schema.columns WHERE table_schema = current_schema() AND table_name <> $1`, migrations.HubVersionTable)
	require.NoError(t, err)
	out := map[string]string{}
	var col, def string
	_, err = pgx.ForEachRow(rows, []any{&col, &def}, func() error { out[col] = def; return nil })
	require.NoError(t, err)
	return out
}

// upTo returns a Migrator of the hub's migrations up to version v, which
// it has applied.
func upTo(t *testing.T, ctx context.Context, pool *pgxpool.Pool, v int64) *migrate.Migrator {
	t.Helper()
	files := fstest.MapFS{}
	names, err := fs.Glob(migrations.Files(), "*.sql")
	require.NoError(t, err)
	for _, n := range names {
		if n <= fmt.Sprintf("%05d_~", v) {
			b, err := fs.ReadFile(migrations.Files(), n)
			require.NoError(t, err)
			files[n] = &fstest.MapFile{Data: b, Mode: 0o444}
		}
	}
	m, err := migrate.New(pool, files, migrations.HubVersionTable, "hub")
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	_, err = m.Up(ctx)
	require.NoError(t, err)
	return m
}

// rollingCase is the rolling deploy across one migration.
type rollingCase struct {
	version int64
	// added are the tables (or "table.column") the migration adds, kept
	// the tables its Down keeps, changed the columns it changes in a way
	// the previous release's statements still write.
	added, kept, changed []string
	// old are the previous release's statements, new those of the release
	// that brought the migration (nil: none touch what it changes).
	old, new statements
}

// rollingCases cover every migration after v0.1.0's schema
// (TestEveryMigrationIsDocumentedAndRollingTested).
var rollingCases = []rollingCase{
	{version: 2, added: []string{"webhook_events.entities", "webhook_event_entities", "webhook_event_status.entities"}},
	{version: 3, added: []string{"console_sessions", "console_oidc_logins"}, new: sessions00003},
	{version: 4, added: []string{"audit_log"}, kept: []string{"audit_log"}, old: sessions00003, new: audit00004},
	{version: 5, added: []string{"audit_log.heartbeat_at"}, kept: []string{"audit_log"},
		changed: []string{"audit_log.params", "audit_log.result"}, old: audit00004},
	{version: 6, added: []string{"console_sessions.ref", "console_sessions.token_sum", "console_sessions.identity"},
		old: sessions00003},
}

// A rolling deploy across each migration (docs/migrations.md): the hubs of
// the previous release go on running their own statements on the migrated
// schema (every column they had is as it was), the hubs of the release that
// brought it run theirs on it, and refuse to start on the schema before it
// (the migration is pending) instead of failing on a missing table. Rolled
// back under the old hubs (an aborted deploy), the schema is the previous
// one again, apart from what the migration's Down keeps on purpose, and the
// old statements still run.
func TestRollingDeployAcrossMigrations(t *testing.T) {
	for _, tc := range rollingCases {
		t.Run(migrationName(t, tc.version), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := emptyPool(t)
			all := hubMigrator(t, pool)
			in := func(col string, list []string) bool {
				for _, p := range list {
					if col == p || strings.HasPrefix(col, p+".") {
						return true
					}
				}
				return false
			}
			run := func(s statements) {
				if s != nil {
					s(t, ctx, pool)
				}
			}

			upTo(t, ctx, pool, tc.version-1)
			require.ErrorIs(t, all.Check(ctx), migrate.ErrPending, "a new hub refuses the schema before it")
			run(tc.old)
			before := columns(t, ctx, pool)

			m := upTo(t, ctx, pool, tc.version)
			after := columns(t, ctx, pool)
			for col, def := range before {
				if !in(col, tc.changed) {
					require.Equal(t, def, after[col], "%s: the previous release's column changed", col)
				}
			}
			for col := range after {
				_, had := before[col]
				require.True(t, had || in(col, tc.added), "%s: added but not listed", col)
			}
			run(tc.old)
			run(tc.new)

			_, err := m.Down(ctx)
			require.NoError(t, err)
			back := columns(t, ctx, pool)
			for col, def := range before {
				if !in(col, tc.changed) && !in(col, tc.kept) {
					require.Equal(t, def, back[col], "%s: not restored by Down", col)
				}
			}
			for col := range back {
				_, had := before[col]
				require.True(t, had || in(col, tc.kept), "%s: left by Down", col)
			}
			run(tc.old)
		})
	}
}

// migrationName is the file name of migration version v.
func migrationName(t *testing.T, v int64) string {
	t.Helper()
	names, err := fs.Glob(migrations.Files(), fmt.Sprintf("%05d_*.sql", v))
	require.NoError(t, err)
	require.Len(t, names, 1, "migration %d", v)
	return names[0]
}

// Every migration has its row in docs/migrations.md's table and, after
// v0.1.0's schema, its rolling-deploy case (rollingCases).
func TestEveryMigrationIsDocumentedAndRollingTested(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "migrations.md"))
	require.NoError(t, err)
	tested := map[int64]bool{}
	for _, c := range rollingCases {
		tested[c.version] = true
	}
	names, err := fs.Glob(migrations.Files(), "*.sql")
	require.NoError(t, err)
	for _, n := range names {
		require.True(t, strings.Contains(string(doc), "\n| `"+n+"` |"), "docs/migrations.md's table has no row for %s", n)
		v, err := strconv.ParseInt(n[:5], 10, 64)
		require.NoError(t, err, n)
		require.True(t, v == 1 || tested[v], "%s has no rolling-deploy case: add it to rollingCases", n)
	}
}
