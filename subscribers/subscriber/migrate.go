package subscriber

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookhub/hookhub/internal/migrate"
)

//go:embed sql/*.sql
var librarySQL embed.FS

// LibraryVersionTable is the table, inside the subscriber's schema, that
// records the library's own migrations. The service's migrations are
// recorded apart, in <schema>.schema_version (migrate.ForSchema).
const LibraryVersionTable = "subscriber_schema_version"

// Migrate applies the library's tables and then the service's migrations
// (fsys, may be nil) to schema name, creating it if needed. Run calls it;
// it is exported for tools that migrate without consuming (`hub migrate`).
// It is idempotent and safe with several replicas starting at once: each
// set runs under its own advisory lock.
func Migrate(ctx context.Context, pool *pgxpool.Pool, name string, fsys fs.FS) error {
	if !ValidName(name) {
		return fmt.Errorf("%w: Name %q", ErrInvalidConfig, name)
	}
	lib, err := libraryFS(name)
	if err != nil {
		return err
	}
	m, err := migrate.ForSchemaTable(ctx, pool, lib, name, LibraryVersionTable)
	if err != nil {
		return fmt.Errorf("subscriber %s: library migrations: %w", name, err)
	}
	defer m.Close()
	if _, err := m.Up(ctx); err != nil {
		return fmt.Errorf("subscriber %s: library tables: %w", name, err)
	}
	if fsys == nil {
		return nil
	}
	svc, err := migrate.ForSchema(ctx, pool, fsys, name)
	if err != nil {
		return fmt.Errorf("subscriber %s: service migrations: %w", name, err)
	}
	defer svc.Close()
	if _, err := svc.Up(ctx); err != nil {
		return fmt.Errorf("subscriber %s: service migrations: %w", name, err)
	}
	return nil
}

// libraryFS returns the library's migrations with the schema name filled
// in.
func libraryFS(schemaName string) (fs.FS, error) {
	quoted := pgx.Identifier{schemaName}.Sanitize()
	lib := migrate.Dir(librarySQL, "sql")
	out := fstest.MapFS{}
	err := fs.WalkDir(lib, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(lib, path)
		if err != nil {
			return err
		}
		out[path] = &fstest.MapFile{Data: []byte(strings.ReplaceAll(string(b), "__SCHEMA__", quoted)), Mode: 0o444}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("subscriber: library migrations: %w", err)
	}
	return out, nil
}
