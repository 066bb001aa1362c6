package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// cliCase is one command line and what it must print and exit with.
type cliCase struct {
	args []string
	code int
	out  []string // each expected in stdout
	err  string   // expected in stderr
	not  []string // none of these anywhere in stdout or stderr
}

func runCases(t *testing.T, cases []cliCase) {
	t.Helper()
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, &stdout, &stderr)
		require.Equal(t, c.code, code, "%q\nstdout: %s\nstderr: %s", c.args, stdout.String(), stderr.String())
		for _, o := range c.out {
			require.Contains(t, stdout.String(), o, "%q", c.args)
		}
		require.Contains(t, stderr.String(), c.err, "%q", c.args)
		for _, n := range c.not {
			require.NotContains(t, stdout.String()+stderr.String(), n, "%q", c.args)
		}
		if slices.Contains(c.args, "--json") && code == 0 {
			for line := range strings.Lines(stdout.String()) {
				require.True(t, json.Valid([]byte(line)), "--json prints JSON only on stdout, got %q", line)
			}
		}
		if code == 2 {
			require.Empty(t, stdout.String(), "%q: a usage error prints on stderr only", c.args)
		}
	}
}

// TestDestinationsCommands: list, status, pause and resume on real
// Postgres and JetStream, as an operator calls them.
func TestDestinationsCommands(t *testing.T) {
	pool, n := natsEnv(t)
	ctx := context.Background()

	// Two destinations' tables, as their runners create them, and the
	// stream with billing's consumer holding a backlog of 3.
	for _, name := range []string{"billing", "crm"} {
		require.NoError(t, subscriber.Migrate(ctx, pool, name, destination.Migrations(name)))
	}
	require.NoError(t, subscriber.Migrate(ctx, pool, "plain", nil)) // a subscriber, not a destination
	require.NoError(t, destination.Register(ctx, pool, "billing", "https://billing.internal/hooks", []string{"paddle.subscription.*"}))
	require.NoError(t, destination.Register(ctx, pool, "crm", "https://crm.internal/in", []string{"paddle.>"}))
	now := time.Now()
	for i, a := range []destination.Attempt{
		{Provider: "paddle", EventID: "evt_1", Status: 503, Latency: 80 * time.Millisecond, Outcome: destination.OutcomeFailed, Error: "HTTP 503", Response: "busy\x1b[2J"},
		{Provider: "paddle", EventID: "evt_1", Status: 200, Latency: 20 * time.Millisecond, Outcome: destination.OutcomeDelivered},
		{Provider: "paddle", EventID: "evt_2", Latency: 5 * time.Second, Outcome: destination.OutcomeFailed, Error: "attempt timed out"},
	} {
		a.Destination, a.At = "billing", now.Add(time.Duration(i-3)*time.Minute)
		require.NoError(t, deststate.RecordAttempt(ctx, pool, a))
	}
	_, err := deststate.SetState(ctx, pool, "crm", destination.StateDisabled, "410 Gone from the endpoint at 2026-12-03T10:00:00Z")
	require.NoError(t, err)
	_, js := n.Connect(t)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: schema.DefaultStream, Subjects: []string{"paddle.>"}})
	require.NoError(t, err)
	_, err = js.CreateOrUpdateConsumer(ctx, schema.DefaultStream, jetstream.ConsumerConfig{Durable: "billing",
		AckPolicy: jetstream.AckExplicitPolicy, FilterSubjects: []string{"paddle.subscription.*"}})
	require.NoError(t, err)
	for i := range 3 {
		_, err := js.Publish(ctx, "paddle.subscription.created", []byte(fmt.Sprint(i)))
		require.NoError(t, err)
	}
	_, err = js.Publish(ctx, "paddle.transaction.completed", []byte("not billing's"))
	require.NoError(t, err)

	runCases(t, []cliCase{
		{args: []string{"destinations", "list"}, out: []string{"NAME", "STATE", "BACKLOG", "LAST-SUCCESS", "FAILURES(1h)", "P99(1h)", "URL",
			"https://billing.internal/hooks", "2/3"}},
		{args: []string{"destinations", "list", "--json"}, out: []string{
			`"name":"billing","url":"https://billing.internal/hooks","subjects":["paddle.subscription.*"],"state":"active"`,
			`"attempts_1h":3,"failures_1h":2`, `"backlog":3,"pending":3`,
			`"name":"crm"`, `"state":"disabled","reason":"410 Gone from the endpoint`, `"backlog_unknown":"no consumer crm on stream WEBHOOKS`},
			not: []string{`"name":"plain"`}},
		{args: []string{"destinations", "status", "billing"}, out: []string{"destination   billing", "state         active since ",
			"backlog       3 (3 waiting in the stream, 0 delivered and not yet acknowledged)", "last hour     3 attempts, 2 failed (66.7%), p99 ",
			"last 3 attempt(s), oldest first:", "paddle:evt_2", "no answer: attempt timed out", "503: HTTP 503", "busy [2J"}, not: []string{"\x1b"}},
		{args: []string{"destinations", "status", "--attempts", "1", "billing", "--json"}, out: []string{`"recent_attempts":[{"destination":"billing","provider":"paddle","event_id":"evt_2"`}},
		{args: []string{"destinations", "status", "crm"}, out: []string{"state         disabled since ", "410 Gone from the endpoint", "backlog       unknown: no consumer crm",
			"last success  never", "`hub destinations resume crm`", "attempts: none logged"}},
		{args: []string{"destinations", "status", "nobody"}, code: 1, err: `unknown destination "nobody" (known: billing, crm)`},
		{args: []string{"destinations", "status", "plain"}, code: 1, err: `unknown destination "plain" (known: billing, crm)`},
		{args: []string{"destinations", "status", "Bad Name"}, code: 2, err: `"Bad Name" is not a destination name`},
		{args: []string{"destinations", "status"}, code: 2, err: "destinations status needs exactly one destination NAME"},
		{args: []string{"destinations", "status", "billing", "--attempts", "-1"}, code: 2, err: "--attempts must be within 0..1000, got -1"},
		{args: []string{"destinations", "list", "billing"}, code: 2, err: "destinations list takes no arguments"},
		{args: []string{"destinations", "drop", "billing"}, code: 2, err: `unknown destinations action "drop"`},
		{args: []string{"destinations"}, code: 2, err: "Usage: hub destinations list"},
		{args: []string{"destinations", "--help"}, out: []string{"Usage: hub destinations list", "hub destinations test NAME"}},
		{args: []string{"destinations", "pause", "billing", "--reason", strings.Repeat("x", 257)}, code: 2, err: "--reason: at most 256 bytes, got 257"},
		{args: []string{"destinations", "pause", "nobody"}, code: 1, err: `unknown destination "nobody" (known: billing, crm)`},
		{args: []string{"destinations", "pause", "billing", "--reason", "deploy of billing v2"}, out: []string{"paused billing (was active since ",
			"takes no new event within 2s", "hub destinations resume billing"}},
		{args: []string{"destinations", "pause", "billing"}, out: []string{"billing is already paused", "deploy of billing v2"}},
		{args: []string{"destinations", "status", "billing"}, out: []string{"state         paused since ", ": deploy of billing v2"}},
		{args: []string{"destinations", "list"}, out: []string{"paused"}},
		{args: []string{"destinations", "resume", "billing", "--json"}, out: []string{
			`{"name":"billing","state":"active","changed":true,"previous_state":"paused","previous_reason":"deploy of billing v2","previous_since":"`}},
		{args: []string{"destinations", "resume", "crm"}, out: []string{"resumed crm (was disabled since ", ": 410 Gone from the endpoint at 2026-12-03T10:00:00Z)"}},
		{args: []string{"destinations", "resume", "crm"}, out: []string{"crm is already active"}},
	})
	st, reason, err := destination.GetState(ctx, pool, "crm")
	require.NoError(t, err)
	require.Equal(t, destination.StateActive, st, "resume clears disabled")
	require.Contains(t, reason, "resumed with `hub destinations resume`")

	// Each pause and resume is in the audit trail, as the OS user's: four
	// changes and the two that found the state already set (changed:
	// false); the unknown destination was refused before any action, and
	// the over-long reason is recorded as the command's refusal.
	code, out, stderr := runCmd(t, "audit", "list", "--json")
	require.Zero(t, code, stderr)
	var actions []string
	for line := range strings.Lines(out) {
		var e struct {
			Action string    `json:"action"`
			Actor  hub.Actor `json:"actor"`
			Target string    `json:"target"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		require.Equal(t, cliActor(), e.Actor)
		actions = append(actions, e.Action+" "+e.Target)
	}
	require.Equal(t, []string{"destination.resume destination crm", "destination.resume destination crm",
		"destination.resume destination billing", "destination.pause destination billing", "destination.pause destination billing",
		"destination.pause hub destinations"}, actions)

	// NATS unreachable: list still works, and says the backlog is unknown.
	t.Setenv("HUB_NATS_URL", "nats://"+closedAddr(t))
	runCases(t, []cliCase{
		{args: []string{"destinations", "list"}, out: []string{"billing", "unknown", "backlog unknown: connect to NATS at nats://"}},
		{args: []string{"destinations", "list", "--json"}, out: []string{`"backlog_unknown":"connect to NATS at`}, not: []string{`"backlog":`}},
		{args: []string{"destinations", "status", "billing"}, out: []string{"backlog       unknown: connect to NATS"}},
	})

	// No destination at all.
	_, err = pool.Exec(ctx, `DROP SCHEMA billing CASCADE; DROP SCHEMA crm CASCADE`)
	require.NoError(t, err)
	runCases(t, []cliCase{
		{args: []string{"destinations", "list"}, out: []string{"no destinations"}},
		{args: []string{"destinations", "pause", "billing"}, code: 1, err: `unknown destination "billing" (known: none yet`},
	})
}

// closedAddr is a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// testSecret is a whsec_ secret for the tests' destinations.
func testSecret(seed byte) (string, []byte) {
	key := bytes.Repeat([]byte{seed}, 32)
	return "whsec_" + base64.StdEncoding.EncodeToString(key), key
}

// received is a request a test receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is an endpoint answering status with body, recording the
// requests.
func receiver(t *testing.T, status int, body func(r *http.Request, reqBody []byte) string) (*httptest.Server, func() []received) {
	t.Helper()
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		got = append(got, received{r.Header.Clone(), b})
		mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, body(r, b))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []received {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// verify checks a delivery's Standard Webhooks signature with key, as a
// receiver does (an implementation of its own: HMAC-SHA256 over
// id.timestamp.body).
func verify(t *testing.T, r received, key []byte) {
	t.Helper()
	id, ts := r.header.Get("webhook-id"), r.header.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	require.NoError(t, err)
	require.InDelta(t, time.Now().Unix(), sec, 60)
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", id, ts, r.body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	require.Contains(t, strings.Fields(r.header.Get("webhook-signature")), want, "a signature made with the key")
}

// TestDestinationsTest: `hub destinations test` POSTs a signed sample with
// the destination's settings and prints the answer, never a secret nor a
// whole signature.
func TestDestinationsTest(t *testing.T) {
	secret, key := testSecret(7)
	oldSecret, oldKey := testSecret(9)
	t.Setenv("TEST_BILLING_SECRET", secret)
	t.Setenv("TEST_BILLING_OLD", oldSecret)

	ok, okGot := receiver(t, 200, func(*http.Request, []byte) string { return `{"received":true}` })
	// An echo server answers with the request: the secret's signatures
	// must not reach the terminal through it.
	echo, _ := receiver(t, 202, func(r *http.Request, _ []byte) string {
		return "sig=" + r.Header.Get("webhook-signature") + " url=" + r.URL.String()
	})
	failing, _ := receiver(t, 500, func(*http.Request, []byte) string { return "<h1>oops</h1>\x1b]0;title\x07" })
	gone, _ := receiver(t, 410, func(*http.Request, []byte) string { return "" })
	dir := t.TempDir()
	file := filepath.Join(dir, "destinations.yaml")
	require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, `destinations:
  - name: billing
    url: %s/hooks
    subjects: ["stripe.invoice.*", "paddle.>"]
    secret_env: [TEST_BILLING_SECRET, TEST_BILLING_OLD]
    headers: {X-Team: billing}
  - name: raw_github
    url: %s/raw
    subjects: ["github.>"]
    secret_env: TEST_BILLING_SECRET
    payload: raw
  - name: any_provider
    url: %s/any
    subjects: ["*.subscription.created"]
    secret_env: TEST_BILLING_SECRET
  - name: echo
    url: %s/echo?token=tok-abcdef-123456
    subjects: ["paddle.>"]
    secret_env: TEST_BILLING_SECRET
  - name: failing
    url: %s/fail
    subjects: ["paddle.>"]
    secret_env: TEST_BILLING_SECRET
  - name: gone
    url: %s/gone
    subjects: ["paddle.>"]
    secret_env: TEST_BILLING_SECRET
  - name: down
    url: http://%s/hooks
    subjects: ["paddle.>"]
    secret_env: TEST_BILLING_SECRET
    timeout: 2s
    connect_timeout: 1s
`, ok.URL, ok.URL, ok.URL, echo.URL, failing.URL, gone.URL, closedAddr(t)), 0o600))
	other := filepath.Join(dir, "other.yaml")
	require.NoError(t, os.WriteFile(other, fmt.Appendf(nil, `destinations:
  - name: billing
    url: %s/hooks
    subjects: ["paddle.subscription.created"]
    secret_env: TEST_BILLING_SECRET
  - name: crm
    url: https://crm.internal/in
    subjects: ["paddle.>"]
    secret_env: TEST_CRM_SECRET_NOT_SET
  - name: nosecret
    url: %s/hooks
    subjects: ["paddle.>"]
    secret_env: TEST_NOSECRET_NOT_SET
`, ok.URL, ok.URL), 0o600))

	never := []string{secret, oldSecret, base64.StdEncoding.EncodeToString(key), base64.StdEncoding.EncodeToString(oldKey)}
	runCases(t, []cliCase{
		{args: []string{"destinations", "test", "billing", "--file", file}, out: []string{
			"POST " + ok.URL + "/hooks", "destination        billing (from " + file + ")",
			"event              stripe.invoice.paid, envelope payload", "webhook-id         test:",
			"answer             200 OK in ", `response           {"received":true}`}, not: never},
		{args: []string{"destinations", "test", "--json", "--file", file, "raw_github"}, out: []string{
			`"destination":"raw_github"`, `"type":"github.push"`, `"payload":"raw"`, `"ok":true`, `"status":200`, `"webhook_id":"test:`}, not: never},
		{args: []string{"destinations", "test", "any_provider", "--file", file}, out: []string{"event              paddle.subscription.created, envelope payload"}},
		{args: []string{"destinations", "test", "echo", "--file", file}, out: []string{"POST " + echo.URL + "/echo?token=REDACTED",
			"answer             202 Accepted", "response           sig=v1,", "url=/echo?token=[redacted]"}, not: append(slices.Clone(never), "tok-abcdef-123456")},
		{args: []string{"destinations", "test", "failing", "--file", file}, code: 1, out: []string{"answer             500 Internal Server Error", "response           <h1>oops</h1> ]0;title"},
			err: "failing answered 500: not delivered", not: []string{"\x1b", "\x07"}},
		{args: []string{"destinations", "test", "gone", "--file", file, "--json"}, code: 1, out: []string{`"ok":false,"status":410`}, err: "gone answered 410"},
		{args: []string{"destinations", "test", "down", "--file", file}, code: 1, out: []string{"answer             no answer: "}, err: "down did not answer: "},
		{args: []string{"destinations", "test", "nobody", "--file", file}, code: 1, err: `unknown destination "nobody" in ` + file + " (its destinations: billing, raw_github, any_provider, echo, failing, gone, down)"},
		{args: []string{"destinations", "test", "billing", "--file", filepath.Join(dir, "missing.yaml")}, code: 1, err: "missing.yaml"},
		{args: []string{"destinations", "test", "billing"}, code: 1, err: "destinations.yaml"}, // run from the package's directory: no such file
		{args: []string{"destinations", "test", "--file", file}, code: 2, err: "destinations test needs exactly one destination NAME"},
		// Other destinations' secrets are not set here: the test still runs, and warns.
		{args: []string{"destinations", "test", "billing", "--file", other}, out: []string{"answer             200 OK"},
			err: "2 problem(s) with other destinations in " + other + ", ignored for this test"},
		// This destination's secret is not set: refused, naming it.
		{args: []string{"destinations", "test", "nosecret", "--file", other}, code: 1, err: "TEST_NOSECRET_NOT_SET"},
	})

	got := okGot()
	require.Len(t, got, 4, "billing, raw_github, any_provider and billing again")
	seen := map[string]bool{}
	for _, r := range got {
		id := r.header.Get("webhook-id")
		require.True(t, strings.HasPrefix(id, "test:"), id)
		require.False(t, seen[id], "a new webhook-id per test")
		seen[id] = true
		verify(t, r, key)
		require.Equal(t, "", r.header.Get("hookhub-archive-id"))
		require.Contains(t, r.header.Get("User-Agent"), "hookhub/")
	}
	billing := got[0]
	verify(t, billing, oldKey) // a rotation: both secrets sign
	require.Len(t, strings.Fields(billing.header.Get("webhook-signature")), 2)
	require.Equal(t, "billing", billing.header.Get("X-Team"))
	require.Equal(t, "application/json", billing.header.Get("Content-Type"))
	require.Equal(t, "stripe", billing.header.Get("hookhub-provider"))
	require.Equal(t, "invoice.paid", billing.header.Get("hookhub-event-type"))
	var env struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(billing.body, &env))
	require.Equal(t, "stripe.invoice.paid", env.Type)
	require.Contains(t, string(env.Data), `"type": "invoice.paid"`, "a realistic Stripe event")
	raw := got[1]
	require.Equal(t, "github", raw.header.Get("hookhub-provider"))
	require.NotContains(t, string(raw.body), `"type":"github.push"`, "raw: the provider's body, not the envelope")
	require.Contains(t, string(raw.body), `"head_commit"`)

	// HUB_DESTINATIONS_FILE is the default file.
	t.Setenv("HUB_DESTINATIONS_FILE", file)
	runCases(t, []cliCase{{args: []string{"destinations", "test", "any_provider"}, out: []string{"from " + file}}})
}

func TestDestinationsSampleType(t *testing.T) {
	for _, tc := range []struct{ filter, provider, typ string }{
		{"paddle.subscription.created", "paddle", "subscription.created"},
		{"paddle.subscription.*", "paddle", "subscription.created"},
		{"paddle.transaction.*", "paddle", "transaction.completed"},
		{"paddle.>", "paddle", "subscription.created"},
		{"stripe.>", "stripe", "customer.subscription.created"},
		{"stripe.invoice.*", "stripe", "invoice.paid"},
		{"github.pull_request.*", "github", "pull_request.opened"},
		{"acme.order.*", "acme", "order.test"},
		{"acme.>", "acme", "test"},
		{"paddle.adjustment.*.x", "paddle", "adjustment.test.x"},
		{"*.subscription.created", "paddle", "subscription.created"},
		{">", "paddle", "subscription.created"},
		{"", "paddle", "subscription.created"},
	} {
		p, typ := sampleType(tc.filter)
		require.Equal(t, tc.provider+"."+tc.typ, p+"."+typ, tc.filter)
		if tc.filter != "" && !strings.HasPrefix(tc.filter, "*") && tc.filter != ">" {
			require.True(t, schema.MatchSubject(tc.filter, p+"."+typ), "%s matches its sample %s.%s", tc.filter, p, typ)
		}
	}
}

func TestDestinationsSignaturePrefixes(t *testing.T) {
	require.Equal(t, []string{"v1,AbCdEf…", "v1,xyz…"}, signaturePrefixes("v1,AbCdEfGhIj= v1,xyz"))
	require.Empty(t, signaturePrefixes(""))
	_, key := testSecret(3)
	sig := "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="
	d := destination.Destination{Spec: destination.Spec{URL: "https://x.example/in?token=s3cr3t-t0ken&v=1"}, Secrets: []destination.Secret{key}}
	got := d.Redactor().Text("echo " + base64.StdEncoding.EncodeToString(key) + " " + sig + " GET /in?token=s3cr3t-t0ken&v=1")
	require.Equal(t, "echo [redacted] v1,[redacted] GET /in?token=[redacted]&v=1", got)
}

// TestDestinationsEventsShow: `hub events show` prints each destination's
// attempts of the event as a timeline.
func TestDestinationsEventsShow(t *testing.T) {
	pool := dbEnv(t, "nats://"+closedAddr(t))
	ctx := context.Background()
	_, err := store.New(pool).Ingest(ctx, []hub.Delivery{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: "evt_tl",
		EventType: "subscription.created", Body: []byte(`{"a":1}`), ReceivedAt: time.Now()}})
	require.NoError(t, err)
	for _, name := range []string{"billing", "crm"} {
		require.NoError(t, subscriber.Migrate(ctx, pool, name, destination.Migrations(name)))
	}
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	for i, a := range []destination.Attempt{
		{Latency: 10 * time.Second, Outcome: destination.OutcomeFailed, Error: "attempt timed out"},
		{Status: 502, Latency: 31 * time.Millisecond, Outcome: destination.OutcomeFailed, Response: "bad gateway\x1b[0m"},
		{Status: 204, Latency: 4 * time.Millisecond, Outcome: destination.OutcomeDelivered},
	} {
		a.Destination, a.Provider, a.EventID, a.At = "billing", "paddle", "evt_tl", at.Add(time.Duration(i)*time.Minute)
		require.NoError(t, deststate.RecordAttempt(ctx, pool, a))
	}
	runCases(t, []cliCase{
		{args: []string{"events", "show", "paddle:evt_tl"}, out: []string{
			"destination billing: 3 attempt(s)\n  AT  ",
			"2026-12-03T09:00:00Z  no answer: attempt timed out  10s", "failed",
			"2026-12-03T09:01:00Z  502", "31ms", "bad gateway [0m",
			"2026-12-03T09:02:00Z  204", "4ms", "delivered",
			"destination crm: 0 attempt(s)\n  none yet"}, not: []string{"\x1b"}},
		{args: []string{"events", "show", "--json", "paddle:evt_tl"}, out: []string{
			`"subscriber":"billing","outcome":"none","destination":true,"http_attempts":[{"destination":"billing","provider":"paddle","event_id":"evt_tl","at":"2026-12-03T09:00:00Z","latency_ns":10000000000,"outcome":"failed","error":"attempt timed out"}`}},
	})
}
