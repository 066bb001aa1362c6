// Package hubdb gives the hub's tests a database of their own with the
// hub's schema (internal/hubtest's Pool with the hub's migrations), and a
// role with the hub's run-time privileges on it. It lives on the hub's side
// so that internal/hubtest, which the subscribers' tests use too, imports
// nothing of the hub.
package hubdb

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/migrations"
)

// Schema is the hub's schema, as `hub migrate up` applies it.
func Schema() hubtest.Schema {
	return hubtest.Schema{Name: "hub", Files: migrations.Files(), Migrate: migrate}
}

func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := migrations.Up(ctx, pool); err != nil {
		return fmt.Errorf("hub migrations: %w", err)
	}
	return nil
}

// Pool creates a database with the hub's schema for the calling test
// (dropped when it ends) and returns a pool on it, closed when the test
// ends, and its URL.
func Pool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	return hubtest.Pool(t, Schema())
}

// RuntimeRole creates a login role of its own in the test's cluster,
// grants it the hub's run-time privileges on the migrated database at
// ownerURL (migrations.GrantRuntime, as `hub migrate up --runtime-role`
// does, run by the owner) and returns the URL of that database for the
// role: what the hub and the subscribers connect as in production
// (docs/production.md, "Database roles"). The role is dropped when the
// test ends.
func RuntimeRole(t testing.TB, ownerURL string) string {
	t.Helper()
	return hubtest.Role(t, ownerURL, migrations.GrantRuntime)
}

// StatusCounts counts the archive's rows per status, as the
// webhook_event_status view gives them.
func StatusCounts(t testing.TB, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	out := map[string]int{}
	var st string
	var n int
	rows, err := pool.Query(context.Background(), `SELECT processing_status, count(*) FROM webhook_event_status GROUP BY 1`)
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&st, &n}, func() error { out[st] = n; return nil })
	}
	if err != nil {
		t.Fatalf("count the archive's rows per status: %v", err)
	}
	return out
}
