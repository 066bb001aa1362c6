package backfill_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/schema"
)

// 100 Stripe events, 70 of which arrived as signed webhooks: the backfill
// ingests exactly the other 30, the running hub publishes them, and the
// stream holds each of the 100 once. A webhook of a backfilled event that
// arrives afterwards is a duplicate and adds nothing to the stream.
func TestStripeBackfillIngestsOnlyTheMissing(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	h.start()
	ids, bodies := h.stripeEvents(100)
	var missing []string
	for i, id := range ids {
		if i%10 >= 7 {
			missing = append(missing, id)
			continue
		}
		a := h.webhook("stripe", id, bodies[id])
		require.Equal(t, 200, a.status, a.body)
		require.Equal(t, false, a.body["idempotent"])
	}
	require.Len(t, missing, 30)

	var progress []backfill.Progress
	res, err := h.engine().Run(context.Background(), h.source("stripe", 0), backfill.Request{
		Since: time.Now().Add(-72 * time.Hour), Progress: func(p backfill.Progress) { progress = append(progress, p) },
	})
	require.NoError(t, err)
	require.Equal(t, backfill.Counts{Pages: 1, Listed: 100, Already: 70, Ingested: 30}, res.Counts)
	require.True(t, res.Complete)
	require.Len(t, progress, 1)
	require.Equal(t, 1.0, progress[0].Covered)

	// Archived as the API returned them: origin api, no signature.
	require.Equal(t, 30, h.count(`SELECT count(*) FROM webhook_events WHERE origin = 'api' AND signature IS NULL`))
	// The archived body is the event object's bytes exactly as the API's
	// data array held them.
	require.Equal(t, 70, h.count(`SELECT count(*) FROM webhook_events WHERE origin = 'webhook' AND signature IS NOT NULL`))
	for _, id := range missing {
		require.Equal(t, 1, h.count(`SELECT count(*) FROM webhook_events WHERE provider = 'stripe' AND event_id = $1 AND origin = 'api' AND body = $2`, id, bodies[id]), id)
	}
	h.waitPublished()
	h.requireEachOnce("stripe", ids)

	// A late webhook of a backfilled event: a duplicate, nothing published.
	a := h.webhook("stripe", missing[0], bodies[missing[0]])
	require.Equal(t, 200, a.status)
	require.Equal(t, true, a.body["idempotent"])
	require.Equal(t, 1, h.count(`SELECT count(*) FROM webhook_event_status WHERE event_id = $1 AND processing_status = 'SKIPPED' AND origin = 'webhook'`, missing[0]))
	h.waitPublished()
	h.requireEachOnce("stripe", ids)

	// A second run finds nothing missing.
	res, err = h.engine().Run(context.Background(), h.source("stripe", 0), backfill.Request{Since: time.Now().Add(-72 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, backfill.Counts{Pages: 1, Listed: 100, Already: 100}, res.Counts)
}

// A backfill stopped after page 2 of 5 and run again continues with page
// 3, on the first run's window, and ingests the rest: nothing twice, and
// each event once on the stream.
func TestStripeBackfillInterruptedContinues(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	h.start()
	ids, bodies := h.stripeEvents(100)
	for i, id := range ids {
		if i%10 < 7 {
			require.Equal(t, 200, h.webhook("stripe", id, bodies[id]).status)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	since := time.Now().Add(-72 * time.Hour)
	res, err := h.engine().Run(ctx, h.source("stripe", 20), backfill.Request{Since: since, Progress: func(p backfill.Progress) {
		if p.Pages == 2 {
			cancel()
		}
	}})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, int64(2), res.Pages)
	require.Equal(t, int64(40), res.Listed)
	require.Equal(t, int64(12), res.Ingested)
	hits := h.stripe.Hits()
	require.Len(t, hits, 2, "no page past the second was asked for")

	// The next run (another process: a new engine) continues.
	res, err = h.engine().Run(context.Background(), h.source("stripe", 20), backfill.Request{Since: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.True(t, res.Resumed)
	require.Equal(t, since.Unix(), res.Since.Unix(), "the interrupted run's window")
	require.Equal(t, backfill.Counts{Pages: 3, Listed: 60, Already: 42, Ingested: 18}, res.Counts)
	require.Equal(t, &backfill.Counts{Pages: 5, Listed: 100, Already: 70, Ingested: 30}, res.Total)
	hits = h.stripe.Hits()
	q, err := url.ParseQuery(hits[2].Query)
	require.NoError(t, err)
	require.Equal(t, ids[39], q.Get("starting_after"), "continued after the last event of page 2")

	require.Equal(t, 30, h.count(`SELECT count(*) FROM webhook_events WHERE origin = 'api'`))
	require.Equal(t, 100, h.count(`SELECT count(*) FROM webhook_events`), "one archive row per event: nothing twice")
	h.waitPublished()
	h.requireEachOnce("stripe", ids)
}

// A 429 is waited out for its Retry-After, then the page is read.
func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	h.stripeEvents(3)
	h.stripe.Throttle(time.Second)
	res, err := h.engine().Run(context.Background(), h.source("stripe", 0), backfill.Request{Since: time.Now().Add(-time.Hour), DryRun: true})
	require.NoError(t, err)
	require.Equal(t, int64(3), res.Listed)
	require.Len(t, res.Missing, 3)
	hits := h.stripe.Hits()
	require.Len(t, hits, 2)
	require.Equal(t, 429, hits[0].Status)
	require.Equal(t, 200, hits[1].Status)
	require.GreaterOrEqual(t, hits[1].At.Sub(hits[0].At), time.Second, "waited Retry-After")
}

// A wrong API key is an error naming the variable; nothing is ingested.
func TestWrongKeyNamesTheVariable(t *testing.T) {
	t.Parallel()
	const wrongStripe, wrongPaddle, wrongGitHub = "sk_test_wrong00000000", "pdl_wrong_key_000000", "ghp_wrongToken0000000"
	h := newHubEnv(t, func(c *service.Config) {
		c.SetBackfillSetting("stripe", backfill.SettingAPIKey, wrongStripe)
		c.SetBackfillSetting("paddle", backfill.SettingAPIKey, wrongPaddle)
		c.SetBackfillSetting("github", backfill.SettingToken, wrongGitHub)
	})
	h.stripeEvents(2)
	h.githubEvents(2, func(int) bool { return false })
	for _, c := range []struct{ name, variable, key string }{
		{"stripe", "HUB_STRIPE_API_KEY", wrongStripe},
		{"paddle", "HUB_PADDLE_API_KEY", wrongPaddle},
		{"github", "HUB_GITHUB_TOKEN", wrongGitHub},
	} {
		_, err := h.engine().Run(context.Background(), h.source(c.name, 0), backfill.Request{Since: time.Now().Add(-time.Hour)})
		require.ErrorIs(t, err, backfill.ErrUnauthorized, c.name)
		require.ErrorContains(t, err, c.variable)
		require.NotContains(t, err.Error(), c.key, "the key is never shown")
	}
	require.Equal(t, 0, h.count(`SELECT count(*) FROM webhook_events`))
	for _, hit := range h.stripe.Hits() {
		require.Equal(t, 401, hit.Status)
	}
	for _, r := range h.github.Requests() {
		require.Equal(t, 401, r.Status)
	}
	require.Empty(t, h.github.Attempts())
}

// Paddle: the same over several pages of GET /events (newest first, after
// cursors from meta.pagination.next), the window applied client-side since
// the API has no time filter, and a run failed mid-way by the API
// continued by the next.
func TestPaddleBackfillPagesAndContinues(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	h.start()
	ids, webhooks := h.paddleEvents(100, 0)
	old, _ := h.paddleEvents(5, 80*time.Hour) // outside the 72h window
	var missing []string
	for i, id := range ids {
		if i%10 >= 7 {
			missing = append(missing, id)
			continue
		}
		require.Equal(t, 200, h.webhook("paddle", id, webhooks[id]).status)
	}
	h.paddle.FailRequest(3, 400) // the third page's request fails, not retried
	since := time.Now().Add(-72 * time.Hour)
	res, err := h.engine().Run(context.Background(), h.source("paddle", 30), backfill.Request{Since: since})
	require.Error(t, err)
	require.ErrorContains(t, err, "answered 400")
	require.Equal(t, int64(2), res.Pages)

	res, err = h.engine().Run(context.Background(), h.source("paddle", 30), backfill.Request{Since: since})
	require.NoError(t, err)
	require.True(t, res.Resumed)
	require.Equal(t, &backfill.Counts{Pages: 4, Listed: 100, Already: 70, Ingested: 30}, res.Total)
	for _, hit := range h.paddle.Hits() {
		q, err := url.ParseQuery(hit.Query)
		require.NoError(t, err)
		require.Equal(t, "id[DESC]", q.Get("order_by"))
		require.Equal(t, "30", q.Get("per_page"))
	}
	for _, id := range old {
		require.Equal(t, 0, h.count(`SELECT count(*) FROM webhook_events WHERE event_id = $1`, id), "outside the window")
	}
	for _, id := range missing {
		require.Equal(t, 1, h.count(`SELECT count(*) FROM webhook_events WHERE event_id = $1 AND origin = 'api' AND body::text NOT LIKE '%notification_id%'`, id))
	}
	h.waitPublished()
	h.requireEachOnce("paddle", ids)
	a := h.webhook("paddle", missing[3], webhooks[missing[3]])
	require.Equal(t, true, a.body["idempotent"])
}

// `hub serve` with HUB_BACKFILL_INTERVAL backfills every provider with
// API credentials at start (Stripe's listing, GitHub's through Fetch),
// publishes through its relay, and counts what it found. An event younger
// than the settling time is left to its webhook, which may be on its way.
func TestServePeriodicBackfill(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t, func(c *service.Config) {
		c.BackfillInterval = time.Hour
		c.SetBackfillSetting("paddle", backfill.SettingAPIKey, "")
	})
	h.eventAge = service.BackfillSettle + time.Minute
	ids, _ := h.stripeEvents(10)
	gh := h.githubEvents(5, func(int) bool { return false })
	young, err := samples.Body("stripe", "evt_1BackfillYoung", "invoice.paid", nil, time.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.NoError(t, h.stripe.Add(young))
	h.start()
	require.Eventually(t, func() bool {
		return h.count(`SELECT count(*) FROM webhook_event_status WHERE origin = 'api' AND processing_status = 'PROCESSED'`) == 15
	}, 30*time.Second, 20*time.Millisecond)
	got := h.streamMsgIDs()
	require.Len(t, got, 15)
	for _, id := range ids {
		require.Equal(t, 1, got[schema.MsgID("stripe", id)], id)
	}
	for _, ev := range gh {
		require.Equal(t, 1, got[schema.MsgID("github", ev.guid)], ev.guid)
	}
	// A run is counted when it ends, which may follow its events'
	// publication.
	found := map[string]float64{}
	require.Eventually(t, func() bool {
		mfs, err := h.registry.Gather()
		require.NoError(t, err)
		clear(found)
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "hub_backfill_") {
				for _, m := range mf.GetMetric() {
					found[mf.GetName()] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
		}
		return found["hub_backfill_runs_total"] == 2
	}, 30*time.Second, 20*time.Millisecond, "runs counted: %v", found)
	require.Equal(t, 15.0, found["hub_backfill_missing_total"], "the young event is not counted missing")
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_events WHERE event_id = 'evt_1BackfillYoung'`))
	require.Equal(t, 15.0, found["hub_backfill_ingested_total"])
	require.Greater(t, found["hub_backfill_last_success_timestamp_seconds"], 0.0)
}
