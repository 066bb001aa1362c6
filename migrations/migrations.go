package migrations

import (
	"embed"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookhub/hookhub/internal/migrate"
)

//go:embed *.sql
var hubFS embed.FS

// HubVersionTable is the table that records the hub's applied migrations.
const HubVersionTable = "hub_schema_version"

// Hub returns the Migrator for the hub's own tables, the *.sql files of
// this package.
func Hub(pool *pgxpool.Pool) (*migrate.Migrator, error) {
	return migrate.New(pool, hubFS, HubVersionTable, "hub")
}
