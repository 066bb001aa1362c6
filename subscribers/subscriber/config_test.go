package subscriber_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// idleDeps returns a pool and a JetStream a subscriber can be built on
// but never uses: the pool connects lazily (to nothing), the server idles.
func idleDeps(t *testing.T) (*pgxpool.Pool, jetstream.JetStream) {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, js := hubtest.JetStream(t).Connect(t)
	return pool, js
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	pool, js := idleDeps(t)
	valid := func() subscriber.Config {
		return subscriber.Config{Name: "credits", Pool: pool, JetStream: js}
	}
	cases := []struct {
		name    string
		mutate  func(*subscriber.Config)
		wantErr string // empty: valid
	}{
		{"defaults", func(*subscriber.Config) {}, ""},
		{"everything set", func(c *subscriber.Config) {
			c.Stream, c.Concurrency, c.MaxDeliver, c.AckWait, c.MaxAckPending = "EVENTS", 8, 10, time.Minute, 64
			c.Backoff = []time.Duration{time.Second}
		}, ""},
		{"empty name", func(c *subscriber.Config) { c.Name = "" }, "Name"},
		{"upper-case name", func(c *subscriber.Config) { c.Name = "Credits" }, "Name"},
		{"name with a dot", func(c *subscriber.Config) { c.Name = "credits.v2" }, "Name"},
		{"pg_ name", func(c *subscriber.Config) { c.Name = "pg_credits" }, "Name"},
		{"no pool", func(c *subscriber.Config) { c.Pool = nil }, "Pool is required"},
		{"no jetstream", func(c *subscriber.Config) { c.JetStream = nil }, "JetStream is required"},
		{"bad stream", func(c *subscriber.Config) { c.Stream = "WEB.HOOKS" }, "Stream"},
		{"negative concurrency", func(c *subscriber.Config) { c.Concurrency = -1 }, "Concurrency"},
		{"huge concurrency", func(c *subscriber.Config) { c.Concurrency = 5000 }, "Concurrency"},
		{"negative max deliver", func(c *subscriber.Config) { c.MaxDeliver = -1 }, "MaxDeliver"},
		{"zero backoff step", func(c *subscriber.Config) { c.Backoff = []time.Duration{time.Second, 0} }, "Backoff[1]"},
		{"tiny ack wait", func(c *subscriber.Config) { c.AckWait = time.Millisecond }, "AckWait"},
		{"max ack pending below concurrency", func(c *subscriber.Config) { c.Concurrency, c.MaxAckPending = 8, 4 }, "MaxAckPending"},
		{"negative handler timeout", func(c *subscriber.Config) { c.HandlerTimeout = -time.Second }, "HandlerTimeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			cfg.Registerer = prometheus.NewRegistry()
			tc.mutate(&cfg)
			sub, err := subscriber.New(cfg)
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, cfg.Name, sub.Name())
				return
			}
			require.ErrorIs(t, err, subscriber.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestHandleRejects(t *testing.T) {
	t.Parallel()
	pool, js := idleDeps(t)
	h := func(context.Context, pgx.Tx, subscriber.Event) error { return nil }
	cases := []struct {
		name     string
		existing []string
		subject  string
		handler  subscriber.HandlerFunc
	}{
		{"invalid token", nil, "paddle.sub scription", h},
		{"empty subject", nil, "", h},
		{"misplaced >", nil, "paddle.>.created", h},
		{"same subject twice", []string{"paddle.subscription.created"}, "paddle.subscription.created", h},
		{"overlapping wildcard", []string{"paddle.subscription.created"}, "paddle.subscription.*", h},
		{"overlapping full wildcard", []string{"clerk.user.created"}, "clerk.>", h},
		{"nil handler", nil, "clerk.user.created", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sub, err := subscriber.New(subscriber.Config{Name: "x", Pool: pool, JetStream: js})
			require.NoError(t, err)
			for _, s := range tc.existing {
				sub.Handle(s, h)
			}
			require.Panics(t, func() { sub.Handle(tc.subject, tc.handler) })
		})
	}
	sub, err := subscriber.New(subscriber.Config{Name: "x", Pool: pool, JetStream: js})
	require.NoError(t, err)
	sub.Handle("paddle.subscription.created", h)
	sub.Handle("paddle.subscription.canceled", h)
	sub.Handle("clerk.user.*", h)
	require.Equal(t, []string{"clerk.user.*", "paddle.subscription.canceled", "paddle.subscription.created"}, sub.Subjects())
	require.ErrorContains(t, (&subscriber.Subscriber{}).Healthy(), "not running")
}

// /healthz follows Run; /metrics serves the subscriber's counters from
// the registry it was given.
func TestServeMux(t *testing.T) {
	env := subtest.NewParallel(t)
	reg := prometheus.NewRegistry()
	sub := newSub(t, env, "web", func(c *subscriber.Config) { c.Registerer = reg })
	sub.Handle("paddle.subscription.created", effectHandler("web", &calls{}))
	srv := httptest.NewServer(subscriber.NewServeMux(reg, sub))
	t.Cleanup(srv.Close)
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	code, body := get("/healthz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "not running")

	r := subtest.Start(t, sub)
	env.Publish(t, event(t, "evt_web"))
	eventually(t, func() bool { return sub.Stats().Processed == 1 })
	code, body = get("/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)
	code, body = get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `hookhub_subscriber_processed_total{subscriber="web"} 1`)
	require.Contains(t, body, `hookhub_subscriber_handler_duration_seconds_count{subscriber="web"} 1`)
	require.True(t, strings.Contains(body, `hookhub_subscriber_dead_lettered_total{subscriber="web"} 0`))

	// A second subscriber on the same registry shares the metric families.
	other, err := subscriber.New(subscriber.Config{Name: "web2", Pool: env.Pool, JetStream: env.JS, Registerer: reg})
	require.NoError(t, err)
	require.NotNil(t, other)

	require.NoError(t, r.Stop())
	code, _ = get("/healthz")
	require.Equal(t, http.StatusServiceUnavailable, code)
}

// Validate checks a Config as it is, each invalid field a *FieldError:
// zero fields fail until WithDefaults fills them in, as New does.
func TestValidateNamesFields(t *testing.T) {
	t.Parallel()
	pool, js := idleDeps(t)
	cfg := subscriber.Config{Name: "credits", Pool: pool, JetStream: js}
	require.NoError(t, cfg.WithDefaults().Validate())

	err := cfg.Validate()
	require.ErrorIs(t, err, subscriber.ErrInvalidConfig)
	var fields []string
	for _, fe := range subscriber.InvalidFields(err) {
		fields = append(fields, fe.Field)
	}
	require.Equal(t, []string{"Stream", "Concurrency", "MaxDeliver", "AckWait", "ShutdownTimeout", "RedriveInterval"}, fields)

	cfg = cfg.WithDefaults()
	cfg.Pool, cfg.AckWait, cfg.Backoff = nil, 10*time.Millisecond, []time.Duration{time.Second, -time.Second}
	_, err = subscriber.New(cfg)
	require.Equal(t, []*subscriber.FieldError{
		{Field: "Pool", Reason: "is required"},
		{Field: "Backoff[1]", Reason: "must be positive, got -1s"},
		{Field: "AckWait", Reason: "must be at least 100ms, got 10ms"},
	}, subscriber.InvalidFields(err))
	require.Empty(t, subscriber.InvalidFields(nil))
}

// WithDefaults fills in only zero fields, and copies Backoff.
func TestWithDefaults(t *testing.T) {
	t.Parallel()
	got := subscriber.Config{Concurrency: 300}.WithDefaults()
	require.Equal(t, subscriber.DefaultStream, got.Stream)
	require.Equal(t, 300, got.Concurrency)
	require.Equal(t, 300, got.MaxAckPending, "at least Concurrency")
	require.Equal(t, subscriber.DefaultAckWait, got.AckWait)
	require.Equal(t, subscriber.DefaultBackoff, got.Backoff)
	got.Backoff[0] = time.Hour
	require.NotEqual(t, time.Hour, subscriber.DefaultBackoff[0])
}
