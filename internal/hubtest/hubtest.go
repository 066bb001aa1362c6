// Package hubtest gives tests the real components they run against: a
// fresh Postgres database per test (created, migrated and dropped), and an
// embedded JetStream server per test with its own store directory. There
// are no fakes: tests talk to real Postgres and real nats-server.
//
// The Postgres server is taken from HUB_TEST_DATABASE_URL, default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable.
package hubtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/internal/natsembed"
	"github.com/hookhub/hookhub/internal/pgurl"
	"github.com/hookhub/hookhub/migrations"
)

// AdminURL is the URL of the database tests create their databases from.
func AdminURL() string {
	if u := os.Getenv("HUB_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// Pool creates a migrated database for the calling test (see Database) and
// returns a pool on it, closed when the test ends.
func Pool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	url := DatabaseURL(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatalf("hubtest: pool: %v", err)
	}
	t.Cleanup(pool.Close)
	m, err := migrations.Hub(pool)
	if err != nil {
		t.Fatalf("hubtest: migrations: %v", err)
	}
	defer m.Close()
	if _, err := m.Up(ctx); err != nil {
		t.Fatalf("hubtest: migrate: %v", err)
	}
	return pool, url
}

// DatabaseURL creates an empty database for the calling test (dropped when
// it ends) and returns its URL.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Fatalf("hubtest: connect to %s: %v (is Postgres running?)", AdminURL(), err)
	}
	defer admin.Close(context.Background())

	name := "hookhub_test_" + randomSuffix()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("hubtest: create database: %v", err)
	}
	t.Cleanup(func() { dropDatabase(t, name) })
	url, err := pgurl.WithDatabase(AdminURL(), name)
	if err != nil {
		t.Fatalf("hubtest: HUB_TEST_DATABASE_URL: %v", err)
	}
	return url
}

func dropDatabase(t testing.TB, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Errorf("hubtest: drop database %s: %v", name, err)
		return
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("hubtest: drop database %s: %v", name, err)
	}
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102_150405") + "_" + hex.EncodeToString(b[:])
}

// NATS is an embedded JetStream server for one test.
type NATS struct {
	t   testing.TB
	srv *natsembed.Server
	dir string
}

// JetStream starts an embedded JetStream server on a free port of
// 127.0.0.1, with its own store directory; it is shut down when the test
// ends.
func JetStream(t testing.TB) *NATS {
	t.Helper()
	dir := t.TempDir()
	srv, err := natsembed.Start(natsembed.Options{Port: -1, StoreDir: dir, MaxStore: 256 << 20})
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	n := &NATS{t: t, srv: srv, dir: dir}
	t.Cleanup(func() {
		if n.srv != nil {
			n.srv.Shutdown()
		}
	})
	return n
}

// URL is the server's client URL.
func (n *NATS) URL() string { return n.srv.ClientURL() }

// Stop shuts the server down, keeping its store, to simulate an outage.
func (n *NATS) Stop() {
	n.t.Helper()
	n.srv.Shutdown()
}

// Start restarts a stopped server on the same port and store.
func (n *NATS) Start() {
	n.t.Helper()
	srv, err := n.srv.Restart(nil)
	if err != nil {
		n.t.Fatalf("hubtest: restart nats: %v", err)
	}
	n.srv = srv
}

// Connect returns a client connection and JetStream context, closed when
// the test ends.
func (n *NATS) Connect(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(n.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatalf("hubtest: connect nats: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("hubtest: jetstream: %v", err)
	}
	return nc, js
}
