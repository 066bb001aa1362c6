package destination_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookhub/hookhub/subscribers/credits"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/destination/internal/receivertest"
	"github.com/hookhub/hookhub/subscribers/downgrade"
	"github.com/hookhub/hookhub/subscribers/email"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
)

// Credentials a destination is configured with, which an echoing receiver
// sends back.
const (
	staticBearer = "static-bearer-cr3d-0042"
	queryToken   = "qs3cr3t-t0ken-7781"
	pathToken    = "a1B2c3D4e5F6g7H8i9J0k1L2"
)

// echoServer answers every request with its Authorization, URI and
// signature (and anything else a debug receiver shows), failing the first
// fails requests of each event.
func echoServer(t *testing.T, fails int) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	seen := map[string]int{}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		id := r.Header.Get(destination.HeaderWebhookID)
		seen[id]++
		k := seen[id]
		mu.Unlock()
		status := http.StatusOK
		if k <= fails {
			status = http.StatusInternalServerError
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"authorization":%q,"uri":%q,"url":"http://%s%s","signature":%q,"bytes":%d}`,
			r.Header.Get("Authorization"), r.RequestURI, r.Host, r.RequestURI, r.Header.Get(destination.HeaderWebhookSignature), len(body))
		n.Add(1)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestAttemptLogHidesCredentials: a receiver echoing the Authorization
// value, the URL's query and path tokens and the signature, on a failed
// attempt and on the delivered one → the attempt log (what `hub events
// show`, the admin API and the console show, to any role) holds none of
// them, nor does the destination's registered URL; a row written before
// the fix is redacted when read.
func TestAttemptLogHidesCredentials(t *testing.T) {
	t.Parallel()
	srv, _ := echoServer(t, 1)
	h := newHarness(t)
	o := h.options(t)
	o.Circuit.Threshold = 1000
	url := srv.URL + "/services/T0ABCDEFG/B0ABCDEFG/" + pathToken + "?token=" + queryToken
	d := spec(t, "echo_dest", url, "headers: {Authorization: \"Bearer "+staticBearer+"\"}\n")
	h.start(t, d, o)
	ids := h.publish(t, "echo", 2)
	eventually(t, "each event failed once then delivered", func() bool {
		for _, id := range ids {
			if as := attempts(t, h, "echo_dest", id); len(as) < 2 || as[len(as)-1].Outcome != destination.OutcomeDelivered {
				return false
			}
		}
		return true
	})
	forbidden := []string{staticBearer, queryToken, pathToken}
	check := func(what, s string) {
		t.Helper()
		for _, f := range forbidden {
			if strings.Contains(s, f) {
				t.Errorf("%s shows %q: %s", what, f, s)
			}
		}
		if i := strings.Index(s, "v1,"); i >= 0 && !strings.HasPrefix(s[i:], "v1,[redacted]") {
			t.Errorf("%s shows a signature: %s", what, s)
		}
	}
	for _, id := range ids {
		for _, a := range attempts(t, h, "echo_dest", id) {
			if a.Response == "" || !strings.Contains(a.Response, "authorization") {
				t.Fatalf("the snippet was not kept: %+v", a)
			}
			check("attempt "+a.Outcome+" response", a.Response)
			check("attempt "+a.Outcome+" error", a.Error)
		}
	}
	var st destination.Status
	eventually(t, "the destination is registered", func() bool { // by the runner, beside the deliveries
		var err error
		st, err = destination.GetStatus(context.Background(), h.env.Pool, "echo_dest")
		if err != nil {
			t.Fatal(err)
		}
		return st.URL != ""
	})
	check("registered URL", st.URL)
	if !strings.Contains(st.URL, "/services/T0ABCDEFG/B0ABCDEFG/REDACTED?token=REDACTED") {
		t.Errorf("registered URL %q", st.URL)
	}

	// A row written unredacted (before this version) is redacted as read.
	if _, err := h.env.Pool.Exec(context.Background(), `INSERT INTO echo_dest.attempts (provider, event_id, attempted_at, status, latency_ms, outcome, error, response)
		VALUES ('paddle', 'legacy', now(), 500, 1, 'failed', '', $1)`, `{"authorization":"Bearer `+staticBearer+`","url":"`+url+`","sig":"v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="}`); err != nil {
		t.Fatal(err)
	}
	legacy, err := deststate.AttemptsFor(context.Background(), h.env.Pool, "echo_dest", "paddle", "legacy", 10)
	if err != nil || len(legacy) != 1 {
		t.Fatalf("legacy attempts = %v, %v", legacy, err)
	}
	check("legacy response", legacy[0].Response)
	recent, err := deststate.RecentAttempts(context.Background(), h.env.Pool, "echo_dest", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range recent {
		check("recent response", a.Response)
	}
}

// TestLinkLocalRefusedAtConnect: whatever name the URL gives, a dial to a
// link-local or metadata address is refused by the dialer (DNS may resolve
// a public name to 169.254.169.254), unless allow_link_local.
func TestLinkLocalRefusedAtConnect(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"http://169.254.169.254:9/latest/meta-data", "http://[fe80::1%25lo]:9/x"} {
		c := destination.NewClient(destination.ClientConfig{Timeout: 2 * time.Second, ConnectTimeout: 500 * time.Millisecond})
		res := c.Do(context.Background(), target, nil, []byte("{}"))
		if !errors.Is(res.Err, destination.ErrForbiddenAddress) {
			t.Errorf("%s: err = %v, want ErrForbiddenAddress", target, res.Err)
		}
		allowed := destination.NewClient(destination.ClientConfig{Timeout: 2 * time.Second, ConnectTimeout: 200 * time.Millisecond, AllowLinkLocal: true})
		if res := allowed.Do(context.Background(), target, nil, []byte("{}")); errors.Is(res.Err, destination.ErrForbiddenAddress) {
			t.Errorf("%s allowed: err = %v", target, res.Err)
		}
	}
	// A name resolving to a private address stays allowed (as documented).
	rcv := receivertest.Go(t, testSecret)
	c := destination.NewClient(destination.ClientConfig{Timeout: 5 * time.Second})
	if res := c.Do(context.Background(), strings.Replace(rcv.URL(), "127.0.0.1", "localhost", 1)+"/hooks", nil, []byte("{}")); errors.Is(res.Err, destination.ErrForbiddenAddress) {
		t.Errorf("loopback refused: %v", res.Err)
	}
}

// TestStartNewAndAll: a new destination with the default start receives
// only what is published after it starts; start: all receives the
// history first.
func TestStartNewAndAll(t *testing.T) {
	t.Parallel()
	rcvNew, rcvAll := receivertest.Go(t, testSecret), receivertest.Go(t, testSecret)
	h := newHarness(t)
	history := h.publish(t, "history", 3)
	h.start(t, spec(t, "start_new", rcvNew.URL()+"/hooks", ""), h.options(t))
	h.start(t, spec(t, "start_all", rcvAll.URL()+"/hooks", "start: all\n"), h.options(t))
	fresh := h.publish(t, "fresh", 2)
	eventually(t, "start_all gets history and new", func() bool { return rcvAll.Accepted(t) == len(history)+len(fresh) })
	eventually(t, "start_new gets the new ones", func() bool { return rcvNew.Accepted(t) >= len(fresh) })
	for _, r := range rcvNew.Received(t) {
		if strings.HasPrefix(r.ID, "paddle:history") {
			t.Errorf("start: new received history event %s", r.ID)
		}
	}
}

// TestEveryDocumentedFilterDelivers: each filter docs/destinations.md
// shows, "*.>" included, starts (JetStream accepts its consumer) and
// delivers the events it matches.
func TestEveryDocumentedFilterDelivers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for i, tc := range []struct {
		subjects []string
		want     int // of the 2 paddle + 2 clerk events published
	}{
		{[]string{`"*.>"`}, 4},
		{[]string{`"paddle.subscription.*"`, `"stripe.>"`}, 2},
		{[]string{`"paddle.subscription.created"`}, 2},
		{[]string{`"clerk.user.created"`, `"clerk.user.updated"`}, 2},
		{[]string{`"*.user.created"`}, 2},
	} {
		rcv := receivertest.Go(t, testSecret)
		name := fmt.Sprintf("filter_%d", i)
		h.start(t, spec(t, name, rcv.URL()+"/hooks", "", tc.subjects...), h.options(t))
		t.Cleanup(func() {
			if got := rcv.Accepted(t); got != tc.want {
				t.Errorf("%v: %d events delivered, want %d", tc.subjects, got, tc.want)
			}
		})
		defer func() {
			eventually(t, fmt.Sprintf("%v delivers %d", tc.subjects, tc.want), func() bool { return rcv.Accepted(t) >= tc.want })
		}()
	}
	h.publish(t, "p", 2)
	for i := range 2 {
		h.env.Publish(t, subtest.ClerkUserCreated(t, fmt.Sprintf("msg_c%d", i), fmt.Sprintf("user_%d", i), "a@example.com", time.Now()))
	}
}

// TestOneBrokenDestinationLeavesTheOthers: a destination that cannot
// start (its name is taken in Postgres by a schema of other tables) is
// reported not ready, by Ready and hookhub_destination_ready, while the
// process stays healthy and the other destination delivers.
func TestOneBrokenDestinationLeavesTheOthers(t *testing.T) {
	t.Parallel()
	rcv := receivertest.Go(t, testSecret)
	h := newHarness(t)
	if _, err := h.env.Pool.Exec(context.Background(), `CREATE SCHEMA taken; CREATE TABLE taken.someone_elses (id int)`); err != nil {
		t.Fatal(err)
	}
	set := []destination.Destination{spec(t, "good", rcv.URL()+"/hooks", ""), spec(t, "taken", rcv.URL()+"/hooks", "")}
	svc := destination.NewService(h.options(t), func() ([]destination.Destination, error) { return set, nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, nil) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	eventually(t, "good ready, taken not", func() bool {
		rs := svc.Readiness()
		return len(rs) == 2 && rs[0].Destination == "good" && rs[0].Ready && rs[1].Destination == "taken" && !rs[1].Ready
	})
	if err := svc.Healthy(); err != nil {
		t.Errorf("Healthy = %v, want nil: one destination is ready", err)
	}
	if err := svc.Ready(); err == nil || !strings.Contains(err.Error(), "taken") || strings.Contains(err.Error(), "good") {
		t.Errorf("Ready = %v, want taken's reason only", err)
	}
	if v := metric(t, h.reg, destination.MetricReady, map[string]string{"destination": "taken"}); v != 0 {
		t.Errorf("ready{taken} = %v", v)
	}
	if v := metric(t, h.reg, destination.MetricReady, map[string]string{"destination": "good"}); v != 1 {
		t.Errorf("ready{good} = %v", v)
	}
	h.publish(t, "ok", 3)
	eventually(t, "good delivers", func() bool { return rcv.Accepted(t) == 3 })
}

// TestBadFileListsEveryErrorInTheFilesWords: a file with a problem in
// many fields of several entries lists each, naming the destination and
// the field, and no message shows a Go type or a YAML internal.
func TestBadFileListsEveryErrorInTheFilesWords(t *testing.T) {
	src := `destinations:
  - name: a
    url: https://a.example/h
    subjects: {paddle: x}
    secret_env: [BILLING_SECRET, {x: 1}]
    concurrency: many
    ordered: perhaps
    rate_limit: [1]
    timeout: soon
    retry_for: {d: 1}
    headers: [X-A]
    start: tomorrow
    allow_link_local: 3
  - name: public
    url: http://169.254.169.254/
    subjects: ["*.>"]
    secret_env: BILLING_SECRET
    payload: [raw]
    bogus: 1
  - 7
`
	_, err := destination.Parse([]byte(src), testEnv)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []struct{ dest, field string }{
		{"a", "subjects"}, {"a", "secret_env"}, {"a", "concurrency"}, {"a", "ordered"}, {"a", "rate_limit"},
		{"a", "timeout"}, {"a", "retry_for"}, {"a", "headers"}, {"a", "start"}, {"a", "allow_link_local"},
		{"public", "name"}, {"public", "url"}, {"public", "payload"}, {"public", "bogus"}, {"#3", ""},
	} {
		if !hasFieldError(err, want.dest, want.field, "") {
			t.Errorf("no error for destination %s, field %s", want.dest, want.field)
		}
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		for _, goism := range []string{"[]string", "map[", "*url.URL", "time.Duration", "destination.", "yaml:", "!!", "unmarshal", "float64", "int64", " int", "bool", "StringList", "Spec"} {
			if strings.Contains(line, goism) {
				t.Errorf("%q in %q", goism, line)
			}
		}
	}
}

// The reserved names follow the hub's subscribers' own.
func TestReservedNamesAreTheSubscribers(t *testing.T) {
	for _, n := range []string{credits.Name, email.Name, downgrade.Name, "public", "information_schema"} {
		if _, ok := destination.ReservedNames[n]; !ok {
			t.Errorf("%s is not reserved", n)
		}
	}
}

// start: new is the default; all and an RFC 3339 time (quoted or not, as
// YAML reads a timestamp) are taken, and check says what each receives.
func TestStartValues(t *testing.T) {
	for _, tc := range []struct{ extra, start, receives string }{
		{"", destination.StartNew, "events published from its first start on (start: new)"},
		{"start: all\n", destination.StartAll, "the stream's whole retained history"},
		{"start: 2026-12-01T00:00:00Z\n", "2026-12-01T00:00:00Z", "the events published since 2026-12-01T00:00:00Z"},
		{"start: \"2026-12-01T10:00:00+01:00\"\n", "2026-12-01T10:00:00+01:00", "since 2026-12-01T10:00:00+01:00"},
	} {
		d := spec(t, "starts", "https://x.example/h", tc.extra)
		if d.Start != tc.start || !strings.Contains(d.Receives(), tc.receives) || !strings.HasPrefix(d.Receives(), "starts: paddle.>; ") {
			t.Errorf("%q: start %q, receives %q", tc.extra, d.Start, d.Receives())
		}
		if _, err := destination.ParseStart(d.Start); err != nil {
			t.Error(err)
		}
	}
}
