package backfill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/backfill/fakeapi"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
)

const (
	stripeSecret = "whsec_backfillTestSecret0000000000000000"
	stripeKey    = "sk_test_backfill0000000000000000key1"
	paddleSecret = "pdl_ntfset_01backfill000000000000000000_BackfillTestSecret00000"
	paddleKey    = "pdl_sdbx_apikey_01backfill0000000000000000_BackfillKey0000000"
	githubSecret = "github-backfill-test-secret"
	githubToken  = "ghp_backfillTestToken000000000000000000"
)

// hubEnv is a whole hub running in-process on a fresh database and an
// embedded JetStream server, with fake provider APIs.
type hubEnv struct {
	t        *testing.T
	cfg      service.Config
	base     string
	pool     *pgxpool.Pool
	js       jetstream.JetStream
	registry *prometheus.Registry
	stripe   *fakeapi.StripeAPI
	paddle   *fakeapi.PaddleAPI
	github   *fakeapi.GitHub
	// eventAge is how long before now the newest event stripeEvents and
	// githubEvents make occurred, less a minute.
	eventAge time.Duration
}

func newHubEnv(t *testing.T, mod ...func(*service.Config)) *hubEnv {
	t.Helper()
	pool, url := hubdb.Pool(t)
	n := hubtest.JetStream(t)
	_, js := n.Connect(t)
	h := &hubEnv{t: t, pool: pool, js: js, registry: prometheus.NewRegistry(),
		stripe: fakeapi.NewStripe(stripeKey), paddle: fakeapi.NewPaddle(paddleKey),
		github: fakeapi.NewGitHub(t, fakeapi.GitHubOptions{Token: githubToken})}
	stripeSrv := httptest.NewServer(h.stripe)
	t.Cleanup(stripeSrv.Close)
	paddleSrv := httptest.NewServer(h.paddle)
	t.Cleanup(paddleSrv.Close)
	h.paddle.BaseURL = paddleSrv.URL
	h.cfg = testhub.Config(t, url, n.URL())
	h.cfg.SetSecrets("stripe", stripeSecret)
	h.cfg.SetSecrets("paddle", paddleSecret)
	h.cfg.SetSecrets("github", githubSecret)
	h.cfg.SetBackfillSetting("stripe", backfill.SettingAPIKey, stripeKey)
	h.cfg.SetBackfillSetting("stripe", backfill.SettingAPIURL, stripeSrv.URL)
	h.cfg.SetBackfillSetting("paddle", backfill.SettingAPIKey, paddleKey)
	h.cfg.SetBackfillSetting("paddle", backfill.SettingAPIURL, paddleSrv.URL)
	h.cfg.SetBackfillSetting("github", backfill.SettingToken, githubToken)
	h.cfg.SetBackfillSetting("github", backfill.SettingHook, h.github.Hook)
	h.cfg.SetBackfillSetting("github", backfill.SettingAPIURL, h.github.URL)
	h.cfg.BackfillWindow = 72 * time.Hour
	for _, m := range mod {
		m(&h.cfg)
	}
	return h
}

// start runs the hub until the test ends.
func (h *hubEnv) start() {
	h.t.Helper()
	hub := testhub.Start(h.t, h.cfg, service.Deps{Registry: h.registry})
	h.base = hub.URL
	hub.WaitStream(h.js, h.cfg.Stream)
}

// engine is a standalone backfill on the hub's database, as `hub backfill`
// builds it: a store without relay grace, nothing published by itself.
func (h *hubEnv) engine() *backfill.Engine {
	st := store.New(h.pool)
	e, err := backfill.New(backfill.Config{Store: st, Ingester: st})
	require.NoError(h.t, err)
	return e
}

func (h *hubEnv) source(name string, pageSize int) backfill.Source {
	h.t.Helper()
	var src backfill.Source
	var err error
	set := func(key string) string { return h.cfg.BackfillSetting(name, key) }
	names := service.BackfillNames(name)
	switch name {
	case "stripe":
		src, err = backfill.NewStripe(backfill.StripeConfig{BaseURL: set(backfill.SettingAPIURL), Key: set(backfill.SettingAPIKey), PageSize: pageSize, Names: names})
	case "paddle":
		src, err = backfill.NewPaddle(backfill.PaddleConfig{BaseURL: set(backfill.SettingAPIURL), Key: set(backfill.SettingAPIKey), PageSize: pageSize, Names: names})
	case "github": // GitHub's page is always 100 deliveries
		src, err = backfill.NewGitHub(backfill.GitHubConfig{BaseURL: set(backfill.SettingAPIURL), Token: set(backfill.SettingToken),
			Hook: set(backfill.SettingHook), Names: names})
	}
	require.NoError(h.t, err)
	return src
}

type answer struct {
	status int
	body   map[string]any
}

// webhook signs body as the provider would and POSTs it to the hub.
func (h *hubEnv) webhook(name, eventID string, body []byte) answer {
	h.t.Helper()
	secret := stripeSecret
	if name == "paddle" {
		secret = paddleSecret
	}
	p, err := provider.New(name, []string{secret}, provider.Options{})
	require.NoError(h.t, err)
	hdr, _, err := p.(provider.Signer).Sign(eventID, "", body, time.Now())
	require.NoError(h.t, err)
	return h.post("/webhooks/"+name, hdr, body)
}

// githubWebhook signs body as GitHub would (X-Hub-Signature-256,
// X-GitHub-Delivery guid, X-GitHub-Event from typ) and POSTs it to the hub.
func (h *hubEnv) githubWebhook(guid, typ string, body []byte) answer {
	h.t.Helper()
	p, err := provider.New("github", []string{githubSecret}, provider.Options{})
	require.NoError(h.t, err)
	hdr, target, err := p.(provider.Signer).Sign(guid, typ, body, time.Now())
	require.NoError(h.t, err)
	return h.post(target, hdr, body)
}

// post sends a webhook to the hub and decodes its JSON answer.
func (h *hubEnv) post(target string, hdr http.Header, body []byte) answer {
	h.t.Helper()
	a := testhub.PostWebhook(h.t, h.base+target, hdr, body)
	require.NotNil(h.t, a.Body, "body %q", a.Raw)
	return answer{status: a.Status, body: a.Body}
}

func (h *hubEnv) count(sql string, args ...any) int {
	h.t.Helper()
	var n int
	require.NoError(h.t, h.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// waitPublished waits until the outbox is empty.
func (h *hubEnv) waitPublished() {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		return h.count(`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PENDING'`) == 0
	}, 30*time.Second, 20*time.Millisecond, "the outbox did not drain")
}

// streamMsgIDs reads every message of the stream and counts them by
// Nats-Msg-Id.
func (h *hubEnv) streamMsgIDs() map[string]int {
	h.t.Helper()
	return testhub.StreamMsgIDs(h.t, h.js, h.cfg.Stream)
}

// streamHeaders reads the headers of every message of the stream.
func (h *hubEnv) streamHeaders() []nats.Header {
	h.t.Helper()
	return testhub.StreamHeaders(h.t, h.js, h.cfg.Stream)
}

// requireEachOnce checks that the stream holds exactly the events of ids,
// each once.
func (h *hubEnv) requireEachOnce(name string, ids []string) {
	h.t.Helper()
	got := h.streamMsgIDs()
	require.Len(h.t, got, len(ids), "messages on the stream")
	for _, id := range ids {
		require.Equal(h.t, 1, got[schema.MsgID(name, id)], "copies of %s on the stream", id)
	}
}

// stripeEvents makes n Stripe events created a minute apart before now,
// newest first; the API fake holds them all.
func (h *hubEnv) stripeEvents(n int) (ids []string, bodies map[string][]byte) {
	h.t.Helper()
	p, err := provider.New("stripe", []string{stripeSecret}, provider.Options{})
	require.NoError(h.t, err)
	bodies = map[string][]byte{}
	now := time.Now().Add(-h.eventAge)
	for i := range n {
		id := fmt.Sprintf("evt_1Backfill%05d", i)
		body, err := samples.Body(p.(provider.Signer).Name(), id, "invoice.paid", nil, now.Add(-time.Duration(i+1)*time.Minute))
		require.NoError(h.t, err)
		require.NoError(h.t, h.stripe.Add(body))
		ids, bodies[id] = append(ids, id), body
	}
	return ids, bodies
}

// paddleEvents makes n Paddle events that occurred a minute apart before
// now (ids sorting as Paddle's do, by creation): the webhook bodies, and
// the API entities the fake holds (the event without notification_id, as
// GET /events lists it).
func (h *hubEnv) paddleEvents(n int, age time.Duration) (ids []string, webhooks map[string][]byte) {
	h.t.Helper()
	p, err := provider.New("paddle", []string{paddleSecret}, provider.Options{})
	require.NoError(h.t, err)
	webhooks = map[string][]byte{}
	now := time.Now().Add(-age)
	for i := range n {
		id := fmt.Sprintf("evt_01hv%022d", 1_000_000-i-int(age/time.Minute))
		body, err := samples.Body(p.(provider.Signer).Name(), id, "subscription.created", nil, now.Add(-time.Duration(i+1)*time.Minute))
		require.NoError(h.t, err)
		var m map[string]json.RawMessage
		require.NoError(h.t, json.Unmarshal(body, &m))
		delete(m, "notification_id")
		entity, err := json.Marshal(m)
		require.NoError(h.t, err)
		require.NoError(h.t, h.paddle.Add(entity))
		ids, webhooks[id] = append(ids, id), body
	}
	return ids, webhooks
}

// githubEvent is an event of the fake GitHub's hook: its original
// delivery and the payload GitHub sent.
type githubEvent struct {
	guid, typ string
	delivery  fakeapi.GitHubDelivery
	body      []byte
}

// githubEvents makes n events of the fake GitHub's hook delivered a minute
// apart before now, newest first, of varied types. Those for which
// arrived(i) is true were answered 200 by the hub (the test sends their
// webhooks); the others' deliveries failed to connect.
func (h *hubEnv) githubEvents(n int, arrived func(i int) bool) []githubEvent {
	h.t.Helper()
	p, err := provider.New("github", []string{githubSecret}, provider.Options{})
	require.NoError(h.t, err)
	types := []string{"push", "pull_request.opened", "issues.closed", "issue_comment.created", "release.published"}
	now := time.Now().Add(-h.eventAge)
	out := make([]githubEvent, n)
	for i := range n {
		guid, typ, at := uuid.NewString(), types[i%len(types)], now.Add(-time.Duration(i+1)*time.Minute)
		body, err := samples.Body(p.(provider.Signer).Name(), guid, typ, nil, at)
		require.NoError(h.t, err)
		d := fakeapi.GitHubDelivery{GUID: guid, DeliveredAt: at, Event: strings.SplitN(typ, ".", 2)[0], Payload: body}
		if arrived(i) {
			d.StatusCode = http.StatusOK
		}
		out[i] = githubEvent{guid: guid, typ: typ, delivery: h.github.Add(d), body: body}
	}
	return out
}
