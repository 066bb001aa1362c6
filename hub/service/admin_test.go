package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

const adminToken = "test-admin-token-0123456789abcdef0123456789"

func (h *testHub) admin(method, path, token, body string) (int, string) {
	h.t.Helper()
	auth := ""
	if token != "" {
		auth = "Bearer " + token
	}
	code, raw, err := adminRequest(h.base, method, path, auth, body)
	require.NoError(h.t, err)
	return code, raw
}

// adminRequest sends one admin request (auth: the Authorization header,
// if any).
func adminRequest(base, method, path, auth, body string) (int, string, error) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw), err
}

// adminClient waits longer than any admin request may take (a replay
// publishes for at most 10 s and waits 20 s for the subscriber).
var adminClient = &http.Client{Timeout: 60 * time.Second}

func TestAdminAPI(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) { c.AdminToken = adminToken })
	for range 3 {
		h.deliver("paddle", "evt_admin", "subscription.created")
	}
	h.waitPublished()

	for _, token := range []string{"", "wrong", adminToken + "x", strings.ToUpper(adminToken)} {
		code, _ := h.admin(http.MethodGet, "/admin/status", token, "")
		require.Equal(t, http.StatusUnauthorized, code, "token %q", token)
	}
	code, body := h.admin(http.MethodGet, "/admin/status", adminToken, "")
	require.Equal(t, http.StatusOK, code, body)
	var st struct {
		Stream struct{ Messages int }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.Equal(t, 1, st.Stream.Messages)

	code, body = h.admin(http.MethodGet, "/admin/events?provider=paddle&since=1h", adminToken, "")
	require.Equal(t, http.StatusOK, code, body)
	var rows []struct {
		EventID    string `json:"event_id"`
		Deliveries int    `json:"deliveries"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &rows))
	require.Len(t, rows, 1)
	require.Equal(t, 3, rows[0].Deliveries)

	code, body = h.admin(http.MethodGet, "/admin/events/paddle:evt_admin", adminToken, "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"deliveries":[`)

	// A subscriber's tables with no dead letter.
	require.NoError(t, subscriber.Migrate(context.Background(), h.pool, "quiet", nil))

	long := strings.Repeat("x", 300)
	cases := []struct {
		method, path, body string
		want               int
		msg                string // in the answer
	}{
		{http.MethodGet, "/admin/events/paddle:nope", "", http.StatusNotFound, "nothing matched"},
		{http.MethodGet, "/admin/events?since=yesterday", "", http.StatusBadRequest, "since: bad time"},
		{http.MethodGet, "/admin/events?status=DONE", "", http.StatusBadRequest, `status: \"DONE\" is not a status`},
		{http.MethodGet, "/admin/events?limit=0", "", http.StatusBadRequest, "limit: must be within 1..10000, got 0"},
		{http.MethodGet, "/admin/events?limit=-1", "", http.StatusBadRequest, "limit: must be within"},
		{http.MethodGet, "/admin/events?limit=10001", "", http.StatusBadRequest, "limit: must be within"},
		{http.MethodGet, "/admin/events?limit=1e308", "", http.StatusBadRequest, "limit: not a whole number"},
		{http.MethodGet, "/admin/events?limit=99999999999999999999", "", http.StatusBadRequest, "limit: not a whole number"},
		{http.MethodGet, "/admin/events?limit=10000", "", http.StatusOK, "evt_admin"},
		{http.MethodGet, "/admin/events?limit=1", "", http.StatusOK, `"cursor":"`},
		{http.MethodGet, "/admin/events?before=yesterday", "", http.StatusBadRequest, `before: \"yesterday\" is not a cursor`},
		{http.MethodPost, "/admin/republish", `{"status":"FAILED","since":"1h"}`, http.StatusBadRequest, "status: FAILED events cannot be republished"},
		{http.MethodGet, "/admin/events?provider=pad%00dle", "", http.StatusBadRequest, "provider: "},
		{http.MethodGet, "/admin/events?type=a%ffb", "", http.StatusBadRequest, "type: "},
		{http.MethodGet, "/admin/events?type=" + long, "", http.StatusBadRequest, "type: longer than 128 bytes"},
		{http.MethodGet, "/admin/events?since=" + long, "", http.StatusBadRequest, "since: bad time: longer than"},
		{http.MethodGet, "/admin/events/paddle:evt%00", "", http.StatusBadRequest, "ref: "},
		{http.MethodGet, "/admin/events/paddle%3Aevt%c3%28", "", http.StatusBadRequest, "not valid UTF-8"},
		{http.MethodGet, "/admin/events/paddle:" + long, "", http.StatusBadRequest, "ref: longer than"},
		{http.MethodGet, "/admin/events/nonsense", "", http.StatusBadRequest, "neither an archive id"},
		{http.MethodGet, "/admin/dlq/nobody", "", http.StatusNotFound, "unknown subscriber"},
		{http.MethodGet, "/admin/dlq/%00", "", http.StatusBadRequest, "subscriber: "},
		{http.MethodGet, "/admin/dlq/quiet", "", http.StatusOK, "[]"},
		{http.MethodPost, "/admin/purge", `{"older_than":"90d","dry_run":true}`, http.StatusOK, `"dry_run":true`},
		{http.MethodPost, "/admin/purge", `{"older_than":"soon"}`, http.StatusBadRequest, "older_than: bad time"},
		{http.MethodPost, "/admin/purge", `{"older_than":"1ns"}`, http.StatusBadRequest, "older_than: must be at least 1d"},
		{http.MethodPost, "/admin/purge", `{"older_than":"90d","batch":1}`, http.StatusBadRequest, `unknown field \"batch\"`},
		{http.MethodPost, "/admin/republish", `{}`, http.StatusBadRequest, "since: give since"},
		{http.MethodPost, "/admin/republish", `{"event":"paddle:evt_admin","dry_run":true}`, http.StatusOK, `"matched":1`},
		{http.MethodPost, "/admin/republish", `{"event":"paddle:\u0000","dry_run":true}`, http.StatusBadRequest, "event: "},
		{http.MethodPost, "/admin/republish", `{"provider":"` + long + `","since":"1h","dry_run":true}`, http.StatusBadRequest, "provider: longer than"},
		{http.MethodPost, "/admin/replay", `{"subscriber":"nobody","since":"1h"}`, http.StatusNotFound, "unknown subscriber"},
		{http.MethodPost, "/admin/replay", `{"subscriber":"quiet","since":"1h","rate":1e10}`, http.StatusBadRequest, "rate: must be 0 (unlimited) or within 1..10000"},
		{http.MethodPost, "/admin/replay", `{"subscriber":"quiet","since":"1h","rate":1e400}`, http.StatusBadRequest, "body: "},
		{http.MethodPost, "/admin/replay", `{"subscriber":"quiet","since":"1h","rate":-1}`, http.StatusBadRequest, "rate: "},
		{http.MethodPost, "/admin/replay", `{"subscriber":"quiet","since":"1h","rate":1e-300}`, http.StatusBadRequest, "rate: "},
		{http.MethodPost, "/admin/replay", `{"subscriber":"qu\u0000iet","since":"1h"}`, http.StatusBadRequest, "subscriber: "},
		{http.MethodPost, "/admin/replay", `{"subscriber":"quiet","since":"1h","subject":"paddle.\u0000"}`, http.StatusBadRequest, "subject: "},
		{http.MethodPost, "/admin/replay", `{"subscriber":"quiet","since":"1h","wait":"1h"}`, http.StatusBadRequest, `unknown field \"wait\"`},
		{http.MethodPost, "/admin/dlq/nobody/redrive", `{"all":true}`, http.StatusNotFound, "unknown subscriber"},
		{http.MethodPost, "/admin/dlq/nobody/redrive", `{}`, http.StatusBadRequest, "id: give exactly one"},
		{http.MethodPost, "/admin/dlq/quiet/redrive", `{"all":true}`, http.StatusNotFound, "nothing matched: quiet has no dead letter waiting"},
		{http.MethodPost, "/admin/dlq/quiet/redrive", `{"id":5}`, http.StatusNotFound, "nothing matched: quiet has no dead letter 5"},
		{http.MethodPost, "/admin/dlq/quiet/redrive", `{"id":-1,"all":true}`, http.StatusBadRequest, "id: must be a dead letter's id"},
		{http.MethodPost, "/admin/dlq/quiet/redrive", `{"id":1,"all":true}`, http.StatusBadRequest, "id: give exactly one"},
		{http.MethodPost, "/admin/dlq/quiet/redrive", `{"id":1.5}`, http.StatusBadRequest, "body: "},
		{http.MethodPost, "/admin/dlq/quiet/redrive", `{"id":1e30}`, http.StatusBadRequest, "body: "},
		{http.MethodPost, "/admin/dlq/quiet/redrive", `{"id":"1"}`, http.StatusBadRequest, "body: "},
		{http.MethodPost, "/admin/dlq/%ff/redrive", `{"all":true}`, http.StatusBadRequest, "subscriber: "},
		{http.MethodDelete, "/admin/status", "", http.StatusMethodNotAllowed, "method not allowed"},
		{http.MethodGet, "/admin/nothing", "", http.StatusNotFound, "not found"},
	}
	for _, c := range cases {
		code, body := h.admin(c.method, c.path, adminToken, c.body)
		require.Equal(t, c.want, code, "%s %s %s: %s", c.method, c.path, c.body, body)
		require.Contains(t, body, c.msg, "%s %s %s", c.method, c.path, c.body)
	}
	// The scheme in any case, with several spaces (RFC 7235).
	for _, auth := range []string{"bearer " + adminToken, "BEARER  " + adminToken} {
		code, body, err := adminRequest(h.base, http.MethodGet, "/admin/status", auth, "")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "%q: %s", auth, body)
	}
	code, body = h.admin(http.MethodGet, "/healthz", "", "")
	require.Equal(t, http.StatusOK, code, body)
}

// A purge through the admin API: refuses an age below the minimum, is a
// dry run unless "dry_run": false, keeps FAILED rows unless
// "include_failed": true, never deletes PENDING rows, and reports counts.
func TestAdminPurge(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) { c.AdminToken = adminToken })
	h.deliver("paddle", "evt_purge_1", "subscription.created")
	h.deliver("paddle", "evt_purge_1", "subscription.created") // SKIPPED
	h.deliver("paddle", "evt_purge_2", "subscription.created")
	h.deliver("paddle", "evt_purge_failed", "subscription created") // FAILED: not a subject
	h.waitPublished()
	ctx := context.Background()
	// All of it two days old, and one PENDING row (a stuck outbox).
	_, err := h.pool.Exec(ctx, `UPDATE webhook_events SET created_at = created_at - interval '2 days'`)
	require.NoError(t, err)
	// Back in the outbox, as a stream restore re-queues a published event
	// (on its dedup row: the archive row is never rewritten), and not due
	// before the test ends.
	_, err = h.pool.Exec(ctx, `UPDATE processed_webhook_events SET next_attempt_at = now() + interval '1 day', stream_seq = NULL, published_at = NULL
		WHERE event_id = 'evt_purge_2'`)
	require.NoError(t, err)
	statuses := func() map[string]int { return hubdb.StatusCounts(t, h.pool) }
	all := map[string]int{"PROCESSED": 1, "SKIPPED": 1, "PENDING": 1, "FAILED": 1}
	require.Equal(t, all, statuses())

	type result struct {
		Rows        int64  `json:"rows"`
		DryRun      bool   `json:"dry_run"`
		PendingKept int64  `json:"pending_kept"`
		FailedKept  int64  `json:"failed_kept"`
		Note        string `json:"note"`
	}
	purge := func(body string) (int, result, string) {
		code, raw := h.admin(http.MethodPost, "/admin/purge", adminToken, body)
		var r result
		if code == http.StatusOK {
			require.NoError(t, json.Unmarshal([]byte(raw), &r), raw)
		}
		return code, r, raw
	}

	code, _, raw := purge(`{"older_than":"1ns","dry_run":false,"include_failed":true}`)
	require.Equal(t, http.StatusBadRequest, code, raw)
	require.Contains(t, raw, "older_than: must be at least 1d, got 1ns: the archive is the only source for repairing a stream")
	require.Equal(t, all, statuses(), "refused: nothing deleted")

	code, r, raw := purge(`{"older_than":"24h"}`)
	require.Equal(t, http.StatusOK, code, raw)
	require.Equal(t, result{Rows: 2, DryRun: true, PendingKept: 1, FailedKept: 1, Note: r.Note}, r)
	require.Contains(t, r.Note, "dry run: nothing was deleted")
	require.Equal(t, all, statuses(), "a missing dry_run deletes nothing")

	code, r, raw = purge(`{"older_than":"24h","dry_run":false}`)
	require.Equal(t, http.StatusOK, code, raw)
	require.Equal(t, result{Rows: 2, PendingKept: 1, FailedKept: 1}, r)
	require.Equal(t, map[string]int{"PENDING": 1, "FAILED": 1}, statuses(), "FAILED kept unless asked")

	code, r, raw = purge(`{"older_than":"1d","dry_run":false,"include_failed":true}`)
	require.Equal(t, http.StatusOK, code, raw)
	require.Equal(t, result{Rows: 1, PendingKept: 1}, r)
	require.Equal(t, map[string]int{"PENDING": 1}, statuses(), "FAILED deleted when asked; PENDING never")
	require.Equal(t, 3, h.count(`SELECT count(*) FROM processed_webhook_events`), "the dedup rows stay")
}

// /admin/status lists the subscribers' durable consumers, not the
// ephemeral consumers of a scan in progress (a replay, a reconcile).
func TestAdminStatusHidesScanConsumers(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) { c.AdminToken = adminToken })
	h.deliver("paddle", "evt_scan", "subscription.created")
	h.waitPublished()
	ctx := context.Background()
	st, err := h.js.Stream(ctx, h.cfg.Stream)
	require.NoError(t, err)
	_, err = st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "credits", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	scan, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{HeadersOnly: true})
	require.NoError(t, err)
	_, err = scan.Next(jetstream.FetchMaxWait(5 * time.Second))
	require.NoError(t, err)

	code, body := h.admin(http.MethodGet, "/admin/status", adminToken, "")
	require.Equal(t, http.StatusOK, code, body)
	var status struct {
		Consumers []struct {
			Name string `json:"name"`
		} `json:"consumers"`
		ScanConsumers int `json:"scan_consumers"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &status))
	require.Len(t, status.Consumers, 1, body)
	require.Equal(t, "credits", status.Consumers[0].Name)
	require.Equal(t, 1, status.ScanConsumers)
}

func TestAdminAPIOffByDefault(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	code, _ := h.admin(http.MethodGet, "/admin/status", adminToken, "")
	require.Equal(t, http.StatusNotFound, code)
}

// fuzzMethods are the methods FuzzAdminAPI sends.
var fuzzMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead, http.MethodOptions}

// FuzzAdminAPI sends mutated admin requests (method, path and query, JSON
// body) to a whole hub: real Postgres, embedded JetStream, the real
// operations, and a running subscriber with dead letters. No panic may
// escape (the test process would die), every answer must be one of the
// documented statuses with a JSON error, never a 500 (the infrastructure
// is healthy), no request may delete a row younger than the minimum purge
// age, and the hub must keep answering /healthz.
//
//	go test ./hub/service -run '^$' -fuzz FuzzAdminAPI -fuzztime 60s
func FuzzAdminAPI(f *testing.F) {
	base, pool := startFuzzHub(f)
	ctx := context.Background()
	var archived int
	require.NoError(f, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_event_status`).Scan(&archived))

	seeds := []struct {
		method uint8
		path   string
		body   string
	}{
		{0, "/status", ""},
		{0, "/events", ""},
		{0, "/events?provider=paddle&type=subscription.created&status=PROCESSED&since=1h&until=1m&limit=10", ""},
		{0, "/events?limit=0", ""},
		{0, "/events?limit=-9223372036854775808", ""},
		{0, "/events?limit=1e308&since=213504d&status=%00", ""},
		{0, "/events?provider=%ff%00&type=%c3%28", ""},
		{0, "/events/paddle:evt_fuzz_1", ""},
		{0, "/events/paddle:evt%00", ""},
		{0, "/events/00000000-0000-0000-0000-000000000000", ""},
		{0, "/events/%", ""},
		{0, "/dlq/flaky", ""},
		{0, "/dlq/%00", ""},
		{1, "/replay", `{"subscriber":"flaky","since":"1h","dry_run":true}`},
		{1, "/replay", `{"subscriber":"flaky","since":"1h","subject":"paddle.subscription.created"}`},
		{1, "/replay", `{"subscriber":"flaky","since":"1h","rate":1e10}`},
		{1, "/replay", `{"subscriber":"flaky","since":"1h","rate":1e-300}`},
		{1, "/replay", `{"subscriber":"flaky","since":"1h","rate":5000}`},
		{1, "/replay", `{"subscriber":"flaky","since":"1h","until":"2h"}`},
		{1, "/replay", `{"subscriber":"flaky","since":"1h","subject":"paddle.>.x"}`},
		{1, "/replay", `{"subscriber":"\u0000","since":"\ud800"}`},
		{1, "/republish", `{"since":"1h","dry_run":true}`},
		{1, "/republish", `{"event":"paddle:evt_fuzz_1"}`},
		{1, "/republish", `{"status":"FAILED","since":"1h","dry_run":true}`},
		{1, "/republish", `{"status":"PENDING","provider":"\u0000","event":":"}`},
		{1, "/dlq/flaky/redrive", `{"all":true}`},
		{1, "/dlq/flaky/redrive", `{"id":1}`},
		{1, "/dlq/flaky/redrive", `{"id":-1,"all":true}`},
		{1, "/dlq/flaky/redrive", `{"id":9223372036854775807}`},
		{1, "/dlq/flaky/redrive", `{"id":1e30}`},
		{1, "/purge", `{"older_than":"90d"}`},
		{1, "/purge", `{"older_than":"1ns","dry_run":false}`},
		{1, "/purge", `{"older_than":"24h","dry_run":false,"include_failed":true}`},
		{1, "/purge", `{"older_than":"213504d","dry_run":false}`},
		{1, "/purge", `[]`},
		{1, "/purge", `{"older_than":"90d"} trailing`},
		{1, "/purge", `{"older_than":` + strings.Repeat("[", 1000)},
		{3, "/status", ""},
		{5, "/events", ""},
		{6, "/purge", `{}`},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, []byte(s.body))
	}
	allowed := map[int]bool{
		http.StatusOK: true, http.StatusBadRequest: true, http.StatusNotFound: true, http.StatusMethodNotAllowed: true,
		http.StatusRequestEntityTooLarge: true, http.StatusRequestHeaderFieldsTooLarge: true,
	}
	f.Fuzz(func(t *testing.T, method uint8, path string, body []byte) {
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u, err := url.Parse(base + "/admin" + path)
		if err != nil || u.Host != strings.TrimPrefix(base, "http://") {
			return // not a request a client can send
		}
		req, err := http.NewRequest(m, u.String(), bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := adminClient.Do(req)
		require.NoError(t, err, "%s %s: the hub must answer", m, u)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.True(t, allowed[resp.StatusCode], "%s %s %q: status %d: %s", m, u, body, resp.StatusCode, raw)
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge && m != http.MethodHead {
			var e struct{ Error string }
			require.NoError(t, json.Unmarshal(raw, &e), "%s %s %q: an error is JSON: %s", m, u, body, raw)
			require.NotEmpty(t, e.Error)
		}

		code, health, err := adminRequest(base, http.MethodGet, "/healthz", "", "")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, health)
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_event_status`).Scan(&n))
		require.Equal(t, archived, n, "no admin request deletes a row younger than the minimum purge age")
	})
}

// startFuzzHub runs a hub with the admin API, a few events (some
// dead-lettered by a running subscriber "flaky") and returns its base URL.
func startFuzzHub(f *testing.F) (string, *pgxpool.Pool) {
	pool, dbURL := hubdb.Pool(f)
	n := hubtest.JetStream(f)
	_, js := n.Connect(f)
	cfg := newTestConfig(f, dbURL, n.URL())
	cfg.AdminToken = adminToken
	cfg.LogLevel = "error"
	base := testhub.Start(f, cfg, service.Deps{}).URL

	// A subscriber that fails on every other event: dead letters to list
	// and redrive, events to replay.
	sub, err := subscriber.New(subscriber.Config{Name: "flaky", Pool: pool, JetStream: js, MaxDeliver: 2,
		Backoff: []time.Duration{10 * time.Millisecond}, AckWait: 2 * time.Second, RedriveInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(f, err)
	sub.Handle("paddle.>", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		if strings.HasSuffix(ev.EventID, "1") || strings.HasSuffix(ev.EventID, "3") {
			return fmt.Errorf("bug: %s", ev.EventID)
		}
		return nil
	})
	subCtx, subCancel := context.WithCancel(context.Background())
	subDone := make(chan error, 1)
	go func() { subDone <- sub.Run(subCtx) }()
	f.Cleanup(func() { // before the hub's
		subCancel()
		require.NoError(f, <-subDone)
	})
	require.Eventually(f, func() bool { return sub.Healthy() == nil }, 30*time.Second, 10*time.Millisecond)

	p := mustSender(f, "paddle", paddleSecret)
	for i := range 4 {
		resp, err := http.DefaultClient.Do(signedPost(f, p, base, fmt.Sprintf("evt_fuzz_%d", i)))
		require.NoError(f, err)
		resp.Body.Close()
		require.Equal(f, http.StatusOK, resp.StatusCode)
	}
	require.Eventually(f, func() bool {
		var dead int
		require.NoError(f, pool.QueryRow(context.Background(), `SELECT count(*) FROM flaky.dead_letters`).Scan(&dead))
		return dead == 2
	}, 30*time.Second, 20*time.Millisecond, "two events dead-lettered")
	return base, pool
}
