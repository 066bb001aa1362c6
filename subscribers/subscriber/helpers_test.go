package subscriber_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// effectsMigrations is a test service's schema: an effects table with no
// unique constraint, so counting its rows per event checks the library's
// idempotency.
func effectsMigrations(name string) fstest.MapFS {
	return fstest.MapFS{"00001_effects.sql": &fstest.MapFile{Data: fmt.Appendf(nil, `-- +goose Up
CREATE TABLE %[1]s.effects (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider TEXT NOT NULL,
    event_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    value TEXT
);
CREATE TABLE %[1]s.entities (id TEXT PRIMARY KEY, value TEXT NOT NULL);
-- +goose Down
DROP TABLE %[1]s.entities;
DROP TABLE %[1]s.effects;
`, name)}}
}

// calls counts handler calls per event id.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) add(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[id]++
	return c.n[id]
}

func (c *calls) get(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

// effectHandler records one effect row per call.
func effectHandler(name string, c *calls) subscriber.HandlerFunc {
	return func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		c.add(ev.EventID)
		_, err := tx.Exec(ctx, "INSERT INTO "+name+".effects (provider, event_id, subject) VALUES ($1, $2, $3)", ev.Provider, ev.EventID, ev.Subject)
		return err
	}
}

// newSub returns a subscriber on env named name, with the effects schema
// and test timings; mutate adjusts its config.
func newSub(t *testing.T, env *subtest.Env, name string, mutate func(*subscriber.Config)) *subscriber.Subscriber {
	t.Helper()
	cfg := env.Config(t, name)
	cfg.Migrations = effectsMigrations(name)
	if mutate != nil {
		mutate(&cfg)
	}
	sub, err := subscriber.New(cfg)
	require.NoError(t, err)
	return sub
}

func effects(t *testing.T, env *subtest.Env, name, eventID string) int {
	t.Helper()
	return env.Count(t, "SELECT count(*) FROM "+name+".effects WHERE event_id = $1", eventID)
}

// event returns a small Paddle subscription.created message.
func event(t *testing.T, id string) subtest.Message {
	return subtest.PaddleSubscription(t, id, schema.PaddleSubscriptionCreated, time.Now(), "sub_"+id, "ctm_"+id, nil)
}

// publishEvents publishes n events, prefix_0 to prefix_<n-1>, and returns
// them.
func publishEvents(t *testing.T, env *subtest.Env, prefix string, n int) []subtest.Message {
	t.Helper()
	msgs := make([]subtest.Message, n)
	for i := range msgs {
		msgs[i] = event(t, fmt.Sprintf("%s_%d", prefix, i))
		env.Publish(t, msgs[i])
	}
	return msgs
}

// requireOnce fails unless the handler (counted by c) ran once for each
// of msgs and left one effect row.
func requireOnce(t *testing.T, env *subtest.Env, name string, c *calls, msgs []subtest.Message) {
	t.Helper()
	for _, m := range msgs {
		require.Equal(t, 1, c.get(m.EventID), m.EventID)
		require.Equal(t, 1, effects(t, env, name, m.EventID), m.EventID)
	}
}

// eventually is require.Eventually with the suite's generous timeout.
func eventually(t *testing.T, cond func() bool, msgAndArgs ...any) {
	t.Helper()
	require.Eventually(t, cond, subtest.Timeout, subtest.Tick, msgAndArgs...)
}

func sumStats(subs ...*subscriber.Subscriber) subscriber.Stats {
	var s subscriber.Stats
	for _, sub := range subs {
		x := sub.Stats()
		s.Processed += x.Processed
		s.SkippedDuplicate += x.SkippedDuplicate
		s.SkippedStale += x.SkippedStale
		s.Failed += x.Failed
		s.DeadLettered += x.DeadLettered
		s.Redriven += x.Redriven
	}
	return s
}

func newRegistry() *prometheus.Registry { return prometheus.NewRegistry() }

// gauge returns the value of the gauge name for subscriber sub in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name, sub string) float64 {
	t.Helper()
	return hubtest.RequireMetric(t, reg, name, map[string]string{"subscriber": sub})
}
