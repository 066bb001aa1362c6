package credits_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/credits"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

func start(t *testing.T, env *subtest.Env, opts credits.Options, mods ...func(*subscriber.Config)) *subscriber.Subscriber {
	t.Helper()
	cfg := env.Config(t, credits.Name)
	cfg.Migrations = credits.Migrations
	for _, m := range mods {
		m(&cfg)
	}
	sub, err := subscriber.New(cfg)
	require.NoError(t, err)
	require.NoError(t, credits.Register(sub, opts))
	subtest.Start(t, sub)
	return sub
}

func created(t *testing.T, eventID, customerID string, custom map[string]any) subtest.Message {
	return subtest.PaddleSubscription(t, eventID, schema.PaddleSubscriptionCreated, time.Now(), "sub_"+eventID, customerID, custom)
}

func ledgerRows(t *testing.T, env *subtest.Env, eventID string) int {
	return env.Count(t, "SELECT count(*) FROM credits.ledger WHERE event_id = $1", eventID)
}

// Acceptance: each subscription.created delivered 10 times (redeliveries
// and re-publications under new message ids) leaves exactly one ledger row;
// other subjects of the stream are not consumed.
func TestEachEventGrantsOnce(t *testing.T) {
	env := subtest.NewParallel(t)
	sub := start(t, env, credits.Options{})
	msgs := []subtest.Message{
		created(t, "evt_a", "ctm_1", map[string]any{"credits": 250}),
		created(t, "evt_b", "ctm_1", nil),
		created(t, "evt_c", "ctm_2", map[string]any{"plan": "pro"}),
	}
	env.DeliverTenTimes(t, sub, msgs...)
	for _, m := range msgs {
		require.Equal(t, 1, ledgerRows(t, env, m.EventID), m.EventID)
	}
	require.EqualValues(t, 3, sub.Stats().Processed)
	require.EqualValues(t, 27, sub.Stats().SkippedDuplicate)

	b, err := credits.GetBalance(context.Background(), env.Pool, "ctm_1")
	require.NoError(t, err)
	require.Equal(t, credits.Balance{CustomerID: "ctm_1", Balance: 350, Entries: 2}, b)

	mux := http.NewServeMux()
	credits.Routes(mux, env.Pool)
	for _, c := range []struct {
		customer string
		want     credits.Balance
	}{
		{"ctm_1", credits.Balance{CustomerID: "ctm_1", Balance: 350, Entries: 2}},
		{"ctm_2", credits.Balance{CustomerID: "ctm_2", Balance: 100, Entries: 1}},
		{"ctm_unknown", credits.Balance{CustomerID: "ctm_unknown"}},
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/balances/"+c.customer, nil))
		require.Equal(t, http.StatusOK, rec.Code)
		var got credits.Balance
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
		require.Equal(t, c.want, got)
	}
}

func TestGrantAmounts(t *testing.T) {
	env := subtest.NewParallel(t)
	sub := start(t, env, credits.Options{DefaultGrant: 7})
	cases := []struct {
		eventID string
		custom  map[string]any
		want    int64
		dead    bool
	}{
		{"evt_custom", map[string]any{"credits": 1000}, 1000, false},
		{"evt_default", nil, 7, false},
		{"evt_zero", map[string]any{"credits": 0}, 0, false},
		{"evt_other_custom_data", map[string]any{"email": "a@example.com"}, 7, false},
		{"evt_negative", map[string]any{"credits": -5}, 0, true},
		{"evt_not_a_number", map[string]any{"credits": "lots"}, 0, true},
	}
	for _, c := range cases {
		env.Publish(t, created(t, c.eventID, "ctm_"+c.eventID, c.custom))
	}
	noCustomer := created(t, "evt_no_customer", "", nil)
	env.Publish(t, noCustomer)
	env.WaitAllAcked(t, credits.Name)
	require.EqualValues(t, 4, sub.Stats().Processed)
	require.EqualValues(t, 3, sub.Stats().DeadLettered)
	for _, c := range cases {
		var amount int64
		err := env.Pool.QueryRow(context.Background(), "SELECT COALESCE(SUM(amount), 0) FROM credits.ledger WHERE event_id = $1", c.eventID).Scan(&amount)
		require.NoError(t, err)
		require.Equal(t, c.want, amount, c.eventID)
		if c.dead {
			require.Zero(t, ledgerRows(t, env, c.eventID), c.eventID)
		} else {
			require.Equal(t, 1, ledgerRows(t, env, c.eventID), c.eventID)
		}
	}
	dls, err := subscriber.ListDeadLetters(context.Background(), env.Pool, credits.Name)
	require.NoError(t, err)
	require.Len(t, dls, 3)
	for _, d := range dls {
		require.Equal(t, 1, d.Attempts, "permanent: %s", d.Error)
	}
}

func TestRegisterChecksName(t *testing.T) {
	env := subtest.NewParallel(t)
	sub, err := subscriber.New(env.Config(t, "credits_v2"))
	require.NoError(t, err)
	require.ErrorContains(t, credits.Register(sub, credits.Options{}), `must be named "credits"`)
}

// A Paddle body whose data.id (or customer_id) holds \u0000
// cannot be written to the ledger. It is dead-lettered at its first
// attempt with a readable error, instead of failing in Postgres on every
// attempt; the other events flow.
func TestUnstorablePayloadsAreDeadLettered(t *testing.T) {
	env := subtest.NewParallel(t)
	sub := start(t, env, credits.Options{}, subtest.OneDelivery)
	now := time.Now()
	bad := map[string]string{
		"evt_nul_id":       "data.id",
		"evt_nul_customer": "data.customer_id",
	}
	env.Publish(t, subtest.PaddleSubscription(t, "evt_nul_id", schema.PaddleSubscriptionCreated, now, "\x00", "ctm_1", nil))
	env.Publish(t, subtest.PaddleSubscription(t, "evt_nul_customer", schema.PaddleSubscriptionCreated, now, "sub_2", "ctm_\x00", nil))
	env.Publish(t, created(t, "evt_ok", "ctm_ok", nil))
	require.Eventually(t, func() bool { s := sub.Stats(); return s.DeadLettered == 2 && s.Processed == 1 }, subtest.Timeout, subtest.Tick)
	env.WaitAllAcked(t, credits.Name)
	require.EqualValues(t, 2, sub.Stats().Failed, "one attempt each")
	require.Equal(t, 1, ledgerRows(t, env, "evt_ok"))

	dls, err := subscriber.ListDeadLetters(context.Background(), env.Pool, credits.Name)
	require.NoError(t, err)
	require.Len(t, dls, 2)
	for _, d := range dls {
		require.Equal(t, 1, d.Attempts)
		require.Contains(t, d.Error, subscriber.ErrUnstorable.Error())
		require.Contains(t, d.Error, bad[d.EventID])
		require.True(t, subscriber.Storable(d.Error))
		require.Zero(t, ledgerRows(t, env, d.EventID))
	}
}
