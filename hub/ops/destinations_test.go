package ops_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// An event's detail carries each destination's HTTP attempts of it, oldest
// first and bounded to the newest MaxShownAttempts; a subscriber that is
// not a destination has none, and a destination that attempted the event
// without settling it is pending.
func TestShowEventDestinationAttempts(t *testing.T) {
	ctx, pool, o := newDBOps(t)
	now := time.Now().Truncate(time.Microsecond)
	archive(t, pool, now.Add(-time.Hour), "evt_dest", "evt_many")
	publish(t, pool)
	require.NoError(t, subscriber.Migrate(ctx, pool, "plain", nil))
	for _, name := range []string{"billing", "crm"} {
		require.NoError(t, subscriber.Migrate(ctx, pool, name, destination.Migrations(name)))
	}
	record := func(dest, eventID string, at time.Time, status int, outcome, errText, response string) {
		t.Helper()
		require.NoError(t, deststate.RecordAttempt(ctx, pool, deststate.Attempt{Destination: dest, Provider: "paddle", EventID: eventID,
			StreamSeq: 1, At: at, Status: status, Latency: 25 * time.Millisecond, Outcome: outcome, Error: errText, Response: response}))
	}
	record("billing", "evt_dest", now.Add(-3*time.Minute), 0, deststate.OutcomeFailed, "dial tcp 10.0.0.1:443: connection refused", "")
	record("billing", "evt_dest", now.Add(-2*time.Minute), 503, deststate.OutcomeFailed, "503 Service Unavailable", "<h1>down</h1>")
	record("billing", "evt_other", now.Add(-time.Minute), 200, deststate.OutcomeDelivered, "", "ok") // another event
	for i := range ops.MaxShownAttempts + 5 {
		record("crm", "evt_many", now.Add(time.Duration(i-100)*time.Second), 500, deststate.OutcomeFailed, fmt.Sprint("try ", i), "")
	}

	d, err := o.ShowEvent(ctx, "paddle:evt_dest")
	require.NoError(t, err)
	byName := map[string]ops.SubscriberOutcome{}
	for _, so := range d.Subscribers {
		byName[so.Subscriber] = so
	}
	require.Len(t, byName, 3, "%+v", d.Subscribers)
	billing := byName["billing"]
	require.True(t, billing.Destination)
	require.Equal(t, ops.OutcomeNone, billing.Outcome, "attempted, not settled: pending")
	require.Len(t, billing.HTTPAttempts, 2, "only this event's attempts")
	require.Equal(t, 0, billing.HTTPAttempts[0].Status)
	require.Contains(t, billing.HTTPAttempts[0].Error, "connection refused")
	require.Equal(t, 503, billing.HTTPAttempts[1].Status)
	require.Equal(t, "<h1>down</h1>", billing.HTTPAttempts[1].Response)
	require.Equal(t, 25*time.Millisecond, billing.HTTPAttempts[1].Latency)
	require.True(t, billing.HTTPAttempts[1].At.Equal(now.Add(-2*time.Minute)))
	require.False(t, billing.HTTPAttemptsTruncated)

	crm := byName["crm"]
	require.True(t, crm.Destination, "a destination without attempts of the event is still one")
	require.Empty(t, crm.HTTPAttempts)
	require.Equal(t, ops.OutcomeUnknown, crm.Outcome, "no record and no stream: unknown")
	plain := byName["plain"]
	require.False(t, plain.Destination)
	require.Empty(t, plain.HTTPAttempts)

	raw, err := json.Marshal(d)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"http_attempts":[{"destination":"billing","provider":"paddle","event_id":"evt_dest","stream_seq":1,"at":`)
	require.Contains(t, string(raw), `"status":503,"latency_ns":25000000,"outcome":"failed","error":"503 Service Unavailable","response":"\u003ch1\u003edown\u003c/h1\u003e"`)

	// An endpoint retried more than MaxShownAttempts times: the newest.
	d, err = o.ShowEvent(ctx, "paddle:evt_many")
	require.NoError(t, err)
	for _, so := range d.Subscribers {
		if so.Subscriber != "crm" {
			require.Empty(t, so.HTTPAttempts, so.Subscriber)
			continue
		}
		require.Len(t, so.HTTPAttempts, ops.MaxShownAttempts)
		require.True(t, so.HTTPAttemptsTruncated)
		require.Equal(t, "try 5", so.HTTPAttempts[0].Error, "the oldest listed")
		require.Equal(t, fmt.Sprint("try ", ops.MaxShownAttempts+4), so.HTTPAttempts[len(so.HTTPAttempts)-1].Error, "the newest")
	}
}

// A destination's event parked for a later retry is recorded as processed
// by the subscriber library, but its detail says it waits.
func TestShowEventParkedIsWaiting(t *testing.T) {
	ctx, pool, o := newDBOps(t)
	archive(t, pool, time.Now().Add(-time.Hour), "evt_parked", "evt_done")
	publish(t, pool)
	require.NoError(t, subscriber.Migrate(ctx, pool, "billing", destination.Migrations("billing")))
	for _, id := range []string{"evt_parked", "evt_done"} {
		_, err := pool.Exec(ctx, `INSERT INTO billing.processed_messages (subscriber, provider, event_id, subject, processed_at, outcome)
			VALUES ('billing', 'paddle', $1, 'paddle.subscription.created', NOW(), 'processed')`, id)
		require.NoError(t, err)
	}
	_, err := pool.Exec(ctx, `INSERT INTO billing.parked (provider, event_id, subject, headers, data, parked_at, due_at, attempts, receiver_asked)
		VALUES ('paddle', 'evt_parked', 'paddle.subscription.created', '{}', '{}', NOW(), NOW() + interval '1 hour', 1, true)`)
	require.NoError(t, err)
	for id, want := range map[string]string{"paddle:evt_parked": ops.OutcomeWaiting, "paddle:evt_done": ops.OutcomeProcessed} {
		d, err := o.ShowEvent(ctx, id)
		require.NoError(t, err)
		require.Len(t, d.Subscribers, 1)
		require.Equal(t, want, d.Subscribers[0].Outcome, id)
	}
}

// TestShowEventRedactsAttempts: what a receiver echoed into the attempt
// log (a bearer credential, a Slack-style path token, a query token, a
// signature), in a row written by this version or an older one, never
// reaches the event view nor the entity timeline that the admin API and
// the console serve to every role.
func TestShowEventRedactsAttempts(t *testing.T) {
	ctx, pool, o := newDBOps(t)
	cus := hub.Entity{Kind: "customer", ID: "cus_red"}
	_, err := store.New(pool).Ingest(ctx, []hub.Delivery{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "stripe", EventID: "evt_red",
		EventType: "customer.updated", Body: []byte(`{}`), ReceivedAt: time.Now(), Entities: []hub.Entity{cus}}})
	require.NoError(t, err)
	require.NoError(t, subscriber.Migrate(ctx, pool, "billing", destination.Migrations("billing")))
	const (
		bearer = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.sig"
		path   = "a1B2c3D4e5F6g7H8i9J0k1L2"
		query  = "qs3cr3tt0ken99"
		sig    = "K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="
	)
	echo := `{"authorization":"Bearer ` + bearer + `","url":"https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/` + path + `?access=` + query + `","webhook-signature":"v1,` + sig + `"}`
	require.NoError(t, deststate.RecordAttempt(ctx, pool, deststate.Attempt{Destination: "billing", Provider: "stripe", EventID: "evt_red",
		At: time.Now().Add(-time.Minute), Status: 500, Outcome: deststate.OutcomeFailed, Response: echo, Error: "HTTP 500: Bearer " + bearer}))
	// A row as an older version wrote it, unredacted.
	_, err = pool.Exec(ctx, `INSERT INTO billing.attempts (provider, event_id, attempted_at, status, latency_ms, outcome, error, response)
		VALUES ('stripe', 'evt_red', now(), 500, 1, 'failed', '', $1)`, echo)
	require.NoError(t, err)

	d, err := o.ShowEvent(ctx, "stripe:evt_red")
	require.NoError(t, err)
	tl, err := o.EntityTimeline(ctx, ops.TimelineQuery{Entity: "cus_red", Limit: 5})
	require.NoError(t, err)
	for what, v := range map[string]any{"event view": d, "entity timeline": tl} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		require.Contains(t, string(b), "authorization", "%s shows the attempts", what)
		for _, secret := range []string{bearer, path, query, sig[:20]} {
			require.False(t, strings.Contains(string(b), secret), "%s shows %q: %s", what, secret, b)
		}
	}
}
