package destination_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/destination/internal/receivertest"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
)

// testSecretEnv is the variable the test destinations name in secret_env.
const testSecretEnv = "TEST_DESTINATION_SECRET"

// spec is a destinations file entry for a test; extra is YAML appended
// to it ("ordered: true\n"). The timeout is 2s unless extra sets one.
func spec(t testing.TB, name, url, extra string, subjects ...string) destination.Destination {
	t.Helper()
	if len(subjects) == 0 {
		subjects = []string{"paddle.>"}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "destinations:\n  - name: %s\n    url: %s\n    secret_env: %s\n    subjects: [%s]\n", name, url, testSecretEnv, strings.Join(subjects, ", "))
	if !strings.HasPrefix(extra, "timeout:") && !strings.Contains(extra, "\ntimeout:") {
		b.WriteString("    timeout: 2s\n")
	}
	for line := range strings.Lines(extra) {
		b.WriteString("    " + line)
	}
	set, err := destination.Parse([]byte(b.String()), func(k string) (string, bool) {
		if k == testSecretEnv {
			return testSecret, true
		}
		return "", false
	})
	if err != nil {
		t.Fatalf("destinations file:\n%s\n%v", b.String(), err)
	}
	return set[0]
}

// harness is a destination running on a test's real Postgres and JetStream.
type harness struct {
	env     *subtest.Env
	metrics *destination.Metrics
	reg     *prometheus.Registry
}

func newHarness(t testing.TB) *harness {
	reg := prometheus.NewRegistry()
	return &harness{env: subtest.New(t), metrics: destination.NewMetrics(reg), reg: reg}
}

// options are test-friendly: short retries and circuit cooldowns.
func (h *harness) options(t testing.TB) destination.Options {
	return destination.Options{
		Pool:            h.env.Pool,
		JetStream:       h.env.JS,
		Stream:          subtest.Stream,
		Metrics:         h.metrics,
		Registerer:      h.reg,
		Logger:          subtest.Logger(t),
		ShutdownTimeout: 10 * time.Second,
		RetryBase:       50 * time.Millisecond,
		RetryMax:        500 * time.Millisecond,
		Circuit:         destination.CircuitConfig{Cooldown: 100 * time.Millisecond, MaxCooldown: 500 * time.Millisecond},
	}
}

// start runs d until t ends; it returns a function stopping it early.
func (h *harness) start(t testing.TB, d destination.Destination, o destination.Options) (stop func() error) {
	t.Helper()
	r, err := destination.New(d, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var stopped bool
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = stop() })
	eventually(t, "the destination consumes", func() bool { return r.Healthy() == nil })
	return stop
}

// publish publishes n paddle events with ids prefix-0 ... and returns
// their webhook-ids, in order.
func (h *harness) publish(t testing.TB, prefix string, n int) []string {
	ids := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		h.env.Publish(t, subtest.PaddleSubscription(t, id, "subscription.created", time.Now(), "sub_"+id, "ctm_"+id, nil))
		ids[i] = "paddle:" + id
	}
	return ids
}

// eventually polls cond until it holds or subtest.Timeout passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	eventuallyWithin(t, subtest.Timeout, what, cond)
}

// eventuallyWithin is eventually with another deadline (longer, for the
// phases that handle 1,000 events one at a time).
func eventuallyWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	hubtest.Eventually(t, d, what, cond)
}

// TestDeliversEveryEvent: every event reaches a Node receiver once,
// verified by the official standardwebhooks and svix libraries, with
// webhook-id "<provider>:<event_id>", the hub headers and a delivered
// attempt on record.
func TestDeliversEveryEvent(t *testing.T) {
	t.Parallel()
	rcv := receivertest.Node(t, testSecret)
	h := newHarness(t)
	d := spec(t, "node_dest", rcv.URL()+"/hooks", "concurrency: 8\n")
	h.start(t, d, h.options(t))
	ids := h.publish(t, "evt", 40)
	eventually(t, "40 events accepted", func() bool { return rcv.Accepted(t) == 40 })
	got := map[string]receivertest.Received{}
	for _, r := range rcv.Received(t) {
		if !r.VerifiedStd || !r.VerifiedSvix {
			t.Errorf("%s not verified by both libraries: %+v", r.ID, r)
		}
		if r.Type != "paddle.subscription.created" || r.Headers["hookhub-provider"] != "paddle" || r.Headers["hookhub-event-type"] != "subscription.created" || r.Headers["hookhub-archive-id"] == "" {
			t.Errorf("%s: type or hub headers wrong: %+v", r.ID, r)
		}
		got[r.ID] = r
	}
	// The attempt log is written after the receiver answered: wait for it.
	eventually(t, "every attempt logged", func() bool {
		for _, id := range ids {
			prov, eventID, _ := strings.Cut(id, ":")
			if as, err := deststate.AttemptsFor(context.Background(), h.env.Pool, "node_dest", prov, eventID, 10); err != nil || len(as) == 0 {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		if _, ok := got[id]; !ok {
			t.Errorf("%s never received", id)
		}
		prov, eventID, _ := strings.Cut(id, ":")
		as, err := deststate.AttemptsFor(context.Background(), h.env.Pool, "node_dest", prov, eventID, 10)
		if err != nil || len(as) != 1 || as[0].Outcome != destination.OutcomeDelivered || as[0].Status != 200 {
			t.Errorf("%s attempts = %+v, %v; want one delivered 200", id, as, err)
		}
	}
}
