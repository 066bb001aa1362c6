package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
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
// child process, see only what a test sets with t.Setenv. The hub binary
// (buildHub) is built while the in-process tests run.
func TestMain(m *testing.M) {
	hubtest.ClearEnv("EMAIL_", "CREDITS_", "DOWNGRADE_")
	hubtest.BuildEarly(".")
	code := m.Run()
	hubtest.RemoveBuilds()
	os.Exit(code)
}

// streamEnv is what the commands that read the stream run on: a fresh
// database and JetStream server, named by HUB_DATABASE_URL and
// HUB_NATS_URL, with the hub's stream of Paddle events.
func streamEnv(t *testing.T) (*pgxpool.Pool, *hubtest.NATS, jetstream.JetStream) {
	pool, n := natsEnv(t)
	_, js := n.Connect(t)
	_, err := relay.EnsureStream(t.Context(), js, relay.StreamConfig{Name: schema.DefaultStream, Providers: []string{"paddle"}, Replicas: 1, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	return pool, n, js
}

// dbEnv is a fresh database named by HUB_DATABASE_URL, and natsURL by
// HUB_NATS_URL unless it is empty (a closed port for the commands that
// work without NATS).
func dbEnv(t *testing.T, natsURL string) *pgxpool.Pool {
	pool, url := hubdb.Pool(t)
	t.Setenv("HUB_DATABASE_URL", url)
	if natsURL != "" {
		t.Setenv("HUB_NATS_URL", natsURL)
	}
	return pool
}

// runCmd runs the command line args in-process: its exit code, stdout and
// stderr.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// jsonLines decodes a --json output of one object per line.
func jsonLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var all []T
	for line := range strings.Lines(out) {
		var v T
		require.NoError(t, json.Unmarshal([]byte(line), &v), line)
		all = append(all, v)
	}
	return all
}

// natsEnv is dbEnv with a fresh JetStream server at HUB_NATS_URL.
func natsEnv(t *testing.T) (*pgxpool.Pool, *hubtest.NATS) {
	n := hubtest.JetStream(t)
	return dbEnv(t, n.URL()), n
}

// durable is the durable consumer of subscriber name on the hub's stream:
// filter and the subscriber's replay subjects.
func durable(t *testing.T, js jetstream.JetStream, name, filter string) {
	_, err := js.CreateConsumer(t.Context(), schema.DefaultStream, jetstream.ConsumerConfig{Durable: name,
		FilterSubjects: []string{filter, schema.ReplaySubject(name, ">")}, AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
}
