// Package migrate applies a set of versioned SQL migrations, embedded by
// its owner, to one Postgres database with goose over a pgx pool: the
// hub's own tables (package migrations) and each subscriber's schema.
//
// Migrations are applied under a Postgres advisory lock, so several
// replicas starting at once apply each version exactly once.
//
// The package embeds no SQL of its own: a subscriber binary that imports
// it carries only its own migrations, never the hub's.
package migrate
