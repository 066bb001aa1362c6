// Package migrations holds the hub's versioned SQL migrations, embedded in
// the binary, and Hub, which returns the Migrator (internal/migrate) that
// applies them, recording versions in hub_schema_version.
//
// Only the hub imports this package: subscribers migrate their own schemas
// with internal/migrate, which embeds nothing, so a subscriber binary does
// not carry the hub's SQL.
//
// v0.1.0 ships one migration, 00001_schema.sql: the pre-release migrations
// 00001-00008 squashed, without the pre-release data model (an event's
// publication state on its archive row), because nothing had been released
// and every query branch that read that model cost every installation on
// every call. A database those migrations created is refused with
// ErrPreRelease ("recreate it"), never taken for current. From v0.1.0 on a
// released migration is never edited, and each new one is additive so that
// hubs of the previous release keep working during a rolling deploy
// (docs/migrations.md).
package migrations
