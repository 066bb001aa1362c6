// Package testhub starts a whole hub (hub/service) in-process for a test,
// against real Postgres and JetStream (hub/internal/hubdb's Pool and
// internal/hubtest's JetStream), and gives the test what every test of a
// whole hub needs:
// signing and POSTing webhooks, counting rows, reading the stream, waiting
// for the outbox to drain. It is the one way a test runs a hub. It is apart
// from hubtest so that the packages the hub is built from can still use
// hubtest in their own tests.
//
// A test's configuration starts from the defaults (Defaults), never from
// the environment: a shell set up for production (HUB_NATS_URL,
// HUB_ADMIN_ADDR, ...) does not change what a test runs.
package testhub

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
)

// Bounds of the waits: generous, the machine may be loaded.
const (
	// StreamTimeout bounds how long WaitStream waits.
	StreamTimeout = 20 * time.Second
	// WaitTimeout bounds Eventually and WaitPublished.
	WaitTimeout = 60 * time.Second
	// Tick is how often the waits poll.
	Tick = 20 * time.Millisecond
	// StopTimeout bounds how long Stop waits for a graceful shutdown.
	StopTimeout = 30 * time.Second
)

// Hub is a hub running in-process until the test ends or Stop.
type Hub struct {
	t testing.TB
	// Service is the running hub.
	Service *service.Service
	// URL is the webhook listener's base URL, http://host:port.
	URL string
	// AdminURL is the admin listener's base URL; empty without
	// HUB_ADMIN_ADDR.
	AdminURL string
	// Config is the configuration the hub runs with.
	Config service.Config
	cancel context.CancelFunc
	done   chan error
	conn   *clients
}

// clients are the test's own connections to the hub's database and NATS
// server, opened on first use and closed when the test that started the
// hub (owner) ends.
type clients struct {
	owner testing.TB
	once  sync.Once
	pool  *pgxpool.Pool
	js    jetstream.JetStream
}

// Defaults is the hub's default configuration, as `hub serve` loads it in
// an empty environment: the HUB_* variables of the test's environment are
// never read.
func Defaults(t testing.TB) service.Config {
	t.Helper()
	var cfg service.Config
	hubtest.Defaults(t, &cfg)
	cfg.StandardSecrets = map[string][]string{} // as LoadConfig leaves it
	return cfg
}

// Config is the default configuration (Defaults) pointed at dbURL and
// natsURL, with its webhook listener on a free port of 127.0.0.1.
func Config(t testing.TB, dbURL, natsURL string) service.Config {
	t.Helper()
	cfg := Defaults(t)
	cfg.DatabaseURL, cfg.NATSURL, cfg.HTTPAddr = dbURL, natsURL, "127.0.0.1:0"
	return cfg
}

// New starts a hub on a fresh database and JetStream server (hubdb.Pool
// and hubtest.JetStream) with Config changed by mods, and waits for its
// stream.
func New(t testing.TB, deps service.Deps, mods ...func(*service.Config)) *Hub {
	t.Helper()
	_, url := hubdb.Pool(t)
	n := hubtest.JetStream(t)
	cfg := Config(t, url, n.URL())
	for _, m := range mods {
		m(&cfg)
	}
	h := Start(t, cfg, deps)
	h.WaitStream(h.JetStream(), cfg.Stream)
	return h
}

// Start runs a hub with cfg and deps until the test ends, when it is
// stopped gracefully and Run must return nil. It returns once the hub
// listens; see WaitStream.
func Start(t testing.TB, cfg service.Config, deps service.Deps) *Hub {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := service.New(ctx, cfg, deps)
	if err != nil {
		cancel()
		t.Fatalf("testhub: start the hub: %v", err)
	}
	h := &Hub{t: t, Service: svc, URL: "http://" + svc.Addr().String(), Config: cfg, cancel: cancel, done: make(chan error, 1), conn: &clients{owner: t}}
	if a := svc.AdminAddr(); a != nil {
		h.AdminURL = "http://" + a.String()
	}
	go func() { h.done <- svc.Run(ctx) }()
	t.Cleanup(h.Stop)
	return h
}

// WaitStream waits until the hub has created its stream, seen through js.
func (h *Hub) WaitStream(js jetstream.JetStream, stream string) {
	h.t.Helper()
	deadline := time.Now().Add(StreamTimeout)
	for {
		_, err := js.Stream(context.Background(), stream)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("testhub: the hub did not create its stream %s: %v", stream, err)
		}
		time.Sleep(10 * time.Millisecond) // poll: nothing to wait on
	}
}

// For is the hub seen from another test (a subtest of the one that
// started it, which shares the hub): its helpers report failures to t.
// Only the test that started the hub stops it.
func (h *Hub) For(t testing.TB) *Hub {
	return &Hub{t: t, Service: h.Service, URL: h.URL, AdminURL: h.AdminURL, Config: h.Config, conn: h.conn}
}

// Stop shuts the hub down gracefully and fails the test if Run returns an
// error or takes longer than StopTimeout. Stopping a stopped hub does
// nothing.
func (h *Hub) Stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Fatalf("testhub: the hub stopped with an error: %v", err)
		}
	case <-time.After(StopTimeout):
		h.t.Fatalf("testhub: the hub did not stop within %v", StopTimeout)
	}
}

// open connects the test's own pool and JetStream client to the hub's
// database and NATS server, once, closed when the test ends.
func (h *Hub) open() {
	c := h.conn
	c.once.Do(func() {
		pool, err := pgxpool.New(context.Background(), h.Config.DatabaseURL)
		require.NoError(h.t, err, "testhub: pool")
		c.owner.Cleanup(pool.Close)
		nc, err := nats.Connect(h.Config.NATSURL, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
			nats.RetryOnFailedConnect(true))
		require.NoError(h.t, err, "testhub: connect nats")
		c.owner.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		require.NoError(h.t, err, "testhub: jetstream")
		c.pool, c.js = pool, js
	})
	if c.pool == nil {
		h.t.Fatalf("testhub: could not connect to the hub")
	}
}

// Pool is a pool on the hub's database, the test's own.
func (h *Hub) Pool() *pgxpool.Pool {
	h.open()
	return h.conn.pool
}

// JetStream is a JetStream client of the hub's NATS server, the test's own.
func (h *Hub) JetStream() jetstream.JetStream {
	h.open()
	return h.conn.js
}

// Webhook is one signed webhook, ready to be POSTed (as often as wanted).
type Webhook struct {
	// Provider is the provider's name.
	Provider string
	// Target is the request-target: /webhooks/<provider>[?...].
	Target string
	// Header holds the signature headers.
	Header http.Header
	// Body is the signed body.
	Body []byte
}

// Sign signs a sample body (hub/provider/samples) of the event eventID of
// type eventType of the configured provider name, with its first secret.
func (h *Hub) Sign(name, eventID, eventType string) Webhook {
	h.t.Helper()
	body, err := samples.Body(name, eventID, eventType, nil, time.Now())
	require.NoError(h.t, err)
	return h.SignBody(name, eventID, eventType, body)
}

// SignBody signs body as the event eventID of type eventType of the
// configured provider name, with its first secret.
func (h *Hub) SignBody(name, eventID, eventType string, body []byte) Webhook {
	h.t.Helper()
	s := h.signer(name)
	hdr, target, err := s.Sign(eventID, eventType, body, time.Now())
	require.NoError(h.t, err)
	return Webhook{Provider: name, Target: target, Header: hdr, Body: body}
}

func (h *Hub) signer(name string) provider.Signer {
	h.t.Helper()
	ps, err := h.Config.Providers()
	require.NoError(h.t, err)
	for _, p := range ps {
		if p.Name() == name {
			s, ok := p.(provider.Signer)
			require.True(h.t, ok, "testhub: %s cannot sign", name)
			return s
		}
	}
	h.t.Fatalf("testhub: provider %s is not configured (no secrets)", name)
	return nil
}

// Answer is the hub's answer to a webhook.
type Answer struct {
	// Status is the HTTP status.
	Status int
	// Raw is the body as sent.
	Raw []byte
	// Body is the JSON body decoded; nil when it is not JSON.
	Body map[string]any
}

// Idempotent reports whether the hub called the webhook a duplicate.
func (a Answer) Idempotent() bool { return a.Body["idempotent"] == true }

// Post POSTs w to the hub's webhook listener.
func (h *Hub) Post(w Webhook) Answer {
	h.t.Helper()
	target := w.Target
	if target == "" {
		target = "/webhooks/" + w.Provider
	}
	return PostWebhook(h.t, h.URL+target, w.Header, w.Body)
}

// PostWebhook POSTs body with header to url (Content-Type
// application/json unless header sets one) and returns the answer, for a
// test that runs its hub without Hub.
func PostWebhook(t testing.TB, url string, header http.Header, body []byte) Answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := Answer{Status: resp.StatusCode, Raw: raw}
	_ = json.Unmarshal(raw, &a.Body)
	return a
}

// Deliver signs a sample event (Sign) and POSTs it; the hub must answer
// 200.
func (h *Hub) Deliver(name, eventID, eventType string) Answer {
	h.t.Helper()
	a := h.Post(h.Sign(name, eventID, eventType))
	require.Equal(h.t, http.StatusOK, a.Status, "webhook %s %s: %s", name, eventID, a.Raw)
	return a
}

// Count runs a SELECT count(*) query on the hub's database.
func (h *Hub) Count(query string, args ...any) int {
	h.t.Helper()
	var n int
	require.NoError(h.t, h.Pool().QueryRow(context.Background(), query, args...).Scan(&n), query)
	return n
}

// Eventually waits up to WaitTimeout for cond.
func (h *Hub) Eventually(cond func() bool, msg string, args ...any) {
	h.t.Helper()
	require.Eventually(h.t, cond, WaitTimeout, Tick, append([]any{msg}, args...)...)
}

// WaitPublished waits until no archive row is PENDING: every accepted
// event is in the stream (or marked failed).
func (h *Hub) WaitPublished() {
	h.t.Helper()
	h.Eventually(func() bool {
		// A query failing is "not yet" (a test that stops Postgres or
		// terminates connections): the next one opens a new connection.
		var n int
		err := h.Pool().QueryRow(context.Background(), `SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PENDING'`).Scan(&n)
		return err == nil && n == 0
	}, "the outbox did not drain")
}

// StreamInfo is the hub's stream's state.
func (h *Hub) StreamInfo() *jetstream.StreamInfo {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StreamTimeout)
	defer cancel()
	st, err := h.JetStream().Stream(ctx, h.Config.Stream)
	require.NoError(h.t, err)
	info, err := st.Info(ctx)
	require.NoError(h.t, err)
	return info
}

// StreamMsgIDs reads every message of the hub's stream and counts them by
// Nats-Msg-Id. It fails the test if the stream does not exist.
func (h *Hub) StreamMsgIDs() map[string]int {
	h.t.Helper()
	return StreamMsgIDs(h.t, h.JetStream(), h.Config.Stream)
}

// StreamMsgIDs reads every message of stream through js and counts them by
// Nats-Msg-Id, for a test whose hub stops and starts again. It fails the
// test if the stream does not exist.
func StreamMsgIDs(t testing.TB, js jetstream.JetStream, stream string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, h := range StreamHeaders(t, js, stream) {
		out[h.Get(schema.HeaderMsgID)]++
	}
	return out
}

// StreamHeaders reads the headers of every message of stream through js,
// in stream order, with the hub's one stream scanner (relay.Scan: up to
// the stream's last sequence when the read starts, failing rather than
// stopping early on a stall). It fails the test if the stream does not
// exist.
func StreamHeaders(t testing.TB, js jetstream.JetStream, stream string) []nats.Header {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StreamTimeout)
	defer cancel()
	var out []nats.Header
	_, err := relay.Scan{Stream: stream, HeadersOnly: true}.Run(ctx, js, func(m relay.ScanMsg) error {
		out = append(out, m.Msg.Headers())
		return nil
	})
	require.NoError(t, err)
	return out
}
