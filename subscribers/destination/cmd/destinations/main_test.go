package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
)

func TestMain(m *testing.M) { subtest.CommandMain(m, main, "DESTINATIONS") }

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// file writes a destinations file with one destination per URL (named
// d0, d1, ...) on paddle.>, each starting from the stream's whole history
// (start: all), and returns its path.
func file(t *testing.T, path string, urls ...string) string {
	t.Helper()
	s := "destinations:\n"
	for i, u := range urls {
		s += fmt.Sprintf("  - name: d%d\n    url: %s\n    subjects: [\"paddle.>\"]\n    secret_env: DEST_SECRET\n    start: all\n", i, u)
	}
	require.NoError(t, os.WriteFile(path, []byte(s), 0o600))
	return path
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("destinations:\n  - name: billing\n    url: ftp://x\n    subjects: [\"paddle.>\"]\n    secret_env: NOT_SET_ANYWHERE\n"), 0o600))
	subtest.RunUsage(t, []subtest.Usage{
		{"help", []string{"--help"}, nil, 0, []string{"DESTINATIONS_FILE", "DESTINATIONS_DATABASE_URL", "DESTINATIONS_NATS_URL", "DESTINATIONS_HTTP_ADDR", ":8085", "DESTINATIONS_ATTEMPT_RETENTION", "secret_env"}},
		{"unexpected argument", []string{"serve"}, nil, 2, []string{`unexpected argument "serve"`}},
		{"bad variables", nil, []string{"DESTINATIONS_LOG_LEVEL=loud", "DESTINATIONS_ATTEMPT_RETENTION=1m"}, 2, []string{"DESTINATIONS_LOG_LEVEL must be", "DESTINATIONS_ATTEMPT_RETENTION must be at least 1h"}},
		{"missing file", nil, []string{"DESTINATIONS_FILE=" + filepath.Join(dir, "none.yaml")}, 2, []string{"none.yaml"}},
		{"invalid file", nil, []string{"DESTINATIONS_FILE=" + bad}, 2, []string{`destination "billing": url:`, `destination "billing": secret_env`, "NOT_SET_ANYWHERE"}},
		{"check a valid file", []string{"check"}, []string{"DESTINATIONS_FILE=" + file(t, filepath.Join(dir, "valid.yaml"), "http://127.0.0.1:1/", "http://127.0.0.1:2/"), "DEST_SECRET=" + secret}, 0, []string{"valid.yaml: 2 destinations, valid", "d0: paddle.>; the stream's whole retained history, then every new event (start: all)"}},
		{"check an invalid file", []string{"check"}, []string{"DESTINATIONS_FILE=" + bad}, 2, []string{`destination "billing": url:`}},
		{"pool smaller than the workers", []string{"check"}, []string{"DESTINATIONS_FILE=" + file(t, filepath.Join(dir, "three.yaml"), "http://127.0.0.1:1/", "http://127.0.0.1:2/", "http://127.0.0.1:3/"), "DEST_SECRET=" + secret, "DESTINATIONS_DATABASE_MAX_CONNS=4"},
			2, []string{"DESTINATIONS_DATABASE_MAX_CONNS (4) must be at least the number of destinations + 2 (5)"}},
		{"retention below a horizon", nil, []string{"DESTINATIONS_FILE=" + file(t, filepath.Join(dir, "ok.yaml"), "http://127.0.0.1:1/"), "DEST_SECRET=" + secret, "DESTINATIONS_ATTEMPT_RETENTION=2h"}, 2,
			[]string{`DESTINATIONS_ATTEMPT_RETENTION (2h0m0s) is shorter than destination "d0"'s retry_for (72h0m0s)`}},
	})
}

// TestSIGHUPReloads: SIGHUP applies an edited file (a destination added
// starts delivering), refuses a broken one and keeps delivering with the
// running set; SIGTERM then exits 0.
func TestSIGHUPReloads(t *testing.T) {
	env := subtest.NewParallel(t)
	var got [2]atomic.Int64
	recv := func(i int) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("webhook-signature") != "" {
				got[i].Add(1)
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(s.Close)
		return s
	}
	r0, r1 := recv(0), recv(1)
	path := file(t, filepath.Join(t.TempDir(), "destinations.yaml"), r0.URL)
	p := env.StartService(t, "DESTINATIONS", "DESTINATIONS_FILE="+path, "DEST_SECRET="+secret)
	publish := func(id string) {
		env.Publish(t, subtest.PaddleSubscription(t, id, schema.PaddleSubscriptionCreated, time.Now(), "sub_"+id, "ctm_"+id, nil))
	}
	publish("evt_1")
	require.Eventually(t, func() bool { return got[0].Load() == 1 }, subtest.Timeout, subtest.Tick, p.Output())

	file(t, path, r0.URL, r1.URL)
	p.Signal(t, syscall.SIGHUP)
	p.WaitOutput(t, `msg="destination started" service=destinations destination=d1`)
	p.WaitOutput(t, `msg="destinations file reloaded" service=destinations destinations=2`)
	require.Eventually(t, func() bool { return got[1].Load() == 1 }, subtest.Timeout, subtest.Tick, "d1 delivers the stream from its start: %s", p.Output())

	require.NoError(t, os.WriteFile(path, []byte("destinations:\n  - name: d0\n    url: nope\n"), 0o600))
	p.Signal(t, syscall.SIGHUP)
	p.WaitOutput(t, "destinations file refused")
	publish("evt_2")
	require.Eventually(t, func() bool { return got[0].Load() == 2 && got[1].Load() == 2 }, subtest.Timeout, subtest.Tick, "the running set keeps delivering: %s", p.Output())

	p.Terminate(t)
	require.Equal(t, 0, p.ExitCode(t), p.Output())
	require.Contains(t, p.Output(), "exited cleanly")
}

// TestOneBrokenDestinationKeepsHealthz: a destination that cannot start
// (its name is a schema of other tables) leaves /healthz 200 and the
// other destination delivering; /readyz answers 503 naming it, and
// hookhub_destination_ready is 0 for it, 1 for the other.
func TestOneBrokenDestinationKeepsHealthz(t *testing.T) {
	env := subtest.NewParallel(t)
	_, err := env.Pool.Exec(context.Background(), `CREATE SCHEMA d1; CREATE TABLE d1.not_a_destination (id int)`)
	require.NoError(t, err)
	var got atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	path := file(t, filepath.Join(t.TempDir(), "destinations.yaml"), s.URL, s.URL)
	p := env.StartService(t, "DESTINATIONS", "DESTINATIONS_FILE="+path, "DEST_SECRET="+secret)
	p.WaitOutput(t, `msg="serving metrics and health"`)
	m := regexp.MustCompile(`msg="serving metrics and health" service=destinations addr=(\S+)`).FindStringSubmatch(p.Output())
	require.NotNil(t, m, p.Output())
	base := "http://" + m[1]
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.Eventually(t, func() bool {
		code, body := get("/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, `"destination":"d0","ready":true`) && strings.Contains(body, `"destination":"d1","ready":false`)
	}, subtest.Timeout, subtest.Tick, p.Output())
	code, body := get("/healthz")
	require.Equal(t, http.StatusOK, code, body)
	env.Publish(t, subtest.PaddleSubscription(t, "evt_ok", schema.PaddleSubscriptionCreated, time.Now(), "sub_1", "ctm_1", nil))
	require.Eventually(t, func() bool { return got.Load() == 1 }, subtest.Timeout, subtest.Tick, p.Output())
	_, metrics := get("/metrics")
	require.Contains(t, metrics, `hookhub_destination_ready{destination="d0"} 1`)
	require.Contains(t, metrics, `hookhub_destination_ready{destination="d1"} 0`)
	p.Terminate(t)
	require.Equal(t, 0, p.ExitCode(t), p.Output())
}

// TestCheckRefusesATakenName: `destinations check` refuses a destination
// whose name is a schema of the database holding another subscriber's
// tables, naming it and the field; without a reachable database it says
// the names were not checked there.
func TestCheckRefusesATakenName(t *testing.T) {
	env := subtest.NewParallel(t)
	_, err := env.Pool.Exec(context.Background(), `CREATE SCHEMA d1; CREATE TABLE d1.processed_messages (id int)`)
	require.NoError(t, err)
	path := file(t, filepath.Join(t.TempDir(), "destinations.yaml"), "http://127.0.0.1:1/", "http://127.0.0.1:2/")
	p := hubtest.StartMain(t, append(env.ServiceEnv("DESTINATIONS"), "DESTINATIONS_FILE="+path, "DEST_SECRET="+secret), "check")
	require.Equal(t, 2, p.ExitCode(t), p.Output())
	require.Contains(t, p.Output(), `destination "d1": name: "d1" is a schema of this database holding tables that are not a destination's`)
	require.NotContains(t, p.Output(), `destination "d0"`)

	p = hubtest.StartMain(t, []string{"DESTINATIONS_FILE=" + path, "DEST_SECRET=" + secret, "DESTINATIONS_DATABASE_URL=postgres://nobody@127.0.0.1:1/none"}, "check")
	require.Equal(t, 0, p.ExitCode(t), p.Output())
	require.Contains(t, p.Output(), "the names were not checked against its schemas")
}
