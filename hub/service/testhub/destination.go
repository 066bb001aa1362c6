package testhub

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/destination"
)

// StartDestination runs the HTTP destination name, for every paddle.>
// event of the stream schema.DefaultStream, until the test ends, to a
// receiver that answers 204; received counts the requests it got. It
// returns once the destination consumes.
func StartDestination(t testing.TB, pool *pgxpool.Pool, js jetstream.JetStream, name string) (received *atomic.Int64) {
	t.Helper()
	received = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	set, err := destination.Parse(fmt.Appendf(nil, "destinations:\n  - name: %s\n    url: %s\n    secret_env: SECRET\n    subjects: [paddle.>]\n", name, srv.URL),
		func(k string) (string, bool) { return "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", k == "SECRET" })
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	r, err := destination.New(set[0], destination.Options{Pool: pool, JetStream: js, Stream: schema.DefaultStream,
		Metrics: destination.NewMetrics(reg), Registerer: reg, ShutdownTimeout: 10 * time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { return r.Healthy() == nil }, 30*time.Second, 10*time.Millisecond, "the destination consumes")
	return received
}
