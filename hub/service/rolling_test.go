package service_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/internal/migrate"
	"github.com/hookhub/hookhub/migrations"
)

// nextMigrations is the hub's migrations and, after them, the fixture
// testdata/rolling/00099_next.sql, numbered after the last of them
// (nextName): a schema one migration ahead of this release.
func nextMigrations(t *testing.T) fs.FS {
	t.Helper()
	name := nextName(t)
	out := fstest.MapFS{}
	names, err := fs.Glob(migrations.Files(), "*.sql")
	require.NoError(t, err)
	for _, n := range names {
		b, err := fs.ReadFile(migrations.Files(), n)
		require.NoError(t, err)
		out[n] = &fstest.MapFile{Data: b, Mode: 0o444}
	}
	next, err := os.ReadFile("testdata/rolling/00099_next.sql")
	require.NoError(t, err)
	_, clash := out[name]
	require.False(t, clash)
	out[name] = &fstest.MapFile{Data: next, Mode: 0o444}
	return out
}

// nextName is the fixture's file name: the version after the hub's last
// migration.
func nextName(t *testing.T) string {
	t.Helper()
	names, err := fs.Glob(migrations.Files(), "*.sql")
	require.NoError(t, err)
	last := 0
	for _, n := range names {
		v, err := strconv.Atoi(n[:5])
		require.NoError(t, err, n)
		last = max(last, v)
	}
	return fmt.Sprintf("%05d_next.sql", last+1)
}

// TestRollingDeployAcrossNextMigration is the rolling-deploy harness for
// the migration after v0.1.0 (docs/migrations.md). v0.1.0 squashed the
// pre-release migrations, so there is no such migration yet: a fixture
// made by the rules stands in for it. The test proves what every rolling
// deploy relies on: a hub of this release keeps archiving and publishing
// while the next migration is applied under it, stays ready on a schema
// ahead of it (it refuses only pending migrations), starts again on it (a
// rollback of the binary), and goes on when the migration is rolled back
// (an aborted deploy); every event reaches the stream exactly once.
//
// When the real migration comes, it replaces the fixture, and the test
// gains the other half, the new hub's: the statements of this release's
// ingest, claim and mark, copied verbatim, run against the new schema while
// a new hub runs (see TestRollingDeployAcrossMigration4 in the history of
// this file for the pattern).
func TestRollingDeployAcrossNextMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := hubdb.Pool(t) // this release's schema
	nextFS := nextMigrations(t)
	m, err := migrate.New(pool, nextFS, migrations.HubVersionTable, "hub")
	require.NoError(t, err)
	defer m.Close()

	n := hubtest.JetStream(t)
	_, js := n.Connect(t)
	h := &testHub{t: t, cfg: newTestConfig(t, dbURL, n.URL()), pool: pool, nats: n, js: js,
		paddle: mustSender(t, "paddle", paddleSecret), clerk: mustSender(t, "clerk", clerkSecret)}
	h.start()
	defer h.stop()
	var want []string
	deliver := func(id string) {
		t.Helper()
		require.Equal(t, http.StatusOK, h.deliver("paddle", id, "subscription.created").status, id)
		want = append(want, id)
	}
	deliver("evt_before")

	// The next migration, while the hub takes deliveries.
	const during = 20
	statuses := make([]int, during)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range during {
			statuses[i] = h.deliver("paddle", fmt.Sprintf("evt_during_%02d", i), "subscription.created").status
		}
	})
	rs, err := m.Up(ctx)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	require.Equal(t, nextName(t), rs[0].Name)
	wg.Wait()
	for i, st := range statuses {
		require.Equal(t, http.StatusOK, st, i)
		want = append(want, fmt.Sprintf("evt_during_%02d", i))
	}
	deliver("evt_after")
	h.readyzWithin(http.StatusOK, "ok")

	// This release starts on the migrated database.
	h.stop()
	h.start()
	deliver("evt_restarted")
	h.readyzWithin(http.StatusOK, "ok")

	// The migration rolled back under the running hub.
	_, err = m.Down(ctx)
	require.NoError(t, err)
	deliver("evt_rolled_back")
	h.waitPublished()

	msgs := h.streamMsgIDs()
	for _, id := range want {
		require.Equal(t, 1, msgs["paddle:"+id], id)
	}
	require.Len(t, msgs, len(want))
	require.Equal(t, map[string]int{"PROCESSED": len(want)}, hubdb.StatusCounts(t, pool))
}
