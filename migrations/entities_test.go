package migrations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
)

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
	var valid, slots int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE i.indisvalid), count(*) FROM pg_index i
		WHERE i.indexrelid::regclass::text LIKE 'ix_webhook_events_entity_%'`).Scan(&valid, &slots))
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
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_index i
		WHERE i.indexrelid::regclass::text LIKE 'ix_webhook_events_entity_%'`).Scan(&slots))
	require.Zero(t, slots)
	var indexed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_event_entities WHERE entity_id = $1`, rollingEntity).Scan(&indexed))
	require.Equal(t, 5, indexed, "Down indexes the events this release wrote")
	entities00002(t, ctx, pool) // finds all 6
}
