package ops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// An entity's timeline lists the events about it across providers, newest
// first, paged, each with the same subscriber outcomes as the event's own
// detail (a destination's last attempt only); the events list filters by
// entity too.
func TestEntityTimeline(t *testing.T) {
	t.Parallel()
	pool, _ := hubtest.Pool(t)
	o := newOps(t, pool, nil)
	ctx := context.Background()
	now := time.Now().Truncate(time.Microsecond)
	cus := hub.Entity{Kind: "customer", ID: "cus_42"}
	var ds []hub.Delivery
	for i, p := range []string{"paddle", "stripe", "paddle", "stripe", "paddle"} {
		ds = append(ds, hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: p, EventID: "evt_" + string(rune('a'+i)),
			EventType: "customer.updated", Body: []byte(`{}`), ReceivedAt: now.Add(time.Duration(i-10) * time.Minute),
			Entities: []hub.Entity{cus}})
	}
	ds = append(ds, hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: "evt_other",
		EventType: "customer.updated", Body: []byte(`{}`), ReceivedAt: now})
	_, err := store.New(pool).Ingest(ctx, ds)
	require.NoError(t, err)
	publish(t, pool, "evt_e") // evt_e waits in the outbox
	require.NoError(t, subscriber.Migrate(ctx, pool, "plain", nil))
	require.NoError(t, subscriber.Migrate(ctx, pool, "billing", destination.Migrations("billing")))
	for i, status := range []int{500, 503} {
		require.NoError(t, deststate.RecordAttempt(ctx, pool, deststate.Attempt{Destination: "billing", Provider: "stripe",
			EventID: "evt_d", StreamSeq: 4, At: now.Add(time.Duration(i) * time.Second), Status: status, Outcome: deststate.OutcomeFailed}))
	}

	var got []string
	q := ops.TimelineQuery{Entity: "cus_42", Limit: 2}
	for range 5 {
		tl, err := o.EntityTimeline(ctx, q)
		require.NoError(t, err)
		require.Equal(t, "cus_42", tl.Entity)
		for _, e := range tl.Events {
			got = append(got, e.Provider+":"+e.EventID)
			require.Equal(t, []hub.Entity{cus}, e.Entities)
			d, err := o.ShowEvent(ctx, e.Provider+":"+e.EventID)
			require.NoError(t, err)
			require.Equal(t, []hub.Entity{cus}, d.Entities)
			for j := range d.Subscribers {
				switch n := len(d.Subscribers[j].HTTPAttempts); {
				case n == 0:
					d.Subscribers[j].HTTPAttempts = nil
				case n > 1:
					d.Subscribers[j].HTTPAttempts = d.Subscribers[j].HTTPAttempts[n-1:]
				}
			}
			require.Equal(t, d.Subscribers, e.Subscribers, e.EventID)
		}
		if tl.Next == "" {
			break
		}
		q.Before = tl.Next
	}
	require.Equal(t, []string{"paddle:evt_e", "stripe:evt_d", "paddle:evt_c", "stripe:evt_b", "paddle:evt_a"}, got)

	tl, err := o.EntityTimeline(ctx, ops.TimelineQuery{Entity: "cus_42"})
	require.NoError(t, err)
	require.Len(t, tl.Events, 5)
	require.Empty(t, tl.Next)
	byEvent := map[string]map[string]ops.SubscriberOutcome{}
	for _, e := range tl.Events {
		byEvent[e.EventID] = map[string]ops.SubscriberOutcome{}
		for _, so := range e.Subscribers {
			byEvent[e.EventID][so.Subscriber] = so
		}
	}
	require.Equal(t, "PENDING", tl.Events[0].Status)
	require.Equal(t, ops.OutcomeNotPublished, byEvent["evt_e"]["plain"].Outcome)
	billing := byEvent["evt_d"]["billing"]
	require.True(t, billing.Destination)
	require.Equal(t, ops.OutcomeNone, billing.Outcome, "attempted, not settled: pending")
	require.Len(t, billing.HTTPAttempts, 1)
	require.Equal(t, 503, billing.HTTPAttempts[0].Status, "the last attempt")

	rows, err := o.ListEvents(ctx, ops.EventFilter{Entity: "cus_42", Provider: "stripe", Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, []hub.Entity{cus}, rows[0].Entities)
	tl, err = o.EntityTimeline(ctx, ops.TimelineQuery{Entity: "nobody"})
	require.NoError(t, err)
	require.Empty(t, tl.Events)
}

// A bad entity is refused with the same message wherever it is given.
func TestEntityInput(t *testing.T) {
	t.Parallel()
	pool, _ := hubtest.Pool(t)
	o := newOps(t, pool, nil)
	ctx := context.Background()
	for _, c := range []struct{ entity, want string }{
		{"", "entity: required: an entity id, e.g. cus_123"},
		{strings.Repeat("x", hub.MaxEntityIDLen+1), "entity: longer than 255 bytes (256)"},
		{"cus\n1", `entity: "cus\n1" contains control characters`},
		{"cus\x001", `entity: "cus\x001" contains control characters`},
		{"\xff", `entity: "\xff" is not valid UTF-8`},
	} {
		_, err := o.EntityTimeline(ctx, ops.TimelineQuery{Entity: c.entity})
		require.ErrorIs(t, err, ops.ErrInvalid, c.entity)
		require.EqualError(t, err, c.want)
		require.EqualError(t, ops.CheckEntity(c.entity), c.want)
		if c.entity != "" {
			_, err = o.ListEvents(ctx, ops.EventFilter{Entity: c.entity, Limit: 1})
			require.EqualError(t, err, c.want)
		}
	}
	_, err := o.EntityTimeline(ctx, ops.TimelineQuery{Entity: "cus_1", Limit: ops.MaxTimelineLimit + 1})
	require.ErrorIs(t, err, ops.ErrInvalid)
	_, err = o.EntityTimeline(ctx, ops.TimelineQuery{Entity: "cus_1", Before: "nonsense"})
	require.ErrorIs(t, err, ops.ErrInvalid)
}

// End to end: a Paddle webhook POSTed to the hub is found by the ids its
// provider extraction names, with the subscriber's outcome.
func TestEntityTimelineFromWebhook(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ctx := context.Background()
	s.startCredits()
	require.False(t, s.deliver("evt_ent_http"), "a first delivery")
	s.Eventually(func() bool {
		return s.Count(`SELECT count(*) FROM credits.processed_messages WHERE event_id = 'evt_ent_http'`) == 1
	}, "credits processed evt_ent_http")
	d, err := s.ops.ShowEvent(ctx, "paddle:evt_ent_http")
	require.NoError(t, err)
	require.NotEmpty(t, d.Entities, "the paddle extraction names the subscription and its customer")
	for _, e := range d.Entities {
		tl, err := s.ops.EntityTimeline(ctx, ops.TimelineQuery{Entity: e.ID})
		require.NoError(t, err)
		require.Len(t, tl.Events, 1, e.ID)
		require.Equal(t, "evt_ent_http", tl.Events[0].EventID)
		outcomes := map[string]string{}
		for _, so := range tl.Events[0].Subscribers {
			outcomes[so.Subscriber] = so.Outcome
		}
		require.Equal(t, ops.OutcomeProcessed, outcomes["credits"], e.ID)
	}
}
