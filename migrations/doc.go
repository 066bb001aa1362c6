// Package migrations holds the hub's versioned SQL migrations, embedded in
// the binary, and a Migrator that applies them, or any other embedded set
// (a subscriber's own schema), with goose over a pgx pool.
//
// Migrations are applied under a Postgres advisory lock, so several
// replicas starting at once apply each version exactly once.
package migrations
