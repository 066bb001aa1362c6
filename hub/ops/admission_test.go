package ops_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// While expensive reads hold the whole read pool, every expensive read
// (payload filter, bulk plan, replay dry run, charts, audit export) is
// refused at once with ErrBusy and a Retry-After, each refusal counted in
// hub_admission_refused_total; an admin's replay is still admitted at
// once (actions have their own pool); and once the reads end, reads are
// admitted again.
func TestReadsCannotStarveActions(t *testing.T) {
	t.Parallel()
	const events = 20
	reg := prometheus.NewRegistry()
	o, _, since := loadRange(t, events, func(c *ops.Config) {
		c.Metrics = metrics.New(reg)
		c.ReadBudget = ops.Budget{Slots: 2}
		c.MaxConcurrentReplays = 1
	})
	ctx := context.Background()
	where := []ops.PayloadMatch{{Path: "data.customer", Value: "cus_1"}}
	reads := []struct {
		what string
		run  func() error
	}{
		{ops.AdmitPayload, func() error {
			_, err := o.ListEventPage(ctx, ops.EventFilter{Since: since, Where: where, Limit: 10})
			return err
		}},
		{ops.AdmitBulkPlan, func() error {
			_, err := o.Bulk(ctx, ops.BulkRequest{Action: ops.BulkReplay, Subscriber: "loadsub", DryRun: true, Filter: ops.EventFilter{Since: since}})
			return err
		}},
		{ops.AdmitDryRun, func() error {
			_, err := o.Replay(ctx, ops.ReplayRequest{Subscriber: "loadsub", Since: since, DryRun: true})
			return err
		}},
		{ops.AdmitDryRun, func() error {
			_, err := o.Republish(ctx, ops.RepublishFilter{Since: since, DryRun: true})
			return err
		}},
		{ops.AdmitDryRun, func() error {
			_, err := o.Purge(ctx, ops.PurgeRequest{OlderThan: 30 * 24 * time.Hour, BatchSize: ops.DefaultPurgeBatch, DryRun: true})
			return err
		}},
		{ops.AdmitCharts, func() error {
			_, err := o.ProcessingCharts(ctx, 1)
			return err
		}},
		{ops.AdmitAuditExport, func() error {
			_, err := o.AuditExportPage(ctx, ops.AuditFilter{Limit: ops.MaxAuditLimit})
			return err
		}},
	}
	// Eight read-only sessions' reads hold the pool (two at a time).
	var held []*ops.Permit
	for range 2 {
		p, err := o.Admit(ops.PoolReads, "test", ops.Cost{Rows: ops.DefaultPayloadScanRows})
		require.NoError(t, err)
		held = append(held, p)
	}
	for _, r := range reads {
		labels := map[string]string{"pool": "reads", "what": r.what}
		before := hubtest.MetricValue(t, reg, "hub_admission_refused_total", labels)
		err := r.run()
		require.ErrorIs(t, err, ops.ErrBusy, r.what)
		var be *ops.BusyError
		require.True(t, errors.As(err, &be), "%s: %v", r.what, err)
		require.Equal(t, ops.PoolReads, be.Pool, r.what)
		require.Positive(t, be.RetryAfter(), r.what)
		require.Contains(t, err.Error(), "2 expensive reads", r.what)
		require.Equal(t, before+1, hubtest.MetricValue(t, reg, "hub_admission_refused_total", labels), r.what)
	}

	// A bad request is refused as such, not as busy.
	_, err := o.ListEventPage(ctx, ops.EventFilter{Since: time.Now().Add(-8 * 24 * time.Hour), Where: where, Limit: 10})
	require.ErrorIs(t, err, ops.ErrInvalid, "since 8d is past a payload filter's range, whatever the load")
	_, err = o.Republish(ctx, ops.RepublishFilter{DryRun: true, Since: since, Until: since.Add(-time.Hour)})
	require.ErrorIs(t, err, ops.ErrInvalid)

	// The admin's replay is admitted at once, while the reads hold theirs.
	res, err := o.Replay(ctx, ops.ReplayRequest{Subscriber: "loadsub", Since: since, Wait: time.Second})
	require.NoError(t, err, "an action never waits for reads")
	require.Equal(t, events, res.Delivered)
	require.Zero(t, hubtest.MetricValue(t, reg, "hub_admission_refused_total", map[string]string{"pool": "actions", "what": ops.AdmitReplay}))

	for _, p := range held {
		p.Scanned(0) // they read nothing: their rows come back
		p.Release()
	}
	for _, r := range reads {
		if err := r.run(); !errors.Is(err, ops.ErrNotFound) { // a republish of nothing published finds nothing
			require.NoError(t, err, "%s: admitted once the pool is free", r.what)
		}
	}
	running, cost := o.Held(ops.PoolReads)
	require.Zero(t, running)
	require.Equal(t, ops.Cost{}, cost, "every read gave its cost back")
}

// Reads are admitted by cost: with room for 30,000 archive rows, a read
// holding 20,000 leaves no room for a payload filter page (20,000 rows),
// though a slot is free.
func TestReadsAdmittedByRows(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	reg := prometheus.NewRegistry()
	o := ops.New(ops.Config{Archive: store.New(pool), Subscribers: pool, Metrics: metrics.New(reg),
		ReadBudget: ops.Budget{Slots: 8, Rows: 30_000}})
	ctx := context.Background()
	f := ops.EventFilter{Since: time.Now().Add(-time.Hour), Where: []ops.PayloadMatch{{Path: "a", Value: "1"}}, Limit: 10}
	p, err := o.Admit(ops.PoolReads, "test", ops.Cost{Rows: 20_000})
	require.NoError(t, err)
	_, err = o.ListEventPage(ctx, f)
	require.ErrorIs(t, err, ops.ErrBusy)
	require.ErrorContains(t, err, "scan up to 20000 archive rows")
	p.Scanned(0) // it read nothing: its rows come back
	p.Release()
	_, err = o.ListEventPage(ctx, f)
	require.NoError(t, err)
	require.Equal(t, 1.0, hubtest.MetricValue(t, reg, "hub_admission_refused_total", map[string]string{"pool": "reads", "what": ops.AdmitPayload}))
}

// A bulk plan (and a bulk replay's own check of the stream) reads the
// events' headers, never their bodies: no message is fetched by sequence
// (STREAM.MSG.GET, DIRECT.GET), and each consumer it creates reads
// headers only. The events here carry 200 KB bodies.
func TestBulkPlanReadsHeadersOnly(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.startFlaky("bx")
	const events = 6
	pad := strings.Repeat("x", 200_000)
	for i := range events {
		s.deliverData(fmt.Sprintf("evt_ops_%d", i*2), `{"customer_id":"ctm_h","pad":"`+pad+`"}`)
	}
	s.Eventually(func() bool { return s.Count(`SELECT count(*) FROM bx.effects`) == events }, "processed")
	s.waitPublished(events)

	var mu sync.Mutex
	var apis []*nats.Msg
	sub, err := s.JetStream().Conn().Subscribe("$JS.API.>", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		apis = append(apis, m)
	})
	require.NoError(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	plan, err := s.ops.Bulk(context.Background(), ops.BulkRequest{Action: ops.BulkReplay, Subscriber: "bx", DryRun: true,
		Filter: ops.EventFilter{Since: time.Now().Add(-time.Hour), Where: []ops.PayloadMatch{{Path: "data.customer_id", Value: "ctm_h"}}}})
	require.NoError(t, err)
	require.Equal(t, events, plan.Eligible, "every event is still on the stream")
	require.Zero(t, plan.Gone)
	require.NoError(t, s.JetStream().Conn().Flush())

	mu.Lock()
	defer mu.Unlock()
	creates := 0
	for _, m := range apis {
		require.NotContains(t, m.Subject, "MSG.GET", "a plan fetches no message body")
		require.NotContains(t, m.Subject, "DIRECT.GET", "a plan fetches no message body")
		if strings.HasPrefix(m.Subject, "$JS.API.CONSUMER.CREATE.") {
			creates++
			require.Contains(t, string(m.Data), `"headers_only":true`, "the plan's read of the stream is headers only")
		}
	}
	require.Positive(t, creates, "the plan read the stream")
}

// A payload filter over exactly the longest range, since 7d with no
// until, is accepted however much time passes between reading "7d" and
// running the search: "now" is taken once (EventFilter.Now).
func TestPayloadFilterExactMaximumRange(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	var mu sync.Mutex
	at := time.Now()
	tick := func() time.Time { // a clock that moves each time it is read
		mu.Lock()
		defer mu.Unlock()
		at = at.Add(time.Millisecond)
		return at
	}
	o := ops.New(ops.Config{Archive: store.New(pool), Subscribers: pool, Now: tick})
	now := o.Now()
	since, until, err := ops.ParseWindow("7d", "", now)
	require.NoError(t, err)
	where := []ops.PayloadMatch{{Path: "a", Value: "1"}}
	_, err = o.ListEventPage(context.Background(), ops.EventFilter{Since: since, Until: until, Where: where, Limit: 10, Now: now})
	require.NoError(t, err, "since 7d is the documented maximum")
	_, err = o.Bulk(context.Background(), ops.BulkRequest{Action: ops.BulkRepublish, DryRun: true,
		Filter: ops.EventFilter{Since: since, Where: where, Now: now}})
	require.NoError(t, err, "a bulk plan over since 7d")

	since, _, err = ops.ParseWindow("7d1m", "", now)
	require.NoError(t, err)
	_, err = o.ListEventPage(context.Background(), ops.EventFilter{Since: since, Where: where, Limit: 10, Now: now})
	require.ErrorIs(t, err, ops.ErrInvalid, "past the maximum is still refused")
}

// Reads are admitted at a rate of rows: a read that scanned 20,000 rows
// of a 1,000-a-second budget (burst 21,000) leaves too few for the next
// page, which is refused with a Retry-After of when the rows are there
// again (about 20 s); what a read did not scan is given back, but for
// the least a read costs (Budget.MinRows, a fortieth of the rate).
func TestReadsAdmittedAtARateOfRows(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	o := ops.New(ops.Config{Archive: store.New(pool), Subscribers: pool,
		ReadBudget: ops.Budget{Slots: 8, Rows: 21_000, RowsPerSecond: 1000}})
	ctx := context.Background()
	f := ops.EventFilter{Since: time.Now().Add(-time.Hour), Where: []ops.PayloadMatch{{Path: "a", Value: "1"}}, Limit: 10}
	for range 3 {
		_, err := o.ListEventPage(ctx, f)
		require.NoError(t, err, "a page of an empty archive scans nothing: its rows are given back")
	}
	p, err := o.Admit(ops.PoolReads, "test", ops.Cost{Rows: 20_000})
	require.NoError(t, err)
	p.Scanned(20_000)
	p.Release()
	_, err = o.ListEventPage(ctx, f)
	require.ErrorIs(t, err, ops.ErrBusy)
	require.ErrorContains(t, err, "at most 1000 archive rows a second")
	var be *ops.BusyError
	require.True(t, errors.As(err, &be))
	require.InDelta(t, 20, be.RetryAfter().Seconds(), 2, "when 20,000 rows are there again")
}

// A payload filter's page counts the payload bytes it reads as it goes
// and stops at its bound of bytes, as at its bound of rows: the page says
// Truncated with the cursor to go on, and going on finds every match.
func TestPayloadFilterStopsAtItsBytes(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	o := ops.New(ops.Config{Archive: store.New(pool), Subscribers: pool})
	ops.SetPayloadScanBytes(o, 25_000, 3)
	ctx := context.Background()
	rnd := make([]byte, 5_000)
	var bodies []string
	for i := range 12 {
		_, _ = rand.Read(rnd) // incompressible: stored about as large
		c := "cus_0"
		if i%4 == 0 {
			c = "cus_9"
		}
		bodies = append(bodies, `{"customer":"`+c+`","pad":"`+hex.EncodeToString(rnd)+`"}`)
	}
	archiveBodies(t, pool, time.Now().Add(-time.Hour), "b", bodies...)
	f := ops.EventFilter{Since: time.Now().Add(-2 * time.Hour), Where: []ops.PayloadMatch{{Path: "customer", Value: "cus_9"}}, Limit: 100}
	p, err := o.ListEventPage(ctx, f)
	require.NoError(t, err)
	require.True(t, p.Truncated, "25 KB of payloads is three rows of 10 KB")
	require.Equal(t, 3, p.Scanned)
	require.GreaterOrEqual(t, p.ScannedBytes, int64(25_000))
	require.NotEmpty(t, p.Next)
	found := eventIDs(p.Events)
	for pages := 1; p.Next != ""; pages++ {
		require.Less(t, pages, 10)
		f.Before = p.Next
		p, err = o.ListEventPage(ctx, f)
		require.NoError(t, err)
		found = append(found, eventIDs(p.Events)...)
	}
	require.ElementsMatch(t, []string{"b000", "b004", "b008"}, found)
}

// A read costs at least Budget.MinRows however little it scans, so that
// cheap reads looped fast (charts, an audit export of an empty trail) are
// bounded by the rate too: at 1,000 rows a second with a burst of 1,000
// and a floor of 100 rows, ten of them pass at once and the next is
// refused; read by read, they are paced by a Permit's Pace.
func TestCheapReadsBoundedByTheRate(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	o := ops.New(ops.Config{Archive: store.New(pool), Subscribers: pool,
		ReadBudget: ops.Budget{Slots: 8, Rows: 1000, RowsPerSecond: 1000, MinRows: 100}})
	ctx := context.Background()
	passed := 0
	for range 50 {
		if _, err := o.AuditExportPage(ctx, ops.AuditFilter{Limit: 1}); err != nil {
			require.ErrorIs(t, err, ops.ErrBusy)
			break
		}
		passed++
	}
	require.GreaterOrEqual(t, passed, 9, "the burst's worth pass")
	require.Less(t, passed, 50, "then the floor's cost refuses the rest")

	// Pace spreads a scan over its share of the rate (1,000 rows a second
	// over 8 slots: 125 a second); an unmetered pool never waits, and a
	// cancelled context ends a read's wait.
	p, err := o.Admit(ops.PoolActions, "test", ops.Cost{})
	require.NoError(t, err)
	require.NoError(t, p.Pace(ctx, 1_000_000), "an unmetered pool never waits")
	p.Release()
	// The bucket refills (a refused Admit takes nothing from it).
	hubtest.Eventually(t, 10*time.Second, "the bucket refills", func() bool {
		p, err = o.Admit(ops.PoolReads, "test", ops.Cost{Rows: 100})
		if err != nil {
			require.ErrorIs(t, err, ops.ErrBusy)
		}
		return err == nil
	})
	defer p.Release()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, p.Pace(cctx, 10_000), context.Canceled, "a read paced for 80 s ends with its context")
}
