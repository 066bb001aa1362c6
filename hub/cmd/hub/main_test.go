package main

import (
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
)

// TestMain clears the developer's HUB_* variables (and the subscribers'
// that hub dev reads): the commands the tests run, in-process or as a
// child process, see only what a test sets with t.Setenv.
func TestMain(m *testing.M) {
	hubtest.ClearEnv("EMAIL_", "CREDITS_", "DOWNGRADE_")
	os.Exit(m.Run())
}

// streamEnv is what the commands that read the stream run on: a fresh
// database and JetStream server, named by HUB_DATABASE_URL and
// HUB_NATS_URL, with the hub's stream of Paddle events.
func streamEnv(t *testing.T) (*pgxpool.Pool, *hubtest.NATS, jetstream.JetStream) {
	pool, url := hubdb.Pool(t)
	n := hubtest.JetStream(t)
	_, js := n.Connect(t)
	t.Setenv("HUB_DATABASE_URL", url)
	t.Setenv("HUB_NATS_URL", n.URL())
	_, err := relay.EnsureStream(t.Context(), js, relay.StreamConfig{Name: schema.DefaultStream, Providers: []string{"paddle"}, Replicas: 1, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	return pool, n, js
}
