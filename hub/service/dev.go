package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Development secrets, used by `hub dev` and `hub send` when no secret is
// configured. They are public: never use them in production (`hub serve`
// does not fall back to them).
var devSecrets = map[string]string{
	"paddle": "pdl_ntfset_01hookhubdev0000000000000000_DevOnlyNotASecret000000000",
	"clerk":  "whsec_aG9va2h1Yi1kZXZlbG9wbWVudC1vbmx5LWtleSE=",
}

// WithDevSecrets fills in the development secret of every provider that
// has none configured, and returns the names it filled in.
func (c *Config) WithDevSecrets() []string {
	var filled []string
	if len(c.ProviderSecrets()["paddle"]) == 0 {
		c.PaddleSecrets = []string{devSecrets["paddle"]}
		filled = append(filled, "paddle")
	}
	if len(c.ProviderSecrets()["clerk"]) == 0 {
		c.ClerkSecrets = []string{devSecrets["clerk"]}
		filled = append(filled, "clerk")
	}
	return filled
}

// CreateDatabase creates the database named in url if it does not exist,
// connecting to the server's "postgres" database to do so. It reports
// whether it created it.
func CreateDatabase(ctx context.Context, url string) (bool, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return false, fmt.Errorf("HUB_DATABASE_URL: %w", err)
	}
	name := cfg.Database
	if name == "" {
		return false, errors.New("HUB_DATABASE_URL names no database")
	}
	cfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, fmt.Errorf("connect to Postgres at %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return false, fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return false, nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // created meanwhile
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create database %s: %w", name, err)
	}
	return true, nil
}
