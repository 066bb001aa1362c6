package ops_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/provider/samples"
)

// deliverData POSTs a Paddle subscription.created event whose data object
// is data.
func (s *system) deliverData(eventID, data string) {
	s.t.Helper()
	body, err := samples.Body("paddle", eventID, "subscription.created", []byte(data), time.Now())
	require.NoError(s.t, err)
	a := s.Post(s.SignBody("paddle", eventID, "subscription.created", body))
	require.Equal(s.t, 200, a.Status, "%s", a.Raw)
}

// waitPublished waits until the archive counts n published events (their
// dedup rows hold the PubAck's sequence): a subscriber may process an
// event before the relay has recorded its publication, and a bulk action
// takes only published events.
func (s *system) waitPublished(n int) {
	s.t.Helper()
	s.Eventually(func() bool {
		return s.Count(`SELECT count(*) FROM processed_webhook_events WHERE stream_seq IS NOT NULL`) == n
	}, fmt.Sprintf("%d events published", n))
}

// A bulk replay of a payload-filtered set to subscriber bx: every event of
// the set is processed exactly once by bx (the ones it had processed are
// skipped), again when the bulk is repeated, and subscriber by sees none
// of it.
func TestBulkReplayFilteredSetToOneSubscriber(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.broken.Store(true) // odd events fail: dead-lettered
	s.startFlaky("bx")
	s.startFlaky("by")
	const events = 8
	for i := range events {
		cus := "ctm_other"
		if i < 4 {
			cus = "ctm_9"
		}
		s.deliverData(fmt.Sprintf("evt_ops_%d", i), `{"id":"sub_`+fmt.Sprint(i)+`","customer_id":"`+cus+`","items":[{"quantity":`+fmt.Sprint(i%2)+`}]}`)
	}
	for _, sub := range []string{"bx", "by"} {
		s.Eventually(func() bool {
			return s.Count(`SELECT count(*) FROM `+sub+`.effects`) == events/2 && s.Count(`SELECT count(*) FROM `+sub+`.dead_letters`) == events/2
		}, "half the events dead-lettered")
	}
	s.waitPublished(events)
	s.broken.Store(false)
	byBefore := s.subs["by"].Stats()
	ctx := context.Background()
	filter := ops.EventFilter{Since: time.Now().Add(-time.Hour), Where: []ops.PayloadMatch{{Path: "data.customer_id", Value: "ctm_9"}}}

	plan, err := s.ops.Bulk(ctx, ops.BulkRequest{Action: ops.BulkReplay, Subscriber: "bx", Filter: filter, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 4, plan.Matched)
	require.Equal(t, 4, plan.Eligible)
	require.Equal(t, 2, plan.AlreadyProcessed)
	require.Equal(t, 2, plan.ToProcess)
	require.Len(t, plan.Sample, 4)
	require.Equal(t, "evt_ops_3", plan.Sample[0].EventID, "newest first")
	require.Zero(t, plan.Published)

	var progress []ops.BulkResult
	for run := range 2 {
		progress = progress[:0]
		res, err := s.ops.Bulk(ctx, ops.BulkRequest{Action: ops.BulkReplay, Subscriber: "bx", Filter: filter, Rate: 100, Wait: 30 * time.Second,
			Progress: func(r ops.BulkResult) { progress = append(progress, r) }})
		require.NoError(t, err)
		require.Equal(t, 4, res.Published)
		if run == 0 {
			require.Equal(t, 2, res.Processed)
			require.Equal(t, 2, res.Skipped)
		} else {
			require.Equal(t, 0, res.Processed, "a repeated bulk processes nothing again")
			require.Equal(t, 4, res.Skipped)
		}
		require.Zero(t, res.Unsettled)
		require.NotEmpty(t, progress)
		for i := range 4 {
			require.Equal(t, 1, s.Count(`SELECT count(*) FROM bx.effects WHERE event_id = $1`, fmt.Sprintf("evt_ops_%d", i)), "event %d", i)
		}
		for i := 4; i < events; i++ {
			require.Equal(t, (i+1)%2, s.Count(`SELECT count(*) FROM bx.effects WHERE event_id = $1`, fmt.Sprintf("evt_ops_%d", i)), "event %d outside the filter", i)
		}
	}
	require.Equal(t, events/2, s.Count(`SELECT count(*) FROM by.effects`))
	require.Equal(t, byBefore, s.subs["by"].Stats(), "the other subscriber saw nothing of the bulk")

	// A bulk republish plan counts the same set; it needs no subscriber.
	rp, err := s.ops.Bulk(ctx, ops.BulkRequest{Action: ops.BulkRepublish, Filter: filter, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 4, rp.Eligible)

	// Cancelled mid-run: it stops publishing.
	bob := hub.Actor{Kind: hub.ActorOperator, Name: "bob@example.com", Role: "admin", Via: "console"}
	cctx, cancel := context.WithCancelCause(ctx)
	time.AfterFunc(1500*time.Millisecond, func() { cancel(&hub.CancelledBy{Actor: bob}) })
	start := time.Now()
	res, err := s.ops.Bulk(cctx, ops.BulkRequest{Action: ops.BulkReplay, Subscriber: "bx", Filter: filter, Rate: 1, Wait: 30 * time.Second})
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, res.Cancelled)
	require.Less(t, res.Published, 4, "the rate held it, the cancel stopped it")
	require.GreaterOrEqual(t, res.Published, 1)
	require.Less(t, time.Since(start), 5*time.Second)

	// Bounds.
	for _, tc := range []struct {
		req   ops.BulkRequest
		field string
		msg   string
	}{
		{ops.BulkRequest{Action: "delete", Filter: filter}, "action", "not a bulk action"},
		{ops.BulkRequest{Action: ops.BulkReplay, Filter: filter}, "subscriber", "required"},
		{ops.BulkRequest{Action: ops.BulkReplay, Subscriber: "bx", Filter: ops.EventFilter{}}, "since", "required"},
		{ops.BulkRequest{Action: ops.BulkReplay, Subscriber: "bx", Filter: filter, Rate: 5000}, "rate", "1..1000"},
		{ops.BulkRequest{Action: ops.BulkRepublish, Subscriber: "bx", Filter: filter}, "subscriber", "every subscriber"},
		{ops.BulkRequest{Action: ops.BulkReplay, Subscriber: "bx", Filter: ops.EventFilter{Since: time.Now().Add(-30 * 24 * time.Hour), Where: filter.Where}}, "since", "at most 7d"},
	} {
		_, err := s.ops.Bulk(ctx, tc.req)
		var ie *ops.InputError
		require.True(t, errors.As(err, &ie), "%+v: %v", tc.req, err)
		require.Equal(t, tc.field, ie.Field)
		require.Contains(t, ie.Reason, tc.msg)
	}
	// Too many events: refused before anything is published.
	ops.SetMaxBulkEvents(s.ops, 3)
	_, err = s.ops.Bulk(ctx, ops.BulkRequest{Action: ops.BulkReplay, Subscriber: "bx", Filter: filter})
	require.ErrorContains(t, err, "matches more than 3 events")
	require.ErrorIs(t, err, ops.ErrInvalid)

	// The trail has every run: the two runs, the cancelled one with who
	// cancelled it, and each refused one with its reason (not the dry runs).
	var refused, cancelled, ok []hub.AuditEntry
	for _, e := range auditEntries(t, s.ops) {
		require.False(t, e.FinishedAt.IsZero(), "%+v", e)
		switch e.Outcome {
		case hub.AuditRefused:
			refused = append(refused, e)
		case hub.AuditCancelled:
			cancelled = append(cancelled, e)
		case hub.AuditOK:
			ok = append(ok, e)
		}
	}
	require.Len(t, ok, 2)
	require.Len(t, cancelled, 1)
	require.Contains(t, cancelled[0].Error, "cancelled by bob@example.com (admin, console)")
	require.Len(t, refused, 7, "six bad requests and one over the bound")
	for _, e := range refused {
		require.NotEmpty(t, e.Error, e.Action)
	}
	last := refused[len(refused)-1]
	require.Equal(t, ops.ActionBulkReplay, last.Action)
	require.Equal(t, "subscriber bx", last.Target)
	require.Contains(t, last.Error, "matches more than 3 events")
	require.Equal(t, "data.customer_id=ctm_9", params(t, last.Params)["where"])
}

// A bulk republish publishes each event of the set once more, at the
// rate, under Republish's message ids; the subscribers' dedup skips them.
func TestBulkRepublishRate(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.startFlaky("bx")
	for i := range 6 {
		s.deliverData(fmt.Sprintf("evt_ops_%d", i*2), `{"id":"sub_1","customer_id":"ctm_r"}`)
	}
	s.Eventually(func() bool { return s.Count(`SELECT count(*) FROM bx.effects`) == 6 }, "processed")
	s.waitPublished(6)
	before := len(s.StreamMsgIDs())
	skipped := s.subs["bx"].Stats().SkippedDuplicate
	start := time.Now()
	res, err := s.ops.Bulk(context.Background(), ops.BulkRequest{Action: ops.BulkRepublish, Rate: 4,
		Filter: ops.EventFilter{Since: time.Now().Add(-time.Hour), Where: []ops.PayloadMatch{{Path: "data.customer_id", Value: "ctm_r"}}}})
	require.NoError(t, err)
	require.Equal(t, 6, res.Published)
	require.GreaterOrEqual(t, time.Since(start), 1200*time.Millisecond, "6 events at 4 a second: chunks of 1, a quarter second apart")
	require.Equal(t, before+6, len(s.StreamMsgIDs()))
	s.Eventually(func() bool { return s.subs["bx"].Stats().SkippedDuplicate == skipped+6 }, "bx settled the 6 copies")
	require.Equal(t, 6, s.Count(`SELECT count(*) FROM bx.effects`), "the dedup skipped every copy")
}
