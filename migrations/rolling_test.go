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
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
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

// ingest00002 is the ingest statement of the release that brought
// migration 00002, with entities (hub/store/store.go: ingestHead,
// entitiesCTE, ingestTail), verbatim.
const ingest00002 = `
WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[],
                         $7::text[], $8::timestamptz[], $9::timestamptz[], $10::timestamptz[], $11::text[],
                         $14::text[], $15::text[], $16::text[], $17::text[])
        WITH ORDINALITY AS t(id, provider, event_id, event_type, payload, body,
                             signature, signed_at, occurred_at, received_at, error_message, trace_parent,
                             origin, entities, entity_ids, ord)
), dedup AS (
    INSERT INTO processed_webhook_events (id, provider, event_id, event_type, processed_at, next_attempt_at)
    -- Sorted by key, so concurrent batches take row locks in one order and
    -- never deadlock; within a key the earliest delivery wins.
    SELECT id, provider, event_id, event_type, received_at,
           CASE WHEN error_message = '' THEN now() + $12 * interval '1 millisecond' END
    FROM input ORDER BY provider, event_id, ord
    ON CONFLICT ON CONSTRAINT uq_processed_webhook_events_provider_event_id DO NOTHING
    RETURNING id
), entity_rows AS (
    INSERT INTO webhook_event_entities (entity_id, created_at, archive_id)
    SELECT e.entity_id, i.received_at, i.id
    FROM input i JOIN dedup d ON d.id = i.id,
         unnest(string_to_array(NULLIF(i.entity_ids, ''), E'\n')) AS e(entity_id)
)
INSERT INTO webhook_events (id, provider, event_id, event_type, payload, signature, processing_status,
                            error_message, created_at, body, signed_at, occurred_at, trace_parent, origin,
                            entities)
SELECT i.id, i.provider, i.event_id, i.event_type, i.payload::jsonb, NULLIF(i.signature, ''),
       CASE WHEN d.id IS NULL THEN 'SKIPPED' WHEN i.error_message <> '' THEN 'FAILED' END,
       CASE WHEN d.id IS NULL THEN NULL ELSE NULLIF(i.error_message, '') END,
       i.received_at,
       CASE WHEN d.id IS NULL THEN NULL ELSE COALESCE(i.body, convert_to(i.payload, 'UTF8')) END,
       NULLIF(i.signed_at, $13), NULLIF(i.occurred_at, $13),
       NULLIF(i.trace_parent, ''), COALESCE(NULLIF(i.origin, ''), 'webhook'),
       string_to_array(NULLIF(i.entities, ''), E'\n')
FROM input i LEFT JOIN dedup d ON d.id = i.id
ORDER BY i.ord
RETURNING id, COALESCE(processing_status, 'PENDING')`

// rollingEntity is the entity id the rolling-deploy cases of 00007 write
// and look up.
const rollingEntity = "ctm_rolling"

// entityEvents counts the archive's first deliveries about rollingEntity,
// read from their rows (no index).
func entityEvents(t *testing.T, ctx context.Context, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_events
		WHERE processing_status IS DISTINCT FROM 'SKIPPED' AND $1 = ANY (entities)`, "customer:"+rollingEntity).Scan(&n))
	return n
}

// entities00002 are the entity statements of the release that brought
// migration 00002 (hub/store): ingest a first delivery and its duplicate
// about rollingEntity (under two kinds: indexed once), look the entity up
// (ListArchive's entity candidates), which finds every first delivery
// about it, and purge (nothing is old enough).
func entities00002(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	evt := uuid.NewString()
	for range 2 {
		now := time.Now()
		_, err := pool.Exec(ctx, ingest00002, [][16]byte{uuid.Must(uuid.NewV7())}, []string{"paddle"}, []string{evt},
			[]string{"subscription.created"}, []string{`{}`}, [][]byte{nil}, []string{"ts=1;h1=ab"},
			[]time.Time{{}}, []time.Time{{}}, []time.Time{now}, []string{""}, 0, time.Time{}, []string{}, []string{},
			[]string{"customer:" + rollingEntity + "\nsubscription:sub_" + evt + "\nuser:" + rollingEntity},
			[]string{rollingEntity + "\nsub_" + evt})
		require.NoError(t, err)
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT a.id FROM webhook_event_entities x
    JOIN webhook_events a ON a.id = x.archive_id
    LEFT JOIN processed_webhook_events p ON p.id = a.id AND a.processing_status IS NULL
    WHERE x.entity_id = $1 AND TRUE AND TRUE
    ORDER BY x.created_at DESC, x.archive_id DESC LIMIT $2) c`, rollingEntity, 1000).Scan(&n))
	require.Equal(t, entityEvents(t, ctx, pool), n, "the previous release's look-up finds every event about the entity")
	_, err := pool.Exec(ctx, purge00002, time.Now().Add(-24*time.Hour), 100, false)
	require.NoError(t, err)
}

// purge00002 is the purge statement of the release that brought
// migration 00002 (hub/store/purge.go: purgeSQL), verbatim.
const purge00002 = `
WITH candidates AS (
    SELECT a.id, a.processing_status IS NOT NULL AS stored
    FROM webhook_events a
    LEFT JOIN processed_webhook_events p ON p.id = a.id AND a.processing_status IS NULL
    WHERE a.created_at < $1
      AND (a.processing_status = 'SKIPPED'
           OR ($3 AND a.processing_status = 'FAILED')
           OR (a.processing_status IS NULL AND p.next_attempt_at IS NULL
               AND (p.stream_seq IS NOT NULL OR ($3 AND p.publish_error IS NOT NULL))))
    ORDER BY a.created_at
    LIMIT $2
), published AS (
    SELECT p.id FROM processed_webhook_events p
    WHERE p.id IN (SELECT id FROM candidates WHERE NOT stored)
      AND p.next_attempt_at IS NULL AND (p.stream_seq IS NOT NULL OR ($3 AND p.publish_error IS NOT NULL))
    FOR SHARE
), doomed AS (
    SELECT id, true AS stored FROM candidates WHERE stored
    UNION ALL
    SELECT id, false FROM published
), deleted AS (
    DELETE FROM webhook_events a USING doomed d
    WHERE a.id = d.id
      AND CASE WHEN d.stored THEN a.processing_status = 'SKIPPED' OR ($3 AND a.processing_status = 'FAILED')
               ELSE a.processing_status IS NULL END
    RETURNING a.id, a.created_at, a.entities, a.processing_status
), unindexed AS (
    -- The entity index's rows of the deleted first deliveries, by their
    -- exact key (SKIPPED rows were never indexed).
    DELETE FROM webhook_event_entities x
    WHERE (x.entity_id, x.created_at, x.archive_id) IN (
        SELECT substr(e, strpos(e, ':') + 1), d.created_at, d.id
        FROM deleted d CROSS JOIN unnest(d.entities) AS e
        WHERE d.entities IS NOT NULL AND d.processing_status IS DISTINCT FROM 'SKIPPED')
)
SELECT (SELECT count(*) FROM candidates), (SELECT count(*) FROM deleted)`

// entities00007 are the entity statements of the release that brought
// migration 00007 (hub/store itself): ingest a first delivery and its
// duplicate about rollingEntity, and look it up, which finds every first
// delivery about it once, whichever release wrote it: before the
// migration (carried over), or after it, by this release or the
// previous one.
func entities00007(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	s := store.New(pool)
	evt := uuid.NewString()
	for range 2 {
		_, err := s.Ingest(ctx, []hub.Delivery{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: evt,
			EventType: "subscription.created", Body: []byte(`{}`), ReceivedAt: time.Now(),
			Entities: []hub.Entity{{Kind: "customer", ID: rollingEntity}, {Kind: "user", ID: rollingEntity}}}})
		require.NoError(t, err)
	}
	rows, err := s.ListArchive(ctx, hub.ArchiveFilter{Entity: rollingEntity, Limit: 1000})
	require.NoError(t, err)
	require.Len(t, rows, entityEvents(t, ctx, pool), "the look-up finds every event about the entity, once")
	_, _, err = s.PurgeArchive(ctx, time.Now().Add(-24*time.Hour), 100, false)
	require.NoError(t, err)
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
	{version: 7, old: entities00002, new: entities00007},
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

// Migration 00007 carries every event's entities over to the slot indexes
// of the archive row: the events the previous release wrote before it are
// found by the new look-up once it has run; a run interrupted with an
// index left INVALID (CREATE INDEX CONCURRENTLY cut short) is run again
// and leaves every index valid; its Down gives the previous release's
// index table the rows of the events written since.
func TestEntitySlotsCarryOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := emptyPool(t)
	upTo(t, ctx, pool, 6)
	for range 3 {
		entities00002(t, ctx, pool)
	}
	require.Equal(t, 3, entityEvents(t, ctx, pool))

	// An interrupted run: one index built, one left INVALID.
	_, err := pool.Exec(ctx, `CREATE INDEX ix_webhook_events_entity_1 ON webhook_events
		((substr(entities[1], strpos(entities[1], ':') + 1)), created_at, id)
		WHERE entities[1] IS NOT NULL AND processing_status IS DISTINCT FROM 'SKIPPED'`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE INDEX ix_webhook_events_entity_3 ON webhook_events (created_at)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'ix_webhook_events_entity_3'::regclass`)
	require.NoError(t, err)

	m := upTo(t, ctx, pool, 7)
	valid, slots := entitySlotIndexes(t, ctx, pool)
	require.Equal(t, hub.MaxEntities, slots)
	require.Equal(t, hub.MaxEntities, valid)
	var def string
	require.NoError(t, pool.QueryRow(ctx, `SELECT pg_get_indexdef('ix_webhook_events_entity_3'::regclass)`).Scan(&def))
	require.Contains(t, def, "entities[3]", "the INVALID index is built again")

	s := store.New(pool)
	rows, err := s.ListArchive(ctx, hub.ArchiveFilter{Entity: rollingEntity, Limit: 100})
	require.NoError(t, err)
	require.Len(t, rows, 3, "the events written before the migration are found")
	entities00002(t, ctx, pool) // a hub of the previous release, after the migration
	entities00007(t, ctx, pool) // a hub of this release: finds all 5
	require.Equal(t, 5, entityEvents(t, ctx, pool))

	_, err = m.Down(ctx)
	require.NoError(t, err)
	_, slots = entitySlotIndexes(t, ctx, pool)
	require.Zero(t, slots)
	var indexed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_event_entities WHERE entity_id = $1`, rollingEntity).Scan(&indexed))
	require.Equal(t, 5, indexed, "Down indexes the events this release wrote")
	entities00002(t, ctx, pool) // finds all 6
}

// entitySlotIndexes counts migration 00007's slot indexes: those valid,
// and all.
func entitySlotIndexes(t *testing.T, ctx context.Context, pool *pgxpool.Pool) (valid, all int) {
	t.Helper()
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE i.indisvalid), count(*) FROM pg_index i
		WHERE i.indexrelid::regclass::text LIKE 'ix_webhook_events_entity_%'`).Scan(&valid, &all))
	return valid, all
}
