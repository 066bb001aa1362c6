// Package migrations holds the hub's versioned SQL migrations, embedded in
// the binary, and Hub, which returns the Migrator (internal/migrate) that
// applies them.
//
// Only the hub imports this package: subscribers migrate their own schemas
// with internal/migrate, which embeds nothing, so a subscriber binary does
// not carry the hub's SQL.
package migrations
