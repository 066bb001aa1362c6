// Package migrations holds the hub's versioned SQL migrations, embedded in
// the binary, and Hub, which returns the Migrator (internal/migrate) that
// applies them, recording versions in hub_schema_version.
//
// Only the hub imports this package: subscribers migrate their own schemas
// with internal/migrate, which embeds nothing, so a subscriber binary does
// not carry the hub's SQL.
//
// Migrations are additive, so hubs of the previous release keep working
// during a rolling deploy, and a released migration is never edited
// (docs/migrations.md). Decision for v0.1.0: squash 00001-00008 into one
// schema without the pre-00004 data model (publication state on the
// archive row) and drop the store's branches that read it, because nothing
// is released and those branches cost every installation on every call;
// until that change lands, 00001-00008 and the compatibility code stay as
// they are, all of it live (docs/migrations.md lists the steps).
package migrations
