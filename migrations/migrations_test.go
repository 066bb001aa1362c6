package migrations_test

import (
	"context"
	"io/fs"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/internal/migrate"
	"github.com/hookhub/hookhub/migrations"
)

func emptyPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return hubtest.NewPool(t, hubtest.DatabaseURL(t))
}

// hubMigrator is the hub's Migrator on pool, closed when the test ends.
func hubMigrator(t *testing.T, pool *pgxpool.Pool) *migrate.Migrator {
	t.Helper()
	m, err := migrations.Hub(pool)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// The hub's migrations (v0.1.0's squashed schema and those after it):
// applied, checked, rolled back and
// applied again on an empty database.
func TestHubSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := emptyPool(t)
	m := hubMigrator(t, pool)
	require.ErrorIs(t, m.Check(ctx), migrate.ErrPending)
	files, err := fs.Glob(migrations.Files(), "*.sql")
	require.NoError(t, err)
	rs, err := m.Up(ctx)
	require.NoError(t, err)
	require.Len(t, rs, len(files))
	require.Equal(t, "00001_schema.sql", rs[0].Name)
	require.Equal(t, "00002_entities.sql", rs[1].Name)
	require.NoError(t, m.Check(ctx))
	ss, err := m.Status(ctx)
	require.NoError(t, err)
	require.Len(t, ss, len(files))
	for _, st := range ss {
		require.True(t, st.Applied)
	}

	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_event_status WHERE entities IS NOT NULL`).Scan(&n))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_event_entities`).Scan(&n))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_event_status`).Scan(&n))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM console_sessions`).Scan(&n))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_log`).Scan(&n))
	for applied := len(files) - 1; applied >= 0; applied-- { // every migration down, newest first
		_, err = m.Down(ctx)
		require.NoError(t, err)
		if applied == 1 {
			// 00002 down: the view as 00001 made it, without entities.
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns
				WHERE table_schema = current_schema() AND column_name = 'entities'`).Scan(&n))
			require.Zero(t, n)
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_event_status`).Scan(&n))
		}
	}
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()
		AND tablename IN ('webhook_events', 'processed_webhook_events', 'backfill_checkpoints', 'console_sessions', 'console_oidc_logins')`).Scan(&n))
	require.Zero(t, n)
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_log`).Scan(&n), "the audit trail is kept")
	_, err = m.Up(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Check(ctx))
}

// Rolling every migration back keeps the audit trail, its rows and its
// trigger, and applying them again finds it as it was; only a rollback
// asked to drop it (`hub migrate down --drop-audit`) does.
func TestDownKeepsAuditTrail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := hubtest.DatabaseURL(t)
	pool := hubtest.NewPool(t, url)
	m := hubMigrator(t, pool)
	_, err := m.Up(ctx)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO audit_log (at, actor_kind, actor_name, actor_role, via, action, params)
		VALUES (now(), 'cli', 'alice@ops-1', 'admin', 'cli', 'purge', '{"older_than":"720h"}')`)
	require.NoError(t, err)
	downAll := func(m *migrate.Migrator) {
		for {
			ss, err := m.Status(ctx)
			require.NoError(t, err)
			if !ss[0].Applied {
				return
			}
			_, err = m.Down(ctx)
			require.NoError(t, err)
		}
	}
	downAll(m)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE actor_name = 'alice@ops-1'`).Scan(&n))
	require.Equal(t, 1, n, "down keeps the trail")
	_, err = pool.Exec(ctx, `DELETE FROM audit_log`)
	require.ErrorContains(t, err, "append-only", "and its trigger")
	_, err = m.Up(ctx)
	require.NoError(t, err)
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE actor_name = 'alice@ops-1'`).Scan(&n))
	require.Equal(t, 1, n, "up again finds it")

	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams[migrations.DropAuditParam] = "on"
	drop, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(drop.Close)
	md, err := migrations.Hub(drop)
	require.NoError(t, err)
	defer md.Close()
	downAll(md)
	var exists bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('audit_log') IS NOT NULL`).Scan(&exists))
	require.False(t, exists, "--drop-audit drops it")
}

// A database the pre-release migrations 00001-00008 created is refused by
// every operation, with a message saying to recreate it, and left as it
// is: never taken for current (its version 8 is above v0.1.0's 1), never
// migrated.
func TestPreReleaseDatabaseRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := emptyPool(t)
	// What the pre-release migrations leave, as far as the check looks:
	// goose's version table with versions 0 to 8, and the archive with its
	// own publication columns.
	_, err := pool.Exec(ctx, `
		CREATE TABLE hub_schema_version (id integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
			version_id bigint NOT NULL, is_applied boolean NOT NULL, tstamp timestamp NOT NULL DEFAULT now());
		INSERT INTO hub_schema_version (version_id, is_applied) SELECT v, true FROM generate_series(0, 8) v;
		CREATE TABLE webhook_events (id uuid PRIMARY KEY, processing_status varchar(32),
			publish_attempts integer NOT NULL DEFAULT 0, next_attempt_at timestamptz, stream_seq bigint)`)
	require.NoError(t, err)

	m := hubMigrator(t, pool)
	want := "this database was created by a pre-release hookhub; recreate it (its hub_schema_version records pre-release version 8"
	err = m.Check(ctx)
	require.ErrorIs(t, err, migrations.ErrPreRelease)
	require.NotErrorIs(t, err, migrate.ErrPending)
	require.Contains(t, err.Error(), want)
	_, err = m.Up(ctx)
	require.ErrorIs(t, err, migrations.ErrPreRelease)
	_, err = m.Status(ctx)
	require.ErrorIs(t, err, migrations.ErrPreRelease)
	_, err = m.Down(ctx)
	require.ErrorIs(t, err, migrations.ErrPreRelease)

	var tables, versions int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()
		AND tablename IN ('processed_webhook_events', 'backfill_checkpoints')`).Scan(&tables))
	require.Zero(t, tables, "nothing was migrated")
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM hub_schema_version`).Scan(&versions))
	require.Equal(t, 9, versions)
}

// Migration 00006 binds console sessions to their credential: the
// sessions that exist when it is applied have none and are ended (their
// rows deleted), not kept with authority no one checks.
func TestSessionCredentialsMigrationEndsExistingSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := emptyPool(t)
	m := hubMigrator(t, pool)
	_, err := m.Up(ctx)
	require.NoError(t, err)
	for {
		ss, err := m.Status(ctx)
		require.NoError(t, err)
		var last int64
		for _, st := range ss {
			if st.Applied {
				last = max(last, st.Version)
			}
		}
		if last < 6 { // 00006 and any after it rolled back
			break
		}
		_, err = m.Down(ctx)
		require.NoError(t, err)
	}
	// A session as a hub before 00006 writes it.
	_, err = pool.Exec(ctx, `INSERT INTO console_sessions (id_hash, csrf, role, kind, name, cap_key, created_at, last_seen, expires_at)
		VALUES ('\x01', 'c', 'admin', 'token', 'token 1a2b3c4d', 'token:admin', now(), now(), now() + interval '1 hour')`)
	require.NoError(t, err)
	_, err = m.Up(ctx)
	require.NoError(t, err)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM console_sessions`).Scan(&n))
	require.Zero(t, n, "the unbound session was ended")
}
