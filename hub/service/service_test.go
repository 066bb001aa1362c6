package service_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
)

const (
	paddleSecret = "pdl_ntfset_01test0000000000000000000000_TestSecretForHookhubTests00"
	clerkSecret  = "whsec_dGVzdC1zZWNyZXQtZm9yLWhvb2todWItdGVzdHMh"
)

// testHub is a hub running in-process against a fresh database and an
// embedded JetStream server.
type testHub struct {
	t    *testing.T
	cfg  service.Config
	base string
	// adminBase is the admin listener's URL when HUB_ADMIN_ADDR is set.
	adminBase string
	pool      *pgxpool.Pool
	nats      *hubtest.NATS
	js        jetstream.JetStream
	paddle    provider.Signer
	clerk     provider.Signer
	hub       *testhub.Hub // the running hub; nil once stopped
}

func newTestHub(t *testing.T, mod ...func(*service.Config)) *testHub {
	t.Helper()
	h := newUnstartedHub(t, mod...)
	h.start()
	return h
}

// newUnstartedHub is a hub's database, NATS server and configuration
// (newTestConfig's, then mod), not started yet.
func newUnstartedHub(t *testing.T, mod ...func(*service.Config)) *testHub {
	t.Helper()
	pool, url := hubdb.Pool(t)
	n := hubtest.JetStream(t)
	_, js := n.Connect(t)
	cfg := newTestConfig(t, url, n.URL())
	for _, m := range mod {
		m(&cfg)
	}
	return &testHub{t: t, cfg: cfg, pool: pool, nats: n, js: js,
		paddle: mustSender(t, "paddle", paddleSecret), clerk: mustSender(t, "clerk", clerkSecret)}
}

// newTestConfig is the hub's default configuration (testhub.Config,
// never the environment) with the test secrets and timings.
func newTestConfig(t testing.TB, dbURL, natsURL string) service.Config {
	t.Helper()
	cfg := testhub.Config(t, dbURL, natsURL)
	cfg.SetSecrets("paddle", paddleSecret)
	cfg.SetSecrets("clerk", clerkSecret)
	cfg.ShutdownTimeout, cfg.CommitTimeout = 10*time.Second, 5*time.Second
	cfg.BatchCommitters, cfg.RelayWorkers = 2, 2
	cfg.LogFormat = "text"
	return cfg
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func mustSender(t testing.TB, name, secret string) provider.Signer {
	p, err := provider.New(name, []string{secret}, provider.Options{})
	require.NoError(t, err)
	return p.(provider.Signer)
}

// signedPost is a POST to the hub at base of a sample
// subscription.created event that s signed.
func signedPost(t testing.TB, s provider.Signer, base, eventID string) *http.Request {
	t.Helper()
	body, err := samples.Body(s.Name(), eventID, "subscription.created", nil, time.Now())
	require.NoError(t, err)
	hdr, _, err := s.Sign(eventID, "", body, time.Now())
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, base+"/webhooks/"+s.Name(), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header = hdr
	return req
}

func (h *testHub) start() {
	h.t.Helper()
	h.startWithDeps(service.Deps{})
	if h.js != nil {
		h.waitStream()
	}
}

// waitStream waits until the hub has created its stream.
func (h *testHub) waitStream() {
	h.t.Helper()
	h.hub.WaitStream(h.js, h.cfg.Stream)
}

// startWithDeps starts the hub like start, with injected dependencies, and
// returns the service. It does not wait for the stream.
func (h *testHub) startWithDeps(deps service.Deps) *service.Service {
	h.t.Helper()
	h.hub = testhub.Start(h.t, h.cfg, deps)
	h.base, h.adminBase = h.hub.URL, h.hub.AdminURL
	return h.hub.Service
}

// stop shuts the hub down gracefully; Run must return nil.
func (h *testHub) stop() {
	if h.hub != nil {
		h.hub.Stop()
		h.hub = nil
	}
}

type answer struct {
	status int
	body   map[string]any
}

// deliver signs a sample event of the given provider and POSTs it.
func (h *testHub) deliver(name, eventID, eventType string) answer {
	h.t.Helper()
	s := h.sender(name)
	body, err := samples.Body(s.Name(), eventID, eventType, nil, time.Now())
	require.NoError(h.t, err)
	hdr, _, err := s.Sign(eventID, "", body, time.Now())
	require.NoError(h.t, err)
	return h.post(name, hdr, body)
}

func (h *testHub) sender(name string) provider.Signer {
	if name == "clerk" {
		return h.clerk
	}
	return h.paddle
}

func (h *testHub) post(name string, hdr http.Header, body []byte) answer {
	h.t.Helper()
	hdr = hdr.Clone()
	if hdr == nil {
		hdr = http.Header{}
	}
	hdr.Set("Content-Type", "application/json")
	a := testhub.PostWebhook(h.t, h.base+"/webhooks/"+name, hdr, body)
	require.NotNil(h.t, a.Body, "body %q", a.Raw)
	return answer{status: a.Status, body: a.Body}
}

// statusCounts counts archive rows of one event by status.
func (h *testHub) statusCounts(name, eventID string) map[string]int {
	h.t.Helper()
	rows, err := h.pool.Query(context.Background(),
		`SELECT processing_status, count(*) FROM webhook_event_status WHERE provider = $1 AND event_id = $2 GROUP BY 1`, name, eventID)
	require.NoError(h.t, err)
	out := map[string]int{}
	var st string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&st, &n}, func() error { out[st] = n; return nil })
	require.NoError(h.t, err)
	return out
}

func (h *testHub) count(sql string, args ...any) int {
	h.t.Helper()
	var n int
	require.NoError(h.t, h.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// streamMsgIDs reads every message of the stream and counts them by
// Nats-Msg-Id. It fails the test if the stream does not exist.
func (h *testHub) streamMsgIDs() map[string]int {
	h.t.Helper()
	return testhub.StreamMsgIDs(h.t, h.js, h.cfg.Stream)
}

// streamMsg reads the stream's message seq.
func (h *testHub) streamMsg(seq uint64) *jetstream.RawStreamMsg {
	h.t.Helper()
	ctx := context.Background()
	st, err := h.js.Stream(ctx, h.cfg.Stream)
	require.NoError(h.t, err)
	m, err := st.GetMsg(ctx, seq)
	require.NoError(h.t, err)
	return m
}

// waitPublished waits until no archive row is PENDING.
func (h *testHub) waitPublished() {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		// A query failing is "not yet": outage tests terminate the
		// pool's connections, and the next query opens a new one.
		var n int
		err := h.pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PENDING'`).Scan(&n)
		return err == nil && n == 0
	}, 30*time.Second, 20*time.Millisecond, "outbox did not drain")
}

func TestSequentialDuplicates(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"paddle", "clerk"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newTestHub(t)
			eventID := "evt_seq_" + name
			typ := map[string]string{"paddle": "subscription.created", "clerk": "user.created"}[name]
			for i := range 10 {
				a := h.deliver(name, eventID, typ)
				require.Equal(t, http.StatusOK, a.status)
				require.Equal(t, eventID, a.body["event_id"])
				require.Equal(t, i > 0, a.body["idempotent"], "delivery %d", i+1)
			}
			h.waitPublished()
			require.Equal(t, map[string]int{"PROCESSED": 1, "SKIPPED": 9}, h.statusCounts(name, eventID))
			require.Equal(t, 1, h.count(`SELECT count(*) FROM processed_webhook_events WHERE provider = $1 AND event_id = $2`, name, eventID))
			require.Equal(t, map[string]int{name + ":" + eventID: 1}, h.streamMsgIDs())
		})
	}
}

func TestConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	// With group commit (the default) and without it (one transaction per
	// request): exactly one of ten concurrent identical deliveries wins.
	for _, batchMax := range []int{64, 1} {
		t.Run(fmt.Sprintf("batch_max=%d", batchMax), func(t *testing.T) {
			t.Parallel()
			h := newTestHub(t, func(c *service.Config) { c.BatchMax = batchMax })
			const eventID = "evt_concurrent"
			answers := make([]answer, 10)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range answers {
				wg.Go(func() {
					<-start
					answers[i] = h.deliver("paddle", eventID, "subscription.created")
				})
			}
			close(start)
			wg.Wait()
			first := 0
			for _, a := range answers {
				require.Equal(t, http.StatusOK, a.status)
				if a.body["idempotent"] == false {
					first++
				}
			}
			require.Equal(t, 1, first, "exactly one delivery must win")
			h.waitPublished()
			require.Equal(t, map[string]int{"PROCESSED": 1, "SKIPPED": 9}, h.statusCounts("paddle", eventID))
			require.Equal(t, map[string]int{"paddle:" + eventID: 1}, h.streamMsgIDs())
		})
	}
}

func TestMessageShape(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	hdr, body := h.signedPaddle("evt_shape")
	require.Equal(t, http.StatusOK, h.post("paddle", hdr, body).status)
	h.waitPublished()

	m := h.streamMsg(1)
	require.Equal(t, "paddle.subscription.created", m.Subject)
	require.Equal(t, body, m.Data, "message data must be the exact request body")
	md, err := schema.ParseMetadata(m.Header)
	require.NoError(t, err)
	require.Equal(t, "paddle:evt_shape", md.MsgID)
	require.Equal(t, "evt_shape", md.EventID)
	require.Equal(t, "paddle", md.Provider)
	require.Equal(t, "subscription.created", md.EventType)
	require.NotEmpty(t, md.ArchiveID)
	require.False(t, md.ReceivedAt.IsZero())

	var seq int64
	var archiveID string
	require.NoError(t, h.pool.QueryRow(context.Background(), `SELECT stream_seq, id::text FROM webhook_event_status WHERE event_id = 'evt_shape'`).Scan(&seq, &archiveID))
	require.EqualValues(t, 1, seq)
	require.Equal(t, archiveID, md.ArchiveID)
}

func TestRejectedDeliveriesWriteNothing(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	now := time.Now()
	body, err := samples.Body(h.paddle.Name(), "evt_bad", "subscription.created", nil, now)
	require.NoError(t, err)
	good, _, err := h.paddle.Sign("evt_bad", "", body, now)
	require.NoError(t, err)
	wrong := mustSender(t, "paddle", "pdl_ntfset_wrong")
	wrongHdr, _, err := wrong.Sign("evt_bad", "", body, now)
	require.NoError(t, err)
	stale, _, err := h.paddle.Sign("evt_bad", "", body, now.Add(-6*time.Minute))
	require.NoError(t, err)
	future, _, err := h.paddle.Sign("evt_bad", "", body, now.Add(6*time.Minute))
	require.NoError(t, err)
	clerkBody, err := samples.Body(h.clerk.Name(), "msg_bad", "user.created", nil, now)
	require.NoError(t, err)
	clerkStale, _, err := h.clerk.Sign("msg_bad", "", clerkBody, now.Add(-6*time.Minute))
	require.NoError(t, err)
	clerkGood, _, err := h.clerk.Sign("msg_bad", "", clerkBody, now)
	require.NoError(t, err)
	notJSON := []byte("not json")
	notJSONHdr, _, err := h.paddle.Sign("x", "", notJSON, now)
	require.NoError(t, err)
	noID := []byte(`{"event_type":"subscription.created","data":{}}`)
	noIDHdr, _, err := h.paddle.Sign("x", "", noID, now)
	require.NoError(t, err)

	tampered := append([]byte(nil), body...)
	tampered[len(tampered)-2] ^= 1
	hdr := func(k, v string) http.Header { return http.Header{k: {v}} }
	cases := []struct {
		name, provider string
		hdr            http.Header
		body           []byte
		status         int
		message        string
	}{
		{"tampered body", "paddle", good, tampered, 401, "invalid signature"},
		{"wrong secret", "paddle", wrongHdr, body, 401, "invalid signature"},
		{"stale timestamp", "paddle", stale, body, 401, "timestamp outside tolerance"},
		{"future timestamp", "paddle", future, body, 401, "timestamp outside tolerance"},
		{"missing header", "paddle", http.Header{}, body, 401, "invalid signature"},
		{"malformed header", "paddle", hdr("Paddle-Signature", "ts=abc;h1=zz"), body, 401, "invalid signature"},
		{"clerk stale", "clerk", clerkStale, clerkBody, 401, "timestamp outside tolerance"},
		{"clerk missing headers", "clerk", http.Header{}, clerkBody, 401, "invalid signature"},
		{"clerk malformed signature", "clerk", func() http.Header {
			c := clerkGood.Clone()
			c.Set("svix-signature", "v1,!!!")
			return c
		}(), clerkBody, 401, "invalid signature"},
		{"clerk tampered id", "clerk", func() http.Header {
			c := clerkGood.Clone()
			c.Set("svix-id", "msg_other")
			return c
		}(), clerkBody, 401, "invalid signature"},
		{"signed but not JSON", "paddle", notJSONHdr, notJSON, 400, ""},
		{"signed but no event id", "paddle", noIDHdr, noID, 400, ""},
		{"unknown provider", "stripe", good, body, 404, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := h.post(c.provider, c.hdr, c.body)
			require.Equal(t, c.status, a.status, "%v", a.body)
			if c.message != "" {
				require.Equal(t, c.message, a.body["error"])
			}
		})
	}
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_event_status`), "rejected deliveries must leave no archive row")
	require.Zero(t, h.count(`SELECT count(*) FROM processed_webhook_events`))
}

func TestMethodAndSizeLimits(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) { c.MaxBodyBytes = 4096 })
	resp, err := http.Get(h.base + "/webhooks/paddle")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "POST", resp.Header.Get("Allow"))

	big := bytes.Repeat([]byte("x"), 8192)
	hdr, _, err := h.paddle.Sign("x", "", big, time.Now())
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, h.base+"/webhooks/paddle", bytes.NewReader(big))
	require.NoError(t, err)
	req.Header = hdr
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_event_status`))
}

func TestUnpublishableTypeIsArchivedFailed(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	for _, typ := range []string{"subscription created", "a.*", "a.>", "a..b", ".a", "sub/x"} {
		eventID := fmt.Sprintf("evt_badtype_%x", typ)
		a := h.deliver("paddle", eventID, typ)
		require.Equal(t, http.StatusOK, a.status, "type %q: %v", typ, a.body)
		require.Equal(t, false, a.body["idempotent"])
		require.Equal(t, map[string]int{"FAILED": 1}, h.statusCounts("paddle", eventID), "type %q", typ)
		var msg string
		require.NoError(t, h.pool.QueryRow(context.Background(),
			`SELECT error_message FROM webhook_event_status WHERE event_id = $1`, eventID).Scan(&msg))
		require.Contains(t, msg, "cannot publish")
		// A provider retry is a duplicate: the dedup row is kept.
		a = h.deliver("paddle", eventID, typ)
		require.Equal(t, true, a.body["idempotent"])
	}
	h.waitPublished()
	require.Empty(t, h.streamMsgIDs())
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200} {
		resp, err := http.Get(h.base + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "%s: %s", path, body)
		if path == "/metrics" {
			require.Contains(t, string(body), "hub_outbox_pending")
			require.Contains(t, string(body), "hub_commit_batch_deliveries_count")
		}
	}
}

// A body the NATS server could never take (over its max_payload: 1 MB by
// default, 8 MiB for the embedded server) is refused before it is
// archived: committed, it would stay PENDING forever.
func TestBodyOverNATSMaxPayload(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) { c.MaxBodyBytes = 16 << 20 })
	pad := bytes.Repeat([]byte("x"), 9<<20)
	body := []byte(`{"event_id":"evt_huge","event_type":"subscription.created","data":{"pad":"` + string(pad) + `"}}`)
	hdr, _, err := h.paddle.Sign("evt_huge", "", body, time.Now())
	require.NoError(t, err)
	a := h.post("paddle", hdr, body)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status, "%v", a.body)
	require.Contains(t, a.body["error"], "stream accepts")
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_event_status`))
}
