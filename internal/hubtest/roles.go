package hubtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookhub/hookhub/migrations"
)

// RuntimeRole creates a login role of its own in the test's cluster,
// grants it the hub's run-time privileges on the migrated database at
// ownerURL (migrations.GrantRuntime, as `hub migrate up --runtime-role`
// does, run by the owner) and returns the URL of that database for the
// role: what the hub and the subscribers connect as in production
// (docs/production.md, "Database roles"). The role is dropped when the
// test ends.
func RuntimeRole(t testing.TB, ownerURL string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	owner, err := pgxpool.New(ctx, ownerURL)
	if err != nil {
		t.Fatalf("hubtest: connect as the owner: %v", err)
	}
	defer owner.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	role := "hookhub_rt_" + hex.EncodeToString(b[:])
	if _, err := owner.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN"); err != nil {
		t.Fatalf("hubtest: create role: %v", err)
	}
	t.Cleanup(func() { dropRole(t, ownerURL, role) })
	if err := migrations.GrantRuntime(ctx, owner, role); err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	u, err := url.Parse(ownerURL)
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	u.User = url.User(role)
	return u.String()
}

// dropRole drops role and its grants in the database of ownerURL (the
// only one it has any in).
func dropRole(t testing.TB, ownerURL, role string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		t.Errorf("hubtest: drop role %s: %v", role, err)
		return
	}
	defer c.Close(ctx)
	for _, sql := range []string{"DROP OWNED BY " + pgx.Identifier{role}.Sanitize(), "DROP ROLE " + pgx.Identifier{role}.Sanitize()} {
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Errorf("hubtest: drop role %s: %v", role, err)
			return
		}
	}
}
