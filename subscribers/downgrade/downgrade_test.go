package downgrade_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/downgrade"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func start(t *testing.T, env *subtest.Env, concurrency int, mods ...func(*subscriber.Config)) *subscriber.Subscriber {
	t.Helper()
	cfg := env.Config(t, downgrade.Name)
	cfg.Migrations = downgrade.Migrations
	cfg.Concurrency = concurrency
	for _, m := range mods {
		m(&cfg)
	}
	sub, err := subscriber.New(cfg)
	require.NoError(t, err)
	require.NoError(t, downgrade.Register(sub))
	subtest.Start(t, sub)
	return sub
}

func ev(t *testing.T, eventID, eventType string, at time.Time, subID string, custom map[string]any) subtest.Message {
	return subtest.PaddleSubscription(t, eventID, eventType, at, subID, "ctm_"+subID, custom)
}

func account(t *testing.T, env *subtest.Env, subID string) downgrade.Account {
	t.Helper()
	a, err := downgrade.GetAccount(context.Background(), env.Pool, subID)
	require.NoError(t, err)
	return a
}

func planChanges(t *testing.T, env *subtest.Env, where string, args ...any) int {
	return env.Count(t, "SELECT count(*) FROM downgrade.plan_changes WHERE "+where, args...)
}

// Acceptance: created and canceled, each delivered 10 times, make exactly
// one plan change (pro → free), whatever order the 4 workers apply them in.
func TestEachCancellationDowngradesOnce(t *testing.T) {
	env := subtest.NewParallel(t)
	sub := start(t, env, 4)
	created := ev(t, "evt_created", schema.PaddleSubscriptionCreated, t0, "sub_1", map[string]any{"plan": "pro"})
	canceled := ev(t, "evt_canceled", schema.PaddleSubscriptionCanceled, t0.Add(time.Hour), "sub_1", map[string]any{"plan": "pro"})
	env.DeliverTenTimes(t, sub, created, canceled)

	require.Equal(t, 1, planChanges(t, env, "event_id = 'evt_canceled'"))
	require.Equal(t, 1, planChanges(t, env, "TRUE"))
	var from, to, customer string
	require.NoError(t, env.Pool.QueryRow(context.Background(), "SELECT from_plan, to_plan, customer_id FROM downgrade.plan_changes").Scan(&from, &to, &customer))
	require.Equal(t, []string{"pro", "free", "ctm_sub_1"}, []string{from, to, customer})
	a := account(t, env, "sub_1")
	require.Equal(t, downgrade.PlanFree, a.Plan)
	require.Equal(t, "canceled", a.Status)
	require.Equal(t, "evt_canceled", a.LastEventID)
	require.True(t, a.LastOccurredAt.Equal(t0.Add(time.Hour)))
	require.EqualValues(t, 2, sub.Stats().Processed+sub.Stats().SkippedStale)
}

// Acceptance: a stale subscription.canceled (older occurred_at than an
// update already applied) does not change the plan; a late, older
// subscription.updated does not re-activate a canceled subscription.
func TestStaleEventsDoNotChangeThePlan(t *testing.T) {
	env := subtest.NewParallel(t)
	sub := start(t, env, 1)
	steps := []struct {
		msg       subtest.Message
		wantPlan  string
		wantStale uint64
	}{
		{ev(t, "evt_1", schema.PaddleSubscriptionCreated, t0, "sub_a", map[string]any{"plan": "pro"}), "pro", 0},
		{ev(t, "evt_3", schema.PaddleSubscriptionUpdated, t0.Add(3*time.Minute), "sub_a", map[string]any{"plan": "team"}), "team", 0},
		// Canceled at t0+2m, but the update of t0+3m was applied already.
		{ev(t, "evt_2", schema.PaddleSubscriptionCanceled, t0.Add(2*time.Minute), "sub_a", nil), "team", 1},
		// Same subscription, now really canceled.
		{ev(t, "evt_5", schema.PaddleSubscriptionCanceled, t0.Add(5*time.Minute), "sub_a", nil), "free", 1},
		// A late update from before the cancellation.
		{ev(t, "evt_4", schema.PaddleSubscriptionUpdated, t0.Add(4*time.Minute), "sub_a", map[string]any{"plan": "enterprise"}), "free", 2},
		// The same instant as the cancellation is not newer either.
		{ev(t, "evt_5b", schema.PaddleSubscriptionUpdated, t0.Add(5*time.Minute), "sub_a", map[string]any{"plan": "pro"}), "free", 3},
	}
	for i, s := range steps {
		env.Publish(t, s.msg)
		require.Eventually(t, func() bool { st := sub.Stats(); return st.Processed+st.SkippedStale == uint64(i+1) }, subtest.Timeout, subtest.Tick)
		require.Equal(t, s.wantPlan, account(t, env, "sub_a").Plan, "after %s", s.msg.EventID)
		require.Equal(t, s.wantStale, sub.Stats().SkippedStale, "after %s", s.msg.EventID)
	}
	require.Equal(t, 0, planChanges(t, env, "event_id = 'evt_2'"))
	require.Equal(t, 1, planChanges(t, env, "TRUE"))
	require.Equal(t, 1, planChanges(t, env, "event_id = 'evt_5' AND from_plan = 'team' AND to_plan = 'free'"))
	for _, id := range []string{"evt_2", "evt_4", "evt_5b"} {
		require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM downgrade.processed_messages WHERE event_id = $1 AND outcome = 'skipped_stale'", id))
	}
}

func TestPlans(t *testing.T) {
	env := subtest.NewParallel(t)
	sub := start(t, env, 1)
	cases := []struct {
		name        string
		events      []subtest.Message
		subID       string
		wantPlan    string
		wantStatus  string
		wantChanges []string // from_plan of each change
	}{
		{"created without plan is paid", []subtest.Message{
			ev(t, "p1", schema.PaddleSubscriptionCreated, t0, "sub_p1", nil),
		}, "sub_p1", "paid", "active", nil},
		{"updated changes the plan without a downgrade", []subtest.Message{
			ev(t, "p2a", schema.PaddleSubscriptionCreated, t0, "sub_p2", map[string]any{"plan": "pro"}),
			ev(t, "p2b", schema.PaddleSubscriptionUpdated, t0.Add(time.Minute), "sub_p2", map[string]any{"plan": "team"}),
		}, "sub_p2", "team", "active", nil},
		{"canceled before created was seen", []subtest.Message{
			ev(t, "p3", schema.PaddleSubscriptionCanceled, t0, "sub_p3", map[string]any{"plan": "pro"}),
		}, "sub_p3", "free", "canceled", []string{"pro"}},
		{"canceled twice downgrades once", []subtest.Message{
			ev(t, "p4a", schema.PaddleSubscriptionCreated, t0, "sub_p4", nil),
			ev(t, "p4b", schema.PaddleSubscriptionCanceled, t0.Add(time.Minute), "sub_p4", nil),
			ev(t, "p4c", schema.PaddleSubscriptionCanceled, t0.Add(2*time.Minute), "sub_p4", nil),
		}, "sub_p4", "free", "canceled", []string{"paid"}},
	}
	var n uint64
	for _, c := range cases {
		for _, m := range c.events {
			env.Publish(t, m)
			n++
		}
	}
	require.Eventually(t, func() bool { return sub.Stats().Processed == n }, subtest.Timeout, subtest.Tick)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := account(t, env, c.subID)
			require.Equal(t, c.wantPlan, a.Plan)
			require.Equal(t, c.wantStatus, a.Status)
			rows, err := env.Pool.Query(context.Background(), "SELECT from_plan FROM downgrade.plan_changes WHERE subscription_id = $1 ORDER BY id", c.subID)
			require.NoError(t, err)
			var got []string
			for rows.Next() {
				var f string
				require.NoError(t, rows.Scan(&f))
				got = append(got, f)
			}
			require.NoError(t, rows.Err())
			require.Equal(t, c.wantChanges, got)
		})
	}

	mux := http.NewServeMux()
	downgrade.Routes(mux, env.Pool)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/accounts/sub_p4", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var a downgrade.Account
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &a))
	require.Equal(t, "free", a.Plan)
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/accounts/sub_nope", nil))
	require.Equal(t, http.StatusNotFound, rec.Code)
}

// A Paddle body whose data.id or plan holds \u0000 is
// dead-lettered at its first attempt with a readable error; the account
// of another subscription is updated meanwhile.
func TestUnstorablePayloadsAreDeadLettered(t *testing.T) {
	env := subtest.NewParallel(t)
	sub := start(t, env, 2, subtest.OneDelivery)
	bad := map[string]string{
		"evt_nul_id":   "data.id",
		"evt_nul_plan": "data.custom_data.plan",
	}
	env.Publish(t, ev(t, "evt_nul_id", schema.PaddleSubscriptionCanceled, t0, "\x00", nil))
	env.Publish(t, ev(t, "evt_nul_plan", schema.PaddleSubscriptionUpdated, t0, "sub_n", map[string]any{"plan": "pro\x00"}))
	env.Publish(t, ev(t, "evt_ok", schema.PaddleSubscriptionCreated, t0, "sub_ok", nil))
	require.Eventually(t, func() bool { s := sub.Stats(); return s.DeadLettered == 2 && s.Processed == 1 }, subtest.Timeout, subtest.Tick)
	env.WaitAllAcked(t, downgrade.Name)
	require.EqualValues(t, 2, sub.Stats().Failed, "one attempt each")
	require.Equal(t, "paid", account(t, env, "sub_ok").Plan)

	dls, err := subscriber.ListDeadLetters(context.Background(), env.Pool, downgrade.Name)
	require.NoError(t, err)
	require.Len(t, dls, 2)
	for _, d := range dls {
		require.Equal(t, 1, d.Attempts)
		require.Contains(t, d.Error, subscriber.ErrUnstorable.Error())
		require.Contains(t, d.Error, bad[d.EventID])
		require.True(t, subscriber.Storable(d.Error))
	}
	require.Zero(t, env.Count(t, "SELECT count(*) FROM downgrade.accounts WHERE subscription_id <> 'sub_ok'"))
}
