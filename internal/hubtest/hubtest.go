// Package hubtest gives tests the real components they run against: a
// fresh Postgres database per test (created, copied from a migrated
// template or empty, and dropped), and an embedded JetStream server per
// test with its own store directory. There are no fakes: tests talk to
// real Postgres and real nats-server. It knows no schema: the caller
// passes its migrations (Schema), so that it serves the hub's tests and
// the subscribers' alike.
//
// The Postgres server is taken from HUB_TEST_DATABASE_URL, default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable; at most
// HUB_TEST_DATABASES test databases (default 6) live on it at once,
// across every test process.
package hubtest

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/internal/natsembed"
)

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
	return connect(t, n.URL())
}

// connect returns a client connection to url (reconnecting forever, 50ms
// apart, unless opts say otherwise) and its JetStream context, closed when
// the test ends.
func connect(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts = append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, opts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("hubtest: connect to %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("hubtest: jetstream: %v", err)
	}
	return nc, js
}
