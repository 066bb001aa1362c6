package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/bench"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
)

const testPaddleSecret = "pdl_ntfset_01proc000000000000000000000_ProcessTestSecret000000000"

// buildHub compiles the hub binary once per test binary run: the hub
// runs as built for operators, not as the (race-instrumented) test binary.
func buildHub(t *testing.T) string { return hubtest.Build(t, ".") }

// startHubProcess runs `hub serve` as a child process listening on addr,
// and waits until it is ready.
func startHubProcess(t *testing.T, env []string, addr string) *hubtest.Proc {
	t.Helper()
	p := hubtest.StartBinary(t, buildHub(t), append(slices.Clip(env), "HUB_HTTP_ADDR="+addr), "serve")
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "hub process not ready")
	return p
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

func processEnv(dbURL, natsURL string) []string {
	return []string{
		"HUB_DATABASE_URL=" + dbURL,
		"HUB_NATS_URL=" + natsURL,
		"HUB_PADDLE_SECRETS=" + testPaddleSecret,
		"HUB_LOG_FORMAT=text",
		"HUB_SHUTDOWN_TIMEOUT=10s",
	}
}

func deliver(client *http.Client, addr string, s provider.Signer, eventID string) (int, error) {
	body, err := samples.Body(s.Name(), eventID, "subscription.created", nil, time.Now())
	if err != nil {
		return 0, err
	}
	hdr, _, err := s.Sign(eventID, "", body, time.Now())
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhooks/paddle", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header = hdr
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestSIGKILLUnderLoad kills the hub with SIGKILL in the middle of a
// burst, restarts it, and lets "providers" retry every delivery that got
// no 2xx. Every event must end up on the stream exactly once, and every
// 2xx must have been backed by a commit.
func TestSIGKILLUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the hub binary")
	}
	t.Parallel()
	pool, dbURL := hubdb.Pool(t)
	n := hubtest.JetStream(t)
	_, js := n.Connect(t)
	p, err := provider.New("paddle", []string{testPaddleSecret}, provider.Options{})
	require.NoError(t, err)
	sender := p.(provider.Signer)
	env := processEnv(dbURL, n.URL())
	addr := freeAddr(t)
	hub := startHubProcess(t, env, addr)

	const workers, perWorker = 8, 150
	client := &http.Client{Timeout: 5 * time.Second}
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				id := fmt.Sprintf("evt_kill_%d_%03d", w, i)
				// Every fifth delivery repeats an earlier event, as providers do.
				if i%5 == 4 {
					id = fmt.Sprintf("evt_kill_%d_%03d", w, i-1)
				}
				status, err := deliver(client, addr, sender, id)
				if err == nil && status == http.StatusOK {
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				}
			}
		})
	}
	// Kill once some deliveries have been acknowledged: mid-burst.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 100
	}, 60*time.Second, 5*time.Millisecond)
	hub.Signal(t, syscall.SIGKILL)
	hub.ExitCode(t)
	wg.Wait()

	// Every 2xx was backed by a commit.
	mu.Lock()
	for id := range acked {
		var n int
		require.NoError(t, pool.QueryRow(context.Background(),
			`SELECT count(*) FROM processed_webhook_events WHERE event_id = $1`, id).Scan(&n))
		require.Equal(t, 1, n, "event %s was acknowledged without a commit", id)
	}
	mu.Unlock()

	// Restart; providers retry everything that got no 2xx.
	startHubProcess(t, env, addr)
	all := map[string]bool{}
	for w := range workers {
		for i := range perWorker {
			all[fmt.Sprintf("evt_kill_%d_%03d", w, i-(i%5/4))] = true
		}
	}
	for id := range all {
		mu.Lock()
		done := acked[id]
		mu.Unlock()
		if done {
			continue
		}
		status, err := deliver(client, addr, sender, id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
	}
	require.Eventually(t, func() bool {
		var pending int
		require.NoError(t, pool.QueryRow(context.Background(),
			`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PENDING'`).Scan(&pending))
		return pending == 0
	}, 30*time.Second, 20*time.Millisecond)

	ids := streamMsgIDs(t, js)
	require.Len(t, ids, len(all), "one message per event")
	for id := range all {
		require.Equal(t, 1, ids["paddle:"+id], "event %s", id)
	}
	var dedup int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_webhook_events`).Scan(&dedup))
	require.Equal(t, len(all), dedup)
	t.Logf("%d events, %d acknowledged before SIGKILL", len(all), len(acked))
}

// TestSIGTERMExitsZero checks the graceful path of the real binary.
func TestSIGTERMExitsZero(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the hub binary")
	}
	t.Parallel()
	pool, dbURL := hubdb.Pool(t)
	n := hubtest.JetStream(t)
	p, err := provider.New("paddle", []string{testPaddleSecret}, provider.Options{})
	require.NoError(t, err)
	addr := freeAddr(t)
	hub := startHubProcess(t, processEnv(dbURL, n.URL()), addr)
	status, err := deliver(http.DefaultClient, addr, p.(provider.Signer), "evt_term")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	hub.Terminate(t)
	require.Equal(t, 0, hub.ExitCode(t), "exit status after SIGTERM; logs:\n%s", hub.Output())
	var pending int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PENDING'`).Scan(&pending))
	require.Zero(t, pending, "the relay drains before exit")
}

func TestServeRefusesPendingMigrations(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the hub binary")
	}
	t.Parallel()
	dbURL := hubtest.DatabaseURL(t) // empty: not migrated
	p := hubtest.StartBinary(t, buildHub(t), processEnv(dbURL, "nats://127.0.0.1:1"), "serve")
	require.NotZero(t, p.ExitCode(t))
	require.Contains(t, p.Output(), "hub migrate up")
}

func streamMsgIDs(t *testing.T, js jetstream.JetStream) map[string]int {
	return testhub.StreamMsgIDs(t, js, schema.DefaultStream)
}

// TestBenchSmall runs `hub bench`'s machinery on a small workload: the
// hub with and without batching and the raw ceiling, then the end-of-run
// check of the stream and the tables.
func TestBenchSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the hub binary")
	}
	t.Parallel()
	hubtest.Slot(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		AdminURL: hubtest.AdminURL(), HubCommand: []string{buildHub(t)},
		Count: 400, Warmup: 100, Concurrency: 8, Duplicates: 0.2, BatchMax: 64, Baseline: true, Ceiling: true, Rounds: 2,
	})
	require.NoError(t, err)
	require.Len(t, rep.Runs, 3)
	require.Len(t, rep.Rounds, 2)
	for _, round := range rep.Rounds {
		require.Len(t, round.Runs, 3)
		require.Greater(t, round.VsUnbatched, 0.0)
		require.Greater(t, round.VsCeiling, 0.0)
		for k, r := range round.Runs {
			require.Equal(t, rep.Runs[k].Name, r.Name, "rounds list the runs in the order of Runs")
		}
	}
	require.True(t, rep.NothingLostOrDuped, "%+v", rep.Runs)
	for _, r := range rep.Runs {
		require.Equal(t, 400, r.Deliveries, "%s: the warm-up is not measured", r.Name)
		require.Equal(t, 500, r.ArchiveRows, "%s: the warm-up is archived and checked", r.Name)
		require.Equal(t, r.Events, r.DedupRows, r.Name)
		require.Greater(t, r.PerSecond, 0.0, r.Name)
	}
	require.Equal(t, rep.Runs[0].Events, rep.Runs[0].StreamMsgs)
	require.GreaterOrEqual(t, rep.Runs[0].MeanCommitBatch, 1.0, "read from the hub's /metrics")
	require.Equal(t, 1.0, rep.Runs[1].MeanCommitBatch)
	require.Greater(t, rep.Runs[0].HubAllocBytes, 0.0, "read from the hub's /metrics")
	require.Greater(t, rep.VsUnbatched, 0.0)
	require.Greater(t, rep.VsCeiling, 0.0)
}
