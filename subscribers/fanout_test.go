package subscribers_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/credits"
	"github.com/hookhub/hookhub/subscribers/downgrade"
	"github.com/hookhub/hookhub/subscribers/email"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// The three services in one process (as `hub dev` runs them), on one pool,
// one connection and one registry: subscription.created reaches credits
// and downgrade, subscription.canceled reaches downgrade and email (one
// event, two subscribers), each through its own durable consumer, and
// re-publications change nothing.
func TestFanOut(t *testing.T) {
	env := subtest.NewParallel(t)
	reg := prometheus.NewRegistry()
	newSub := func(name string) *subscriber.Subscriber {
		cfg := env.Config(t, name)
		cfg.Registerer = reg
		switch name {
		case credits.Name:
			cfg.Migrations = credits.Migrations
		case email.Name:
			cfg.Migrations = email.Migrations
		case downgrade.Name:
			cfg.Migrations = downgrade.Migrations
		}
		sub, err := subscriber.New(cfg)
		require.NoError(t, err)
		return sub
	}
	cr, em, dg := newSub(credits.Name), newSub(email.Name), newSub(downgrade.Name)
	require.NoError(t, credits.Register(cr, credits.Options{}))
	require.NoError(t, email.Register(em, email.Options{
		Sender: email.NewSender(email.LogAddr, subtest.Logger(t)), Pool: env.Pool, Registerer: reg,
		Logger: subtest.Logger(t), SendInterval: 20 * time.Millisecond,
	}))
	require.NoError(t, downgrade.Register(dg))
	for _, s := range []*subscriber.Subscriber{cr, em, dg} {
		subtest.Start(t, s)
	}

	t0 := time.Now().Add(-time.Hour)
	created := subtest.PaddleSubscription(t, "evt_new", schema.PaddleSubscriptionCreated, t0, "sub_f", "ctm_f", map[string]any{"plan": "pro", "credits": 40, "email": "f@example.com"})
	canceled := subtest.PaddleSubscription(t, "evt_gone", schema.PaddleSubscriptionCanceled, t0.Add(time.Minute), "sub_f", "ctm_f", map[string]any{"plan": "pro", "email": "f@example.com"})
	for _, m := range []subtest.Message{created, canceled} {
		env.Publish(t, m)
		env.Republish(t, m, 2)
	}
	// Each subscriber gets only its subjects: credits and email 3
	// messages, downgrade all 6.
	for s, n := range map[*subscriber.Subscriber]uint64{cr: 3, em: 3, dg: 6} {
		require.Eventually(t, func() bool {
			st := s.Stats()
			return st.Processed+st.SkippedDuplicate+st.SkippedStale == n
		}, subtest.Timeout, subtest.Tick, s.Name())
		env.WaitAllAcked(t, s.Name())
	}
	require.Eventually(t, func() bool {
		return env.Count(t, "SELECT count(*) FROM email.outbox WHERE sent_at IS NOT NULL") == 1
	}, subtest.Timeout, subtest.Tick)

	b, err := credits.GetBalance(context.Background(), env.Pool, "ctm_f")
	require.NoError(t, err)
	require.Equal(t, int64(40), b.Balance)
	require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM credits.ledger"))
	require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM email.outbox WHERE event_id = 'evt_gone' AND kind = 'cancellation'"))
	require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM email.outbox"))
	require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM downgrade.plan_changes WHERE event_id = 'evt_gone'"))
	a, err := downgrade.GetAccount(context.Background(), env.Pool, "sub_f")
	require.NoError(t, err)
	require.Equal(t, downgrade.PlanFree, a.Plan)

	require.EqualValues(t, 1, cr.Stats().Processed)
	require.EqualValues(t, 1, em.Stats().Processed)
	require.EqualValues(t, 2, dg.Stats().Processed+dg.Stats().SkippedStale)
}
