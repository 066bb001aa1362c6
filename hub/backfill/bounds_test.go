package backfill_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/backfill/fakeapi"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// boundedEngine is h.engine() with its own metrics and the changes of mod.
func (h *hubEnv) boundedEngine(mod func(*backfill.Config)) (*backfill.Engine, *metrics.Metrics) {
	h.t.Helper()
	st := store.New(h.pool)
	m := metrics.New(prometheus.NewRegistry())
	cfg := backfill.Config{Store: st, Ingester: st, Metrics: m}
	if mod != nil {
		mod(&cfg)
	}
	e, err := backfill.New(cfg)
	require.NoError(h.t, err)
	return e, m
}

func runs(m *metrics.Metrics, provider, outcome string) float64 {
	return testutil.ToFloat64(m.BackfillRuns.WithLabelValues(provider, outcome))
}

// An API that pages for ever, fabricating events inside the window: each
// bound ends the run with an error naming it, counted bounded; what it
// ingested is real rows, saved in the checkpoint, and the next run
// continues from there.
func TestEndlessAPIEndsWithinBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		mod   func(*backfill.Config)
		bound string
		pages int64 // exact, or 0: as many as the time allowed
	}{
		{"pages", func(c *backfill.Config) { c.MaxPages = 5 }, "max pages", 5},
		{"events", func(c *backfill.Config) { c.MaxEvents = 25 }, "max events", 3},
		{"run time", func(c *backfill.Config) { c.MaxRunTime = 300 * time.Millisecond }, "max run time", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHubEnv(t)
			h.stripe.Endless()
			e, m := h.boundedEngine(c.mod)
			res, err := e.Run(context.Background(), h.source("stripe", 10), backfill.Request{Since: time.Now().Add(-time.Hour)})
			require.ErrorIs(t, err, backfill.ErrBound)
			require.ErrorContains(t, err, c.bound)
			require.False(t, res.Complete)
			if c.pages > 0 {
				require.Equal(t, c.pages, res.Pages)
				require.Len(t, h.stripe.Hits(), int(c.pages), "no page past the bound was asked for")
			} else {
				// How many pages fit in the run time depends on the
				// machine (none, on one loaded enough): every page
				// counted was asked for, and what follows holds for any.
				require.LessOrEqual(t, res.Pages, int64(len(h.stripe.Hits())))
				t.Logf("%d pages within %s", res.Pages, time.Duration(300*time.Millisecond))
			}
			require.Equal(t, 1.0, runs(m, "stripe", metrics.BackfillBounded))
			require.Zero(t, runs(m, "stripe", metrics.BackfillError))
			rows := h.count(`SELECT count(*) FROM webhook_events WHERE origin = 'api'`)
			require.Equal(t, int(res.Ingested), rows, "what it ingested, no more, no less")
			cp, found, err := store.New(h.pool).BackfillCheckpoint(context.Background(), "stripe")
			require.NoError(t, err)
			require.True(t, found)
			require.False(t, cp.Done())
			require.Equal(t, res.Ingested, cp.Ingested, "saved: the next run continues after it")
			require.True(t, cp.LeaseUntil.Before(time.Now()), "the lease was released")
		})
	}
}

// An API whose cursors loop (A, B, A): the run stops at the first cursor
// it has already read (not only at a repeat of the last one), with every
// event ingested once.
func TestCursorCycleStopsTheRun(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	ids, _ := h.stripeEvents(4)
	h.stripe.Loop()
	e, m := h.boundedEngine(nil)
	res, err := e.Run(context.Background(), h.source("stripe", 2), backfill.Request{Since: time.Now().Add(-time.Hour)})
	require.ErrorIs(t, err, backfill.ErrCursorCycle)
	require.ErrorContains(t, err, ids[1])
	require.Equal(t, int64(3), res.Pages)
	require.Equal(t, int64(4), res.Ingested)
	require.Equal(t, 4, h.count(`SELECT count(*) FROM webhook_events`))
	require.Len(t, h.stripe.Hits(), 3)
	require.Equal(t, 1.0, runs(m, "stripe", metrics.BackfillBounded))
}

// GitHub deliveries dated in the future, page after page: the run ends at
// its page bound, ingests nothing, and the source remembers none of them.
func TestGitHubFutureDeliveriesBounded(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	h.github.EndlessFuture()
	e, _ := h.boundedEngine(func(c *backfill.Config) { c.MaxPages = 10 })
	src := h.source("github", 0)
	res, err := e.Run(context.Background(), src, backfill.Request{Since: time.Now().Add(-time.Hour)})
	require.ErrorIs(t, err, backfill.ErrBound)
	require.Equal(t, int64(10), res.Pages)
	require.Zero(t, res.Listed)
	require.Len(t, h.github.Requests(), 10)
	require.Zero(t, backfill.GitHubRefs(src), "deliveries outside the window are not kept")
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_events`))
}

// A malformed item whose id is known is counted failed, with its id and
// reason, and skipped: its page (where it is the last item, the cursor of
// the next page) and the rest of the window are ingested.
func TestMalformedItemIsSkipped(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	ids, _ := h.stripeEvents(3)
	// Between the newest and the second: the last item of page 1 of 2.
	created := time.Now().Add(-90 * time.Second).Unix()
	require.NoError(t, h.stripe.Add([]byte(fmt.Sprintf(`{"id":"evt_1Malformed","object":"event","created":%d,"data":{"object":{}}}`, created))))
	guids := h.githubEvents(3, func(int) bool { return false })
	bad := h.github.Add(fakeapi.GitHubDelivery{GUID: "bad00000-0000-4000-8000-000000000001", DeliveredAt: time.Now().Add(-90 * time.Second),
		Event: "", Payload: []byte(`{}`)})

	e, m := h.boundedEngine(nil)
	res, err := e.Run(context.Background(), h.source("stripe", 2), backfill.Request{Since: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.True(t, res.Complete)
	require.Equal(t, backfill.Counts{Pages: 2, Listed: 4, Ingested: 3, Failed: 1}, res.Counts)
	require.Len(t, res.Failures, 1)
	require.Equal(t, "evt_1Malformed", res.Failures[0].EventID)
	require.Contains(t, res.Failures[0].Reason, "type")
	q, err := url.ParseQuery(h.stripe.Hits()[1].Query)
	require.NoError(t, err)
	require.Equal(t, "evt_1Malformed", q.Get("starting_after"), "paged on from the malformed item")
	for _, id := range ids {
		require.Equal(t, 1, h.count(`SELECT count(*) FROM webhook_events WHERE event_id = $1`, id))
	}
	require.Equal(t, 1.0, runs(m, "stripe", metrics.BackfillPartial))
	require.Equal(t, 1.0, testutil.ToFloat64(m.BackfillFailed.WithLabelValues("stripe")))

	res, err = e.Run(context.Background(), h.source("github", 0), backfill.Request{Since: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.Equal(t, backfill.Counts{Pages: 1, Listed: 4, Ingested: 3, Failed: 1}, res.Counts)
	require.Equal(t, []backfill.Failure{{EventID: bad.GUID, Reason: res.Failures[0].Reason}}, res.Failures)
	require.Contains(t, res.Failures[0].Reason, "event")
	for _, ev := range guids {
		require.Equal(t, 1, h.count(`SELECT count(*) FROM webhook_events WHERE event_id = $1`, ev.guid))
	}
}

// A page the API keeps answering malformed: the provider's runs continue
// the interrupted run a bounded number of times, then start over on their
// own window, log the part they leave, and find the event that went
// missing meanwhile.
func TestMalformedPageDoesNotStopLaterWindows(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	ids, _ := h.stripeEvents(4) // newest first; pages of 2
	h.stripe.MalformAfter(ids[1])
	e, m := h.boundedEngine(nil)
	src := h.source("stripe", 2)
	since := time.Now().Add(-time.Hour)
	req := backfill.Request{Since: since, MaxResumes: 1}
	res, err := e.Run(context.Background(), src, req)
	require.ErrorIs(t, err, backfill.ErrBadAnswer)
	require.Equal(t, int64(1), res.Pages)

	// A new event goes missing (its webhook never came).
	newer := samplesStripe(t, "evt_1ZNewer", time.Now().Add(-30*time.Second))
	require.NoError(t, h.stripe.Add(newer))

	req.Since = time.Now().Add(-50 * time.Minute)
	res, err = e.Run(context.Background(), src, req)
	require.ErrorIs(t, err, backfill.ErrBadAnswer, "continued once, on the stale window and cursor")
	require.True(t, res.Resumed)
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_events WHERE event_id = 'evt_1ZNewer'`))

	res, err = e.Run(context.Background(), src, req)
	require.NoError(t, err, "started over on its own window")
	require.True(t, res.Complete)
	require.False(t, res.Resumed)
	require.NotNil(t, res.Abandoned)
	require.Equal(t, since.Unix(), res.Abandoned.Since.Unix())
	require.Equal(t, since.Unix(), res.Abandoned.UncheckedSince.Unix())
	require.Equal(t, req.Since.Unix(), res.Abandoned.UncheckedUntil.Unix())
	require.Equal(t, 1, h.count(`SELECT count(*) FROM webhook_events WHERE event_id = 'evt_1ZNewer' AND origin = 'api'`))
	require.Equal(t, 5, h.count(`SELECT count(*) FROM webhook_events`))
	require.Equal(t, 1.0, testutil.ToFloat64(m.BackfillAbandoned.WithLabelValues("stripe")))
	require.Equal(t, 2.0, runs(m, "stripe", metrics.BackfillError))
	require.Equal(t, 1.0, runs(m, "stripe", metrics.BackfillOK))
}

// A run finding another hub's lease is skipped, counted outcome skipped,
// not error.
func TestLeaseHeldRunIsSkipped(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	h.stripeEvents(2)
	_, err := store.New(h.pool).AcquireBackfill(context.Background(), "stripe", "other-hub", time.Now().Add(-time.Hour), time.Now(), false, time.Minute)
	require.NoError(t, err)
	e, m := h.boundedEngine(nil)
	_, err = e.Run(context.Background(), h.source("stripe", 0), backfill.Request{Since: time.Now().Add(-time.Hour)})
	require.ErrorIs(t, err, hub.ErrBackfillBusy)
	require.Equal(t, 1.0, runs(m, "stripe", metrics.BackfillSkipped))
	require.Zero(t, runs(m, "stripe", metrics.BackfillError))
	require.Empty(t, h.stripe.Hits())
}

// A run renews its lease while it waits (here on 429s longer than the
// lease): it keeps the checkpoint, which no other run can take meanwhile.
// The lease is below MinLease (1.5 s, renewed every 0.5 s) so that three
// 1 s Retry-Afters (the shortest the header says) outlast it.
func TestLeaseRenewedWhileRunWaits(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	h.stripeEvents(3)
	h.stripe.Throttle(time.Second, time.Second, time.Second)
	const lease = 1500 * time.Millisecond
	e, _ := h.boundedEngine(func(c *backfill.Config) {
		backfill.SetMinLease(c, lease)
		c.Lease = lease
	})
	done := make(chan error, 1)
	var res backfill.Result
	go func() {
		var err error
		res, err = e.Run(context.Background(), h.source("stripe", 0), backfill.Request{Since: time.Now().Add(-time.Hour)})
		done <- err
	}()
	st := store.New(h.pool)
	require.Eventually(t, func() bool { return len(h.stripe.Hits()) >= 3 }, 20*time.Second, 20*time.Millisecond)
	_, err := st.AcquireBackfill(context.Background(), "stripe", "other-hub", time.Now().Add(-time.Hour), time.Now(), false, time.Minute)
	require.ErrorIs(t, err, hub.ErrBackfillBusy, "past the lease's length, still held")
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end")
	}
	require.Equal(t, int64(3), res.Ingested)
	require.True(t, res.Complete)
}

// `hub serve`: one provider pages for ever (GitHub deliveries dated in the
// future, listed first, at the periodic 5 requests a second: its 1,000
// page bound is minutes away), and another's periodic run still finds its
// missing event meanwhile: each provider runs on its own.
func TestServeEndlessProviderDoesNotStarveOthers(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t, func(c *service.Config) {
		c.BackfillInterval = time.Hour
		c.SetBackfillSetting("stripe", backfill.SettingAPIKey, "")
	})
	h.github.EndlessFuture()
	ids, _ := h.paddleEvents(1, service.BackfillSettle+time.Minute)
	h.start()
	require.Eventually(t, func() bool {
		return h.count(`SELECT count(*) FROM webhook_events WHERE provider = 'paddle' AND origin = 'api' AND event_id = $1`, ids[0]) == 1
	}, 30*time.Second, 20*time.Millisecond, "paddle's missing event was not ingested (github requests so far: %d)", len(h.github.Requests()))
	require.Eventually(t, func() bool {
		return gathered(t, h.registry, "hub_backfill_runs_total", "paddle", "ok") == 1
	}, 30*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return len(h.github.Requests()) > 0 }, 30*time.Second, 20*time.Millisecond,
		"github's endless run is going on")
	require.Zero(t, gathered(t, h.registry, "hub_backfill_runs_total", "github", "bounded"), "and has not ended")
	require.Equal(t, 3600.0, gathered(t, h.registry, "hub_backfill_interval_seconds", "github", ""))
}

// gathered returns the value of name's series of provider (and outcome,
// when not empty) in reg, 0 when absent.
func gathered(t *testing.T, reg *prometheus.Registry, name, provider, outcome string) float64 {
	t.Helper()
	labels := map[string]string{"provider": provider}
	if outcome != "" {
		labels["outcome"] = outcome
	}
	return hubtest.MetricValue(t, reg, name, labels)
}

// samplesStripe is a Stripe event object of the provider's sample.
func samplesStripe(t *testing.T, id string, at time.Time) []byte {
	t.Helper()
	body, err := samples.Body("stripe", id, "invoice.paid", nil, at)
	require.NoError(t, err)
	return body
}

// An event larger than the stream takes now (MaxPublishBytes: the stream's
// max_msg_size, as the webhook's 413 bound) is counted failed and never
// committed, as its webhook would be refused: committed, it could never
// be published.
func TestBodyOverPublishLimitIsNotCommitted(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	ids, bodies := h.stripeEvents(3)
	smallest := 0
	for _, b := range bodies {
		if smallest == 0 || len(b) < smallest {
			smallest = len(b)
		}
	}
	limit := smallest - 1
	e, _ := h.boundedEngine(func(c *backfill.Config) {
		c.MaxPublishBytes = func() int { return limit }
	})
	res, err := e.Run(context.Background(), h.source("stripe", 0), backfill.Request{Since: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.Equal(t, int64(len(ids)), res.Failed)
	require.Zero(t, res.Ingested)
	require.Contains(t, res.Failures[0].Reason, fmt.Sprintf("over the %d", limit))
	for _, id := range ids {
		require.Equal(t, 0, h.count(`SELECT count(*) FROM webhook_events WHERE event_id = $1`, id), "%s is larger than the stream takes", id)
	}

	// The limit is read at each event: the stream taking them again, the
	// next run ingests them.
	limit = 0
	res, err = e.Run(context.Background(), h.source("stripe", 0), backfill.Request{Since: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.Equal(t, int64(len(ids)), res.Ingested)
}

// lostAnswerStore takes the lease for real, then loses the answer: it
// returns only when its context ends (the lease statement's timeout),
// with its error.
type lostAnswerStore struct{ *store.Store }

func (s lostAnswerStore) AcquireBackfill(ctx context.Context, provider, owner string, since, until time.Time, restart bool, lease time.Duration) (hub.BackfillCheckpoint, error) {
	cp, err := s.Store.AcquireBackfill(context.WithoutCancel(ctx), provider, owner, since, until, restart, lease)
	if err != nil {
		return cp, err
	}
	<-ctx.Done()
	return hub.BackfillCheckpoint{}, ctx.Err()
}

// A run whose lease statement committed but whose answer was lost (to
// the statement's timeout; the run's time ran out meanwhile) gives the
// lease back: the next run is not refused as busy until the lease
// expires.
func TestLeaseTakenAsTheRunEndsIsReleased(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	e, m := h.boundedEngine(func(c *backfill.Config) {
		c.Store = lostAnswerStore{store.New(h.pool)}
		c.MaxRunTime = 200 * time.Millisecond
		c.Lease = time.Hour
		backfill.SetAcquireTimeout(c, 300*time.Millisecond)
	})
	_, err := e.Run(context.Background(), h.source("stripe", 10), backfill.Request{Since: time.Now().Add(-time.Hour)})
	require.ErrorIs(t, err, backfill.ErrBound)
	require.Equal(t, 1.0, runs(m, "stripe", metrics.BackfillBounded))
	cp, found, err := store.New(h.pool).BackfillCheckpoint(context.Background(), "stripe")
	require.NoError(t, err)
	require.True(t, found, "the lease was taken")
	require.True(t, cp.LeaseUntil.Before(time.Now()), "the lease was released, not left for an hour")
}
