package service

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/internal/startstop"
	"github.com/hookhub/hookhub/schema"
)

// These tests count goroutines, so they do not run in parallel, and the hub
// runs its own embedded NATS server (a shared one keeps goroutines for
// the hub's stream).

func lifecycleConfig(t *testing.T, dbURL string) Config {
	var c Config
	c.DatabaseURL, c.DatabaseMaxConns = dbURL, 4
	c.DataDir = t.TempDir() // embedded NATS
	c.HTTPAddr, c.AdminAddr, c.AdminToken = "127.0.0.1:0", "127.0.0.1:0", "lifecycle-test-admin-token-0123456789"
	c.Stream, c.StreamReplicas, c.DuplicateWindow = schema.DefaultStream, 1, 2*time.Minute
	c.Secrets = map[string][]string{"clerk": {"whsec_dGVzdC1zZWNyZXQtZm9yLWhvb2todWItdGVzdHMh"}}
	c.SignatureTolerance, c.MaxBodyBytes, c.MaxInflight, c.MaxConns, c.AdminMaxConns = 5*time.Minute, 1<<20, 16, 64, 16
	c.ShutdownTimeout, c.CommitTimeout, c.BatchMax, c.BatchCommitters = 10*time.Second, 5*time.Second, 8, 2
	c.RelayBatchSize, c.RelayWorkers, c.LogLevel, c.LogFormat = 64, 2, "info", "text"
	c.ReadMaxAtOnce, c.ReadRowsPerSecond = 2, 10000
	return c
}

// goroutines counts the running goroutines but for the process-wide ones
// a library starts once and never stops (fasthttp's clock of the Date
// header), which are not the hub's to stop, and for fasthttp's worker pool
// cleaners: a stopped server's cleaner notices the stop only after its
// sleep of MaxIdleWorkerDuration (10 s), and then ends on its own. A
// server the hub did not stop still counts: its Serve goroutine runs.
func goroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "fasthttp.updateServerDate") && !strings.Contains(g, "fasthttp.(*workerPool).Start.func") {
			count++
		}
	}
	return count
}

// requireGoroutinesSettle waits until no more goroutines run than before
// the hub was built, and prints them all when some stay (the bound leaves
// room for a loaded machine).
func requireGoroutinesSettle(t *testing.T, baseline int) {
	t.Helper()
	if err := hubtest.Until(30*time.Second, func() bool { return goroutines() <= baseline }); err != nil {
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		t.Fatalf("%d goroutines still run, %d before the hub", goroutines(), baseline)
	}
}

// requireStopped checks that every component of s is stopped.
func requireStopped(t *testing.T, s *Service) {
	t.Helper()
	for _, addr := range []net.Addr{s.Addr(), s.AdminAddr()} {
		c, err := net.DialTimeout("tcp", addr.String(), time.Second)
		if err == nil {
			c.Close()
		}
		require.Error(t, err, "listener %s is closed", addr)
	}
	_, err := s.batcher.Ingest(context.Background(), []hub.Delivery{{Provider: "clerk", EventID: "evt_after_stop"}})
	require.ErrorIs(t, err, store.ErrClosed, "the group committer stopped")
	require.True(t, s.nc.IsClosed(), "the NATS connection is closed")
	require.Error(t, s.pool.Ping(context.Background()), "the pool is closed")
}

// A component that fails to start stops those started before it, in
// reverse order, and Run returns its error having left nothing running.
func TestRunStopsStartedComponentsWhenOneFailsToStart(t *testing.T) {
	_, dbURL := hubdb.Pool(t)
	baseline := goroutines()
	s, err := New(t.Context(), lifecycleConfig(t, dbURL), Deps{})
	require.NoError(t, err)

	var stopped, reverse []string
	for i, c := range s.components {
		s.components[i].Service = recordStop{c.Service, c.Name, &stopped}
		reverse = append([]string{c.Name}, reverse...)
	}
	require.Subset(t, reverse, []string{"admin http", "http", "console", "group committer", "relay", "stream keeper",
		"nats", "nats-embedded", "migrator", "database"})
	boom := errors.New("boom")
	s.components = append(s.components, startstop.Named{Name: "late", Service: startstop.Func(
		func(context.Context) error { return boom }, nil)})

	err = s.Run(t.Context())
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "start late")
	require.GreaterOrEqual(t, len(stopped), len(reverse))
	require.Equal(t, reverse, stopped[:len(reverse)], "stopped in reverse start order")
	requireStopped(t, s)
	requireGoroutinesSettle(t, baseline)
}

// Run returns nil once ctx is cancelled, with every component stopped.
func TestRunStopsEverythingWhenCancelled(t *testing.T) {
	_, dbURL := hubdb.Pool(t)
	baseline := goroutines()
	s, err := New(t.Context(), lifecycleConfig(t, dbURL), Deps{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	require.Eventually(t, func() bool {
		resp, err := client.Get("http://" + s.Addr().String() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 20*time.Millisecond, "the hub serves and is ready")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	requireStopped(t, s)
	requireGoroutinesSettle(t, baseline)
}

// A New that fails half-way (here: the webhook address is in use) closes
// what it opened: pool, NATS, embedded server, listeners.
func TestNewClosesWhatItOpenedWhenItFails(t *testing.T) {
	_, dbURL := hubdb.Pool(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	baseline := goroutines()
	cfg := lifecycleConfig(t, dbURL)
	cfg.HTTPAddr = busy.Addr().String()
	_, err = New(t.Context(), cfg, Deps{})
	require.ErrorContains(t, err, "HUB_HTTP_ADDR")
	requireGoroutinesSettle(t, baseline)
}

// recordStop records the name of the component it wraps when it stops.
type recordStop struct {
	startstop.Service
	name    string
	stopped *[]string
}

func (r recordStop) Stop(ctx context.Context) error {
	*r.stopped = append(*r.stopped, r.name)
	return r.Service.Stop(ctx)
}
