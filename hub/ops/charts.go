package ops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Bounds of ProcessingCharts.
const (
	// MaxChartHours is the longest span a chart covers.
	MaxChartHours = 24
	// MaxChartSteps is the most buckets a chart has (ChartStep).
	MaxChartSteps = 72
	// MaxChartSubscribers is how many subscribers ProcessingCharts
	// returns: those with the most failures first.
	MaxChartSubscribers = 20
	// MaxChartSubscribersRead is how many subscribers it reads at all
	// (in name order); the rest are counted in More.
	MaxChartSubscribersRead = 200
	// MaxChartRows bounds the rows of each subscriber table counted for a
	// chart; past it the chart is Partial.
	MaxChartRows = 100_000
	// ChartSamplesPerStep is how many processed events per step (the
	// newest of the step) the latency figures are taken from.
	ChartSamplesPerStep = 20
)

// ChartHours checks an operator's chart span: a whole number of hours
// from 1 to MaxChartHours; "" is 1.
func ChartHours(s string) (int, error) {
	if s == "" {
		return 1, nil
	}
	h, err := strconv.Atoi(strings.TrimSuffix(s, "h"))
	if err != nil || h < 1 || h > MaxChartHours {
		return 0, inputErr("hours", "must be a whole number of hours from 1 to %d, not %s", MaxChartHours, quote(s))
	}
	return h, nil
}

// ChartStep is the bucket width of a chart over hours: whole minutes, at
// most MaxChartSteps buckets (1 h: 1 min, 6 h: 5 min, 24 h: 20 min).
func ChartStep(hours int) time.Duration {
	minutes := hours * 60
	return time.Duration(max(1, (minutes+MaxChartSteps-1)/MaxChartSteps)) * time.Minute
}

// ChartWindow is the span of a chart over hours ending with now's
// minute: from the start of the oldest bucket to the end of the current
// minute, as server.ProviderTraffic.Series cuts it.
func ChartWindow(now time.Time, hours int) (from, until time.Time, step time.Duration) {
	step = ChartStep(hours)
	steps := (time.Duration(hours)*time.Hour + step - 1) / step
	until = now.Truncate(time.Minute).Add(time.Minute)
	return until.Add(-steps * step), until, step
}

// Percentiles are of the latency from the hub's first acceptance of events
// to the subscriber's processed rows, of Samples of them; 0 without
// samples.
type Percentiles struct {
	Samples int           `json:"latency_samples"`
	P50     time.Duration `json:"p50_ns"`
	P95     time.Duration `json:"p95_ns"`
	P99     time.Duration `json:"p99_ns"`
}

// ProcessingBucket is one step of a subscriber's chart.
type ProcessingBucket struct {
	Start        time.Time `json:"start"`
	Processed    int64     `json:"processed"`
	DeadLettered int64     `json:"dead_lettered"`
	// Latency, of up to ChartSamplesPerStep of the step's processed
	// events.
	Percentiles
	// A destination's HTTP attempts of the step.
	Attempts       int64         `json:"attempts,omitempty"`
	FailedAttempts int64         `json:"failed_attempts,omitempty"`
	AttemptP50     time.Duration `json:"attempt_p50_ns,omitempty"`
	AttemptP95     time.Duration `json:"attempt_p95_ns,omitempty"`
	AttemptP99     time.Duration `json:"attempt_p99_ns,omitempty"`
}

// SubscriberChart is one subscriber's (or destination's) processing over
// the chart's window.
type SubscriberChart struct {
	Name        string             `json:"name"`
	Destination bool               `json:"destination"`
	Buckets     []ProcessingBucket `json:"buckets"`
	// Totals over the window; the latency percentiles are of all the
	// samples.
	Processed      int64 `json:"processed"`
	DeadLettered   int64 `json:"dead_lettered"`
	Attempts       int64 `json:"attempts,omitempty"`
	FailedAttempts int64 `json:"failed_attempts,omitempty"`
	Percentiles
	// Partial: a table held more than MaxChartRows rows in the window;
	// the oldest buckets undercount.
	Partial bool `json:"partial,omitempty"`
}

// Failures is the dead letters and failed attempts in the window.
func (c SubscriberChart) Failures() int64 { return c.DeadLettered + c.FailedAttempts }

// ProcessingCharts is every subscriber's processing over the last hours.
type ProcessingCharts struct {
	From  time.Time     `json:"from"`
	Until time.Time     `json:"until"`
	Step  time.Duration `json:"step_ns"`
	// Subscribers: at most MaxChartSubscribers, the most failures first,
	// then by name.
	Subscribers []SubscriberChart `json:"subscribers"`
	// More counts the subscribers left out.
	More int `json:"more,omitempty"`
}

// ProcessingCharts reads each subscriber's processed events, dead letters
// and latency (and a destination's HTTP attempts) over the last hours
// (ChartHours' bounds) in ChartStep buckets: a few bounded statements per
// subscriber on its own tables through their time indexes (MaxChartRows,
// ChartSamplesPerStep), and one look-up of the sampled events' first
// acceptance in the hub's dedup table.
func (o *Ops) ProcessingCharts(ctx context.Context, hours int) (pc ProcessingCharts, err error) {
	var scanned int64 // the rows counted: what the buckets count
	if hours < 1 || hours > MaxChartHours {
		return ProcessingCharts{}, inputErr("hours", "must be a whole number of hours from 1 to %d, not %d", MaxChartHours, hours)
	}
	// An expensive read: admitted at a payload filter page's cost, and
	// settled at the rows the buckets count (each table's read is bounded
	// by MaxChartRows).
	permit, err := o.admitRead(AdmitCharts, Cost{Rows: DefaultPayloadScanRows})
	if err != nil {
		return ProcessingCharts{}, err
	}
	defer permit.Release()
	defer func() { permit.Scanned(scanned) }()
	from, until, step := ChartWindow(o.now(), hours)
	pc = ProcessingCharts{From: from, Until: until, Step: step}
	subs, dests, err := o.subscribersAndDestinations(ctx)
	if err != nil {
		return pc, err
	}
	if len(subs) > MaxChartSubscribersRead {
		pc.More = len(subs) - MaxChartSubscribersRead
		subs = subs[:MaxChartSubscribersRead]
	}
	for _, name := range subs {
		c, err := o.subscriberChart(ctx, name, slices.Contains(dests, name), from, until, step)
		if errors.Is(err, subscriber.ErrUnknownSubscriber) || errors.Is(err, deststate.ErrUnknownDestination) {
			continue // its tables were dropped since the list was read
		}
		if err != nil {
			return pc, err
		}
		scanned += c.Processed + c.DeadLettered + c.Attempts
		pc.Subscribers = append(pc.Subscribers, c)
	}
	slices.SortStableFunc(pc.Subscribers, func(a, b SubscriberChart) int {
		return cmp.Or(cmp.Compare(b.Failures(), a.Failures()), cmp.Compare(a.Name, b.Name))
	})
	if len(pc.Subscribers) > MaxChartSubscribers {
		pc.More += len(pc.Subscribers) - MaxChartSubscribers
		pc.Subscribers = pc.Subscribers[:MaxChartSubscribers]
	}
	return pc, nil
}

func (o *Ops) subscriberChart(ctx context.Context, name string, dest bool, from, until time.Time, step time.Duration) (SubscriberChart, error) {
	c := SubscriberChart{Name: name, Destination: dest}
	a, err := subscriber.ReadActivity(ctx, o.subs, name, subscriber.ActivityWindow{From: from, Until: until, Step: step,
		MaxRows: MaxChartRows, SamplesPerStep: ChartSamplesPerStep})
	if err != nil {
		return c, subscriberErr(err)
	}
	c.Partial = a.Partial
	c.Buckets = make([]ProcessingBucket, len(a.Buckets))
	for i, b := range a.Buckets {
		c.Buckets[i] = ProcessingBucket{Start: b.Start, Processed: b.Processed, DeadLettered: b.DeadLettered}
		c.Processed += b.Processed
		c.DeadLettered += b.DeadLettered
	}
	// Latency: each sample's processed_at less the hub's first acceptance.
	provs, ids := make([]string, len(a.Samples)), make([]string, len(a.Samples))
	for i, s := range a.Samples {
		provs[i], ids[i] = s.Provider, s.EventID
	}
	seen, err := o.archive.FirstSeen(ctx, provs, ids)
	if err != nil {
		return c, err
	}
	first := make(map[subscriber.EventKey]time.Time, len(seen))
	for _, e := range seen {
		first[subscriber.EventKey{Provider: e.Provider, EventID: e.EventID}] = e.FirstSeen
	}
	perStep := make([][]time.Duration, len(c.Buckets))
	var all []time.Duration
	for _, s := range a.Samples {
		f, ok := first[s.EventKey]
		i := int(s.ProcessedAt.Sub(from) / step)
		if !ok || i < 0 || i >= len(perStep) {
			continue // an event the hub no longer knows (imported, or another hub's)
		}
		d := max(0, s.ProcessedAt.Sub(f))
		perStep[i] = append(perStep[i], d)
		all = append(all, d)
	}
	for i, ds := range perStep {
		b := &c.Buckets[i]
		b.Samples = len(ds)
		b.P50, b.P95, b.P99 = percentiles(ds)
	}
	c.Samples = len(all)
	c.P50, c.P95, c.P99 = percentiles(all)
	if !dest {
		return c, nil
	}
	ab, partial, err := deststate.AttemptActivity(ctx, o.subs, name, from, until, step, MaxChartRows)
	if err != nil {
		return c, fmt.Errorf("destination %s: %w", name, err)
	}
	c.Partial = c.Partial || partial
	for i, b := range ab {
		if i >= len(c.Buckets) {
			break
		}
		cb := &c.Buckets[i]
		cb.Attempts, cb.FailedAttempts, cb.AttemptP50, cb.AttemptP95, cb.AttemptP99 = b.Attempts, b.Failed, b.P50, b.P95, b.P99
		c.Attempts += b.Attempts
		c.FailedAttempts += b.Failed
	}
	return c, nil
}

// percentiles are the nearest-rank 50th, 95th and 99th percentiles of ds
// (sorted in place); zeros when empty.
func percentiles(ds []time.Duration) (p50, p95, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration {
		i := int(q*float64(len(ds))+0.999999) - 1 // ceil(q·n) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return at(0.5), at(0.95), at(0.99)
}
