package destination_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/destination/internal/receivertest"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Fault tests: real Postgres, embedded
// JetStream and real HTTP receivers; the faults are the receivers'.

// endpoint is a receiver's handler the test switches between answering
// 2xx and failing, counting requests, concurrency and the 2xx answers
// per webhook-id (a receiver deduplicating on it).
type endpoint struct {
	fail     atomic.Int32 // status answered while non-zero
	requests atomic.Int64
	inFlight atomic.Int64
	maxIn    atomic.Int64
	// block, when set, is called before answering (under no lock).
	block func(r *http.Request)

	mu       sync.Mutex
	accepted map[string]int // webhook-id → 2xx answers
	order    []string       // webhook-ids in the order of their first 2xx
	ids      map[string][]string
}

func newEndpoint() *endpoint {
	return &endpoint{accepted: map[string]int{}, ids: map[string][]string{}}
}

func (e *endpoint) serve(w http.ResponseWriter, r *http.Request) {
	e.requests.Add(1)
	n := e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	for {
		m := e.maxIn.Load()
		if n <= m || e.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get(destination.HeaderWebhookID)
	var env struct {
		Data struct {
			EventID string `json:"event_id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &env)
	e.mu.Lock()
	e.ids[env.Data.EventID] = append(e.ids[env.Data.EventID], id)
	e.mu.Unlock()
	if e.block != nil {
		e.block(r)
		if r.Context().Err() != nil {
			return
		}
	}
	if s := e.fail.Load(); s != 0 {
		w.WriteHeader(int(s))
		return
	}
	e.mu.Lock()
	if e.accepted[id] == 0 {
		e.order = append(e.order, id)
	}
	e.accepted[id]++
	e.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// acceptedCount is the number of webhook-ids answered 2xx.
func (e *endpoint) acceptedCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.accepted)
}

// duplicates lists the webhook-ids answered 2xx more than once.
func (e *endpoint) duplicates() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for id, n := range e.accepted {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s×%d", id, n))
		}
	}
	slices.Sort(out)
	return out
}

func (e *endpoint) firstOrder() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.order)
}

// goEndpoint is a Go receiver (verifying the signature of every request)
// answering with a fresh endpoint.
func goEndpoint(t *testing.T) (*receivertest.GoReceiver, *endpoint) {
	rcv := receivertest.Go(t, testSecret)
	e := newEndpoint()
	rcv.Control(t, receivertest.Control{Handler: e.serve})
	return rcv, e
}

// checkVerified fails t for every request that did not verify.
func checkVerified(t *testing.T, rcv receivertest.Receiver) {
	t.Helper()
	for _, r := range rcv.Received(t) {
		if !r.VerifiedStd {
			t.Errorf("%s: a request whose signature does not verify: %+v", r.ID, r)
		}
	}
}

// metric returns the value of the series name{labels} in reg (0 when absent).
func metric(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func attempts(t *testing.T, h *harness, dest, webhookID string) []destination.Attempt {
	t.Helper()
	prov, eventID, _ := strings.Cut(webhookID, ":")
	as, err := deststate.AttemptsFor(context.Background(), h.env.Pool, dest, prov, eventID, 100)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// smallPool is a pool of n connections to h's database.
func smallPool(t *testing.T, h *harness, n int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(h.env.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = n
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func deadLetters(t *testing.T, h *harness, dest string) int64 {
	t.Helper()
	n, err := subscriber.CountWaitingDeadLetters(context.Background(), h.env.Pool, dest)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRetriesUntilAccepted: an endpoint answering 500 three times per
// event, then 200 → each event accepted exactly once, its attempt log
// showing the three failures then the delivery, every attempt under the
// same webhook-id with a timestamp of its own time.
func TestRetriesUntilAccepted(t *testing.T) {
	t.Parallel()
	rcv := receivertest.Go(t, testSecret)
	rcv.Control(t, receivertest.Control{FailFirst: 3})
	h := newHarness(t)
	const name = "retry_dest"
	o := h.options(t)
	// A pool no larger than the concurrency: the handlers, each holding
	// its transaction's connection, must never wait for another one.
	o.Pool = smallPool(t, h, 4)
	// Every event fails 3 times: to the circuit that is an outage, whose
	// probes would space the retries (TestOutageOpensCircuitWithoutDeadLetters).
	o.Circuit.Threshold = 1000
	h.start(t, spec(t, name, rcv.URL()+"/hooks", "concurrency: 4\n"), o)
	begin := time.Now()
	ids := h.publish(t, "retry", 20)
	eventually(t, "20 events accepted", func() bool { return rcv.Accepted(t) == 20 })
	end := time.Now()
	// The receiver's 200 is sent before the destination commits its
	// delivered attempt: wait for every attempt log to be whole.
	eventually(t, "every attempt recorded", func() bool {
		for _, id := range ids {
			if len(attempts(t, h, name, id)) < 4 {
				return false
			}
		}
		return true
	})

	byID := map[string][]receivertest.Received{}
	for _, r := range rcv.Received(t) {
		byID[r.ID] = append(byID[r.ID], r)
	}
	for _, id := range ids {
		got := byID[id]
		var statuses []int
		for _, r := range got {
			statuses = append(statuses, r.Status)
			if !r.VerifiedStd || r.Duplicate || r.BodySHA256 != got[0].BodySHA256 {
				t.Errorf("%s: request not verified, a duplicate, or another body: %+v", id, r)
			}
		}
		if !slices.Equal(statuses, []int{500, 500, 500, 200}) {
			t.Errorf("%s: the receiver answered %v, want 500 500 500 200", id, statuses)
		}
		as := attempts(t, h, name, id)
		var log []string
		for _, a := range as {
			log = append(log, fmt.Sprintf("%s/%d", a.Outcome, a.Status))
		}
		if want := []string{"failed/500", "failed/500", "failed/500", "delivered/200"}; !slices.Equal(log, want) {
			t.Errorf("%s: attempt log %v, want %v", id, log, want)
			continue
		}
		if len(got) != len(as) {
			continue
		}
		for i, a := range as {
			// webhook-timestamp is the attempt's own time (the attempt log's),
			// not the first attempt's nor the event's.
			ts, err := strconv.ParseInt(got[i].Timestamp, 10, 64)
			if err != nil || ts < begin.Unix()-1 || ts > end.Unix()+1 || ts < a.At.Unix()-1 || ts > a.At.Unix()+1 {
				t.Errorf("%s attempt %d: webhook-timestamp %q, attempted at %s (test ran %s..%s)", id, i+1, got[i].Timestamp, a.At, begin, end)
			}
			if i > 0 && !a.At.After(as[i-1].At) {
				t.Errorf("%s: attempt %d at %s, not after the previous one (%s)", id, i+1, a.At, as[i-1].At)
			}
		}
	}
	if n := deadLetters(t, h, name); n != 0 {
		t.Errorf("%d dead letters", n)
	}
}

// TestOutageOpensCircuitWithoutDeadLetters: an endpoint down (503) while
// 200 events are published → the circuit opens, the requests during the
// outage stay few, nothing is dead-lettered; the endpoint back → the
// backlog drains, every event accepted once (in publish order for an
// ordered destination, which never sends two requests at once).
func TestOutageOpensCircuitWithoutDeadLetters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		extra       string
		concurrency int
		ordered     bool
	}{
		{"unordered", "concurrency: 4\n", 4, false},
		{"ordered", "ordered: true\n", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rcv, ep := goEndpoint(t)
			ep.fail.Store(http.StatusServiceUnavailable)
			h := newHarness(t)
			name := "outage_" + tc.name
			o := h.options(t)
			o.Circuit.Threshold = 5
			h.start(t, spec(t, name, rcv.URL()+"/hooks", tc.extra), o)
			down := time.Now()
			ids := h.publish(t, "out", 200)
			eventually(t, "the circuit opens", func() bool {
				return metric(t, h.reg, destination.MetricCircuitOpen, map[string]string{"destination": name}) == 1
			})
			time.Sleep(time.Second) // the outage goes on: few requests, no dead letter
			outage := time.Since(down)
			during := ep.requests.Load()
			// Before the circuit opens: Threshold failures, plus one request per
			// worker already admitted. Then one probe per cooldown at most (the
			// cooldown starts at Cooldown and doubles); twice that for margin.
			bound := int64(o.Circuit.Threshold + tc.concurrency + 2*int(outage/o.Circuit.Cooldown) + 2)
			t.Logf("%d requests during a %s outage (bound %d)", during, outage.Round(time.Millisecond), bound)
			if during > bound {
				t.Errorf("%d requests during a %s outage, want at most %d", during, outage, bound)
			}
			if during < int64(o.Circuit.Threshold) {
				t.Errorf("%d requests during the outage: the circuit opened before %d failures", during, o.Circuit.Threshold)
			}
			if n := deadLetters(t, h, name); n != 0 {
				t.Fatalf("%d dead letters during the outage", n)
			}
			if tc.ordered && ep.maxIn.Load() != 1 {
				t.Errorf("ordered: %d requests at once during the outage", ep.maxIn.Load())
			}

			ep.fail.Store(0)
			eventually(t, "the backlog drains", func() bool { return ep.acceptedCount() == len(ids) })
			if d := ep.duplicates(); len(d) > 0 {
				t.Errorf("accepted more than once: %v", d)
			}
			if n := deadLetters(t, h, name); n != 0 {
				t.Errorf("%d dead letters", n)
			}
			eventually(t, "the circuit closes", func() bool {
				return metric(t, h.reg, destination.MetricCircuitOpen, map[string]string{"destination": name}) == 0
			})
			if tc.ordered {
				if got := ep.firstOrder(); !slices.Equal(got, ids) {
					t.Errorf("ordered: first accepted in order\n%v\nwant\n%v", got, ids)
				}
				if ep.maxIn.Load() != 1 {
					t.Errorf("ordered: %d requests at once", ep.maxIn.Load())
				}
			}
			checkVerified(t, rcv)
		})
	}
}

// TestGoneDisables: 410 → the destination is disabled (state, metrics),
// sends nothing more and dead-letters nothing; resumed (what `hub
// destinations resume` does) with the endpoint back → everything delivered.
func TestGoneDisables(t *testing.T) {
	t.Parallel()
	rcv := receivertest.Go(t, testSecret)
	// Slow enough that every worker has a request in flight when the
	// first 410 arrives.
	rcv.Control(t, receivertest.Control{Gone: true, Delay: 300 * time.Millisecond})
	h := newHarness(t)
	const name = "gone_dest"
	h.start(t, spec(t, name, rcv.URL()+"/hooks", "concurrency: 4\n"), h.options(t))
	ctx := context.Background()
	ids := h.publish(t, "gone", 10)
	eventually(t, "the destination is disabled", func() bool {
		s, _, err := destination.GetState(ctx, h.env.Pool, name)
		return err == nil && s == destination.StateDisabled
	})
	eventually(t, "the metrics say disabled", func() bool {
		return metric(t, h.reg, destination.MetricState, map[string]string{"destination": name, "state": "disabled"}) == 1
	})
	_, reason, err := destination.GetState(ctx, h.env.Pool, name)
	if err != nil || !strings.Contains(reason, "410") {
		t.Errorf("disabled for reason %q (%v), want one naming the 410", reason, err)
	}
	for _, s := range []string{"active", "paused"} {
		if v := metric(t, h.reg, destination.MetricState, map[string]string{"destination": name, "state": s}); v != 0 {
			t.Errorf("state %s = %v while disabled", s, v)
		}
	}
	seen := len(rcv.Received(t))
	time.Sleep(time.Second) // nothing is sent while disabled
	if n := len(rcv.Received(t)); n != seen {
		t.Errorf("%d requests while disabled (after %d)", n-seen, seen)
	}
	// Counted once per disabling, not once per 410 of the requests in flight.
	if v := metric(t, h.reg, destination.MetricDisabled, map[string]string{"destination": name}); v != 1 {
		t.Errorf("%s = %v, want 1", destination.MetricDisabled, v)
	}
	if n := deadLetters(t, h, name); n != 0 {
		t.Errorf("%d dead letters", n)
	}

	rcv.Control(t, receivertest.Control{})
	if _, err := deststate.SetState(ctx, h.env.Pool, name, destination.StateActive, "resumed by the test"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every event delivered after resume", func() bool { return rcv.Accepted(t) == len(ids) })
	if v := metric(t, h.reg, destination.MetricState, map[string]string{"destination": name, "state": "active"}); v != 1 {
		t.Errorf("state active = %v after resume", v)
	}
	for _, r := range rcv.Received(t) {
		if r.Duplicate {
			t.Errorf("%s accepted twice", r.ID)
		}
	}
	if n := deadLetters(t, h, name); n != 0 {
		t.Errorf("%d dead letters", n)
	}
}

// TestEachAttemptIsBounded: whatever the endpoint does, an attempt ends
// within the destination's timeout, is recorded with a status or an error
// and a short, clean response snippet, and the destination goes on.
func TestEachAttemptIsBounded(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	hugeHeaders := func(w http.ResponseWriter, _ *http.Request) {
		big := strings.Repeat("h", 1<<20)
		for i := range 10 {
			w.Header().Set(fmt.Sprintf("X-Big-%d", i), big)
		}
		w.WriteHeader(http.StatusOK)
	}
	garbage := func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		for range 256 {
			_, _ = w.Write([]byte("\x00\xff\xfe\xc3(\xed\xa0\x80ok\x00"))
		}
	}
	slowDrip := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			_ = http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	for _, tc := range []struct {
		name string
		c    receivertest.Control
		// delivered: the fault is an answer the destination accepts: a
		// 2xx status, whose body it stops reading at its cap or its
		// timeout (the status is the answer; sending again would repeat
		// an event the endpoint took).
		delivered bool
	}{
		{"slow answer", receivertest.Control{Delay: 3 * timeout}, false},
		{"hanging", receivertest.Control{Hang: true}, false},
		{"endless body", receivertest.Control{EndlessBody: true}, true},
		{"slow-drip body", receivertest.Control{Handler: slowDrip}, true},
		{"redirect loop", receivertest.Control{RedirectLoop: true}, false},
		{"10 MiB of headers", receivertest.Control{Handler: hugeHeaders}, false},
		{"NUL and invalid UTF-8 body", receivertest.Control{Handler: garbage}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rcv := receivertest.Go(t, testSecret)
			rcv.Control(t, tc.c)
			h := newHarness(t)
			const name = "bounded_dest"
			h.start(t, spec(t, name, rcv.URL()+"/hooks", fmt.Sprintf("timeout: %s\nconcurrency: 4\n", timeout)), h.options(t))
			ids := h.publish(t, "slow", 3)
			eventually(t, "an attempt of each event recorded", func() bool {
				for _, id := range ids {
					if len(attempts(t, h, name, id)) == 0 {
						return false
					}
				}
				return true
			})
			if !tc.delivered {
				rcv.Control(t, receivertest.Control{})
			}
			eventually(t, "every event delivered", func() bool {
				for _, id := range ids {
					as := attempts(t, h, name, id)
					if len(as) == 0 || as[len(as)-1].Outcome != destination.OutcomeDelivered {
						return false
					}
				}
				return true
			})
			const margin = 750 * time.Millisecond // a loaded machine, -race
			for _, id := range ids {
				as := attempts(t, h, name, id)
				if !tc.delivered && (len(as) < 2 || as[0].Outcome != destination.OutcomeFailed) {
					t.Errorf("%s: attempts %+v, want a failure then a delivery", id, as)
				}
				for i, a := range as {
					t.Logf("%s attempt %d: %s status %d in %s, error %q, response %q", id, i+1, a.Outcome, a.Status, a.Latency, a.Error, a.Response)
					if a.Latency > timeout+margin {
						t.Errorf("%s attempt %d took %s, past the %s timeout", id, i+1, a.Latency, timeout)
					}
					if a.Outcome == destination.OutcomeFailed && a.Status == 0 && a.Error == "" {
						t.Errorf("%s attempt %d failed with neither a status nor an error", id, i+1)
					}
					if len(a.Response) > destination.MaxResponseSnippet || !utf8.ValidString(a.Response) || strings.ContainsRune(a.Response, 0) {
						t.Errorf("%s attempt %d: response snippet of %d bytes, not clean: %q", id, i+1, len(a.Response), a.Response)
					}
					if !utf8.ValidString(a.Error) || strings.ContainsRune(a.Error, 0) {
						t.Errorf("%s attempt %d: error not clean: %q", id, i+1, a.Error)
					}
				}
			}
			if n := deadLetters(t, h, name); n != 0 {
				t.Errorf("%d dead letters", n)
			}
		})
	}
}

// destinationsFile writes a destinations file of one destination into a
// temporary directory and returns its path.
func destinationsFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// processEnv is the environment of a destinations process on h.
func processEnv(h *harness, file string) []string {
	return append(h.env.ServiceEnv("DESTINATIONS"),
		"DESTINATIONS_FILE="+file,
		testSecretEnv+"="+testSecret,
		"DESTINATIONS_SHUTDOWN_TIMEOUT=5s")
}

// TestKilledMidPOST: the destinations process SIGKILLed while a POST is
// in flight → restarted, it delivers every event; the deliveries the
// receiver saw twice carry the same webhook-id and verify.
func TestKilledMidPOST(t *testing.T) {
	t.Parallel()
	bin := hubtest.Build(t, "./cmd/destinations")
	rcv, ep := goEndpoint(t)
	const blockAt = 8
	blocked := make(chan struct{})
	release := make(chan struct{})
	var nth atomic.Int64
	var killedID atomic.Value // webhook-id of the POST in flight when killed
	ep.block = func(r *http.Request) {
		if nth.Add(1) != blockAt {
			return
		}
		killedID.Store(r.Header.Get(destination.HeaderWebhookID))
		close(blocked)
		select {
		case <-release:
		case <-r.Context().Done(): // the process died
		}
	}
	h := newHarness(t)
	const name = "killed_dest"
	file := destinationsFile(t, fmt.Sprintf("destinations:\n  - name: %s\n    url: %s/hooks\n    subjects: [\"paddle.>\"]\n    secret_env: %s\n    timeout: 1s\n    concurrency: 4\n    start: all\n", name, rcv.URL(), testSecretEnv))
	ids := h.publish(t, "kill", 30)
	p := hubtest.StartBinary(t, bin, processEnv(h, file))
	select {
	case <-blocked:
	case <-time.After(subtest.Timeout):
		t.Fatalf("the %dth request never came; output:\n%s", blockAt, p.Output())
	}
	p.Signal(t, syscall.SIGKILL)
	if code := p.ExitCode(t); code != -1 {
		t.Fatalf("exit code %d after SIGKILL", code)
	}
	close(release)

	p2 := hubtest.StartBinary(t, bin, processEnv(h, file))
	eventually(t, "every event accepted after the restart", func() bool { return ep.acceptedCount() == len(ids) })
	p2.Terminate(t)
	if code := p2.ExitCode(t); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
	}

	ep.mu.Lock()
	defer ep.mu.Unlock()
	twice := 0
	for _, id := range ids {
		eventID := strings.TrimPrefix(id, "paddle:")
		got := ep.ids[eventID]
		if len(got) == 0 {
			t.Errorf("%s never received", id)
		}
		if len(got) > 1 {
			twice++
		}
		for _, g := range got {
			if g != id {
				t.Errorf("event %s delivered under webhook-id %q, want %q (deliveries: %v)", eventID, g, id, got)
			}
		}
	}
	killed, _ := killedID.Load().(string)
	if got := ep.ids[strings.TrimPrefix(killed, "paddle:")]; len(got) < 2 {
		t.Errorf("the POST in flight when the process was killed (%q) was received %d times, want again after the restart", killed, len(got))
	}
	t.Logf("%d events received more than once", twice)
	checkVerified(t, rcv)
}

// TestProcessSIGTERMExitsZero: the destinations process stops gracefully
// on SIGTERM.
func TestProcessSIGTERMExitsZero(t *testing.T) {
	t.Parallel()
	bin := hubtest.Build(t, "./cmd/destinations")
	rcv := receivertest.Go(t, testSecret)
	h := newHarness(t)
	file := destinationsFile(t, fmt.Sprintf("destinations:\n  - name: term_dest\n    url: %s/hooks\n    subjects: [\"paddle.>\"]\n    secret_env: %s\n    start: all\n", rcv.URL(), testSecretEnv))
	p := hubtest.StartBinary(t, bin, processEnv(h, file))
	h.publish(t, "term", 3)
	eventually(t, "3 events accepted", func() bool { return rcv.Accepted(t) == 3 })
	p.Terminate(t)
	if code := p.ExitCode(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; output:\n%s", code, p.Output())
	}
	if !strings.Contains(p.Output(), "exited cleanly") {
		t.Errorf("output does not say it exited cleanly:\n%s", p.Output())
	}
}

// TestProcessRefusesInvalidFile: an invalid destinations file → exit 2,
// naming the destination and the field.
func TestProcessRefusesInvalidFile(t *testing.T) {
	t.Parallel()
	bin := hubtest.Build(t, "./cmd/destinations")
	file := destinationsFile(t, fmt.Sprintf("destinations:\n  - name: bad_dest\n    url: ftp://example.com/hooks\n    subjects: [\"paddle.>\"]\n    secret_env: %s\n", testSecretEnv))
	p := hubtest.StartBinary(t, bin, []string{
		"DESTINATIONS_FILE=" + file,
		testSecretEnv + "=" + testSecret,
		"DESTINATIONS_DATABASE_URL=postgres://127.0.0.1:1/none",
		"DESTINATIONS_NATS_URL=nats://127.0.0.1:1",
	})
	if code := p.ExitCode(t); code != 2 {
		t.Fatalf("exit code %d, want 2; output:\n%s", code, p.Output())
	}
	for _, want := range []string{`destination "bad_dest"`, "url"} {
		if !strings.Contains(p.Output(), want) {
			t.Errorf("output does not name %s:\n%s", want, p.Output())
		}
	}
}

// TestReplayResendsOnlyThatRange: a replay of stream sequences 3..6 to
// destination A sends those four events to A again, under the same
// webhook-ids, and nothing to B, which consumes the same subjects.
func TestReplayResendsOnlyThatRange(t *testing.T) {
	t.Parallel()
	rcvA, rcvB := receivertest.Go(t, testSecret), receivertest.Go(t, testSecret)
	h := newHarness(t)
	h.start(t, spec(t, "replay_a", rcvA.URL()+"/hooks", ""), h.options(t))
	h.start(t, spec(t, "replay_b", rcvB.URL()+"/hooks", ""), h.options(t))
	ids := h.publish(t, "rep", 10)
	eventually(t, "10 events accepted by both", func() bool { return rcvA.Accepted(t) == 10 && rcvB.Accepted(t) == 10 })
	if n := len(rcvA.Received(t)) + len(rcvB.Received(t)); n != 20 {
		t.Fatalf("%d requests before the replay, want 20", n)
	}

	// Copies of sequences 3..6 for A alone, as the hub's replay publishes them.
	for seq := uint64(3); seq <= 6; seq++ {
		h.env.PublishReplayCopy(t, "replay_a", seq, "run1")
	}
	eventually(t, "A receives the 4 events again", func() bool { return len(rcvA.Received(t)) >= 14 })
	time.Sleep(500 * time.Millisecond) // and nothing more, to A or B
	var again []string
	for _, r := range rcvA.Received(t)[10:] {
		again = append(again, r.ID)
		if !r.VerifiedStd || !r.Duplicate {
			t.Errorf("replayed %s: not verified or not seen before: %+v", r.ID, r)
		}
	}
	slices.Sort(again)
	if want := ids[2:6]; !slices.Equal(again, want) {
		t.Errorf("A received again %v, want %v", again, want)
	}
	if n := len(rcvB.Received(t)); n != 10 {
		t.Errorf("B received %d requests, want its 10 only", n)
	}
	if rcvA.Accepted(t) != 10 {
		t.Errorf("A accepted %d distinct events, want 10", rcvA.Accepted(t))
	}
}

// TestReloadAppliesTheFile: Service.Reload starts an added destination,
// restarts a changed one (to its new URL), stops a removed one, and
// refuses a broken file (naming the destination and the field) while the
// running set goes on delivering.
func TestReloadAppliesTheFile(t *testing.T) {
	t.Parallel()
	rcvOne, rcvTwo, rcvNew := receivertest.Go(t, testSecret), receivertest.Go(t, testSecret), receivertest.Go(t, testSecret)
	h := newHarness(t)
	path := filepath.Join(t.TempDir(), "destinations.yaml")
	entry := func(name, url string) string {
		return fmt.Sprintf("  - name: %s\n    url: %s/hooks\n    subjects: [\"paddle.>\"]\n    secret_env: %s\n    timeout: 2s\n    start: all\n", name, url, testSecretEnv)
	}
	write := func(entries ...string) {
		t.Helper()
		if err := os.WriteFile(path, []byte("destinations:\n"+strings.Join(entries, "")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	getenv := func(k string) (string, bool) {
		if k == testSecretEnv {
			return testSecret, true
		}
		return "", false
	}
	svc := destination.NewService(h.options(t), func() ([]destination.Destination, error) { return destination.Load(path, getenv) })
	write(entry("one", rcvOne.URL()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	names := func() string { return strings.Join(svc.Names(), ",") }
	eventually(t, "one runs", func() bool { return names() == "one" && svc.Healthy() == nil })
	h.publish(t, "a", 3)
	eventually(t, "one delivers", func() bool { return rcvOne.Accepted(t) == 3 })

	// Added.
	write(entry("one", rcvOne.URL()), entry("two", rcvTwo.URL()))
	if err := svc.Reload(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "two runs", func() bool { return names() == "one,two" })
	h.publish(t, "b", 3)
	eventually(t, "both deliver", func() bool { return rcvOne.Accepted(t) == 6 && rcvTwo.Accepted(t) == 6 })

	// Changed: two now posts to the new receiver.
	write(entry("one", rcvOne.URL()), entry("two", rcvNew.URL()))
	if err := svc.Reload(); err != nil {
		t.Fatal(err)
	}
	h.publish(t, "c", 2)
	eventually(t, "two delivers to its new URL", func() bool { return rcvOne.Accepted(t) == 8 && rcvNew.Accepted(t) == 2 })
	if n := rcvTwo.Accepted(t); n != 6 {
		t.Errorf("the old URL of two accepted %d, want 6 (none after the change)", n)
	}

	// Removed.
	write(entry("one", rcvOne.URL()))
	if err := svc.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := names(); got != "one" {
		t.Errorf("running %q after removing two", got)
	}
	h.publish(t, "d", 2)
	eventually(t, "one delivers", func() bool { return rcvOne.Accepted(t) == 10 })
	time.Sleep(300 * time.Millisecond) // two sends nothing more
	if n := len(rcvNew.Received(t)); n != 2 {
		t.Errorf("two, removed, sent %d requests in all, want 2", n)
	}

	// Broken: refused, naming the destination and the field; one runs on.
	if err := os.WriteFile(path, []byte("destinations:\n"+strings.Replace(entry("one", rcvOne.URL()), "url: http", "url: ftp", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	err := svc.Reload()
	if err == nil || !errors.Is(err, destination.ErrInvalidFile) || !strings.Contains(err.Error(), `destination "one"`) || !strings.Contains(err.Error(), "url") {
		t.Fatalf("Reload of a broken file: %v, want an error naming destination \"one\" and url", err)
	}
	if got := names(); got != "one" {
		t.Errorf("running %q after a refused reload", got)
	}
	h.publish(t, "e", 2)
	eventually(t, "one goes on delivering", func() bool { return rcvOne.Accepted(t) == 12 })
	if v := metric(t, h.reg, destination.MetricReloads, map[string]string{"result": "error"}); v != 1 {
		t.Errorf("%s{result=error} = %v, want 1", destination.MetricReloads, v)
	}
}

// TestPausedSendsNothing: a destination paused (`hub destinations pause`)
// while its workers wait idle for messages sends nothing more, even with
// those workers admitted before the pause; resumed, it delivers.
func TestPausedSendsNothing(t *testing.T) {
	t.Parallel()
	rcv := receivertest.Go(t, testSecret)
	h := newHarness(t)
	const name = "paused_dest"
	h.start(t, spec(t, name, rcv.URL()+"/hooks", "concurrency: 4\n"), h.options(t))
	ctx := context.Background()
	h.publish(t, "before", 1)
	eventually(t, "the first event accepted", func() bool { return rcv.Accepted(t) == 1 })
	if _, err := deststate.SetState(ctx, h.env.Pool, name, destination.StatePaused, "paused by the test"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the runner sees the pause", func() bool {
		return metric(t, h.reg, destination.MetricState, map[string]string{"destination": name, "state": "paused"}) == 1
	})
	h.publish(t, "paused", 4)
	time.Sleep(time.Second) // nothing is sent while paused
	if n := len(rcv.Received(t)); n != 1 {
		t.Errorf("%d requests while paused", n-1)
	}
	if _, err := deststate.SetState(ctx, h.env.Pool, name, destination.StateActive, "resumed by the test"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every event delivered after resume", func() bool { return rcv.Accepted(t) == 5 })
	if n := deadLetters(t, h, name); n != 0 {
		t.Errorf("%d dead letters", n)
	}
}
