package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// WithDevSecrets fills in the development secret (provider.Spec's
// DevSecret: public, never for production; `hub serve` does not fall back
// to them) of every built-in provider that has none configured (and, for Twilio, a public URL on
// HUB_HTTP_ADDR), and returns the names it filled in.
func (c *Config) WithDevSecrets() []string {
	var filled []string
	have := c.ProviderSecrets()
	for _, spec := range secretSpecs() {
		if len(have[spec.Name]) == 0 {
			c.SetSecrets(spec.Name, spec.DevSecret)
			filled = append(filled, spec.Name)
		}
	}
	c.PublicURL = cmp.Or(c.PublicURL, "http://"+DisplayAddr(c.HTTPAddr))
	slices.Sort(filled)
	return filled
}

// DisplayAddr turns a listen address like ":8080" or "[::]:8080" into one
// a browser or curl can use.
func DisplayAddr(addr string) string {
	if i := strings.LastIndex(addr, ":"); i >= 0 {
		host := addr[:i]
		if host == "" || host == "[::]" || host == "0.0.0.0" {
			return "127.0.0.1" + addr[i:]
		}
	}
	return addr
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
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "42P04" { // created meanwhile
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create database %s: %w", name, err)
	}
	return true, nil
}
