package console

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/server"
)

// The charts page: failure rate and latency per provider (the webhook
// listener's answers, in this replica's memory) and per subscriber or
// destination (read from their tables), over the last 1, 6 or 24 hours.
// Each row is a small SVG of one bar per step, next to its figures in the
// same table row, so the numbers are there without the picture.

// chartRanges are the ranges the page offers (any whole hour from 1 to
// ops.MaxChartHours is accepted).
var chartRanges = []int{1, 6, 24}

// maxChartProviders bounds the providers shown (the most failing first).
const maxChartProviders = 20

// spark geometry: each step is sparkStep wide (a bar of sparkStep-1),
// sparkHeight tall; the SVG scales to its cell.
const (
	sparkStep   = 4
	sparkHeight = 40
)

// spark is one row's small chart.
type spark struct {
	Width, Height int
	Label         string // the text alternative
	Bars          []sparkBar
}

type sparkBar struct {
	X, W  int
	Title string
	Segs  []sparkSeg
}

type sparkSeg struct {
	Class string
	Y, H  int
}

// stack makes a bar at step i of segments of heights (bottom up) in
// classes, out of sparkHeight.
func stack(i int, title string, classes []string, heights []int) sparkBar {
	b := sparkBar{X: i * sparkStep, W: sparkStep - 1, Title: title}
	y := sparkHeight
	for k, h := range heights {
		if h <= 0 {
			continue
		}
		y -= h
		b.Segs = append(b.Segs, sparkSeg{Class: classes[k], Y: y, H: h})
	}
	return b
}

// scaled is n out of of as a height of at most sparkHeight, at least 1
// when n > 0.
func scaled(n, of uint64) int {
	if of == 0 || n == 0 {
		return 0
	}
	return max(1, int(min(n, of)*sparkHeight/of))
}

// pct formats n/of as a percentage, "–" without any.
func pct(n, of uint64) string {
	if of == 0 {
		return "–"
	}
	return strconv.FormatFloat(float64(n)*100/float64(of), 'f', 1, 64) + "%"
}

// dur formats a latency for a table: "–" when none.
func dur(d time.Duration, ok bool) string {
	if !ok {
		return "–"
	}
	switch {
	case d < time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d < 10*time.Second:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

type providerRow struct {
	Name                         string
	Total, OK, Auth, Client, Srv uint64
	FailRate                     string
	P50, P95, P99                string
	Failures, Latency            spark
	failed                       uint64
}

type subscriberChartRow struct {
	Name                     string
	Destination              bool
	Processed, DeadLettered  int64
	FailRate                 string
	Attempts, FailedAttempts int64
	AttemptFailRate          string
	P50, P95, P99            string
	AttemptP95, AttemptP99   string
	Samples                  int
	Partial                  bool
	Volume, Latency          spark
}

type chartsView struct {
	Hours           int
	Ranges          []int
	Step            string
	From, To        string // UTC
	Providers       []providerRow
	NoTraffic       bool // the hub's ingest figures are not wired in
	MoreProviders   int
	Subscribers     []subscriberChartRow
	MoreSubscribers int
	ProcessingError string
}

func (cn *Console) charts(c *fiber.Ctx, s *session) error {
	hours, err := ops.ChartHours(c.Query("hours"))
	if err != nil {
		return cn.failErr(c, s, err)
	}
	now := cn.cfg.Now()
	from, until, step := ops.ChartWindow(now, hours)
	v := chartsView{Hours: hours, Ranges: chartRanges, Step: stepText(step),
		From: from.UTC().Format("2006-01-02 15:04"), To: until.UTC().Format("15:04")}
	if cn.cfg.ProviderTraffic == nil {
		v.NoTraffic = true
	} else {
		v.Providers, v.MoreProviders = providerRows(cn.cfg.ProviderTraffic(now, time.Duration(hours)*time.Hour, step), step)
	}
	pc, err := cn.cfg.Operator.ProcessingCharts(c.UserContext(), hours)
	if err != nil {
		return cn.failErr(c, s, err)
	}
	v.MoreSubscribers = pc.More
	for _, sc := range pc.Subscribers {
		v.Subscribers = append(v.Subscribers, subscriberRowOf(sc, step))
	}
	return cn.render(c, fiber.StatusOK, "charts", view{Title: "Charts", Nav: "charts", Session: s, Page: v})
}

func stepText(step time.Duration) string {
	if step%time.Hour == 0 {
		return strconv.Itoa(int(step/time.Hour)) + " h"
	}
	return strconv.Itoa(int(step/time.Minute)) + " min"
}

func providerRows(series []server.ProviderSeries, step time.Duration) ([]providerRow, int) {
	rows := make([]providerRow, 0, len(series))
	for _, ps := range series {
		sum := ps.Sum
		r := providerRow{Name: ps.Provider, Total: sum.Total(), OK: sum.OK, Auth: sum.Auth, Client: sum.Client, Srv: sum.Server,
			failed: sum.Failed(), FailRate: pct(sum.Failed(), sum.Total())}
		p50, ok := sum.Quantile(0.5)
		r.P50 = dur(p50, ok)
		p95, _ := sum.Quantile(0.95)
		r.P95 = dur(p95, ok)
		p99, _ := sum.Quantile(0.99)
		r.P99 = dur(p99, ok)
		r.Failures = spark{Width: len(ps.Buckets) * sparkStep, Height: sparkHeight}
		r.Latency = r.Failures
		var worst time.Duration
		p95s := make([]time.Duration, len(ps.Buckets))
		oks := make([]bool, len(ps.Buckets))
		for i, b := range ps.Buckets {
			p95s[i], oks[i] = b.Quantile(0.95)
			worst = max(worst, p95s[i])
		}
		for i, b := range ps.Buckets {
			at := b.Start.UTC().Format("15:04")
			t := b.Total()
			title := fmt.Sprintf("%s UTC: %d of %d failed (%s): %d 401, %d other 4xx, %d 5xx", at, b.Failed(), t, pct(b.Failed(), t), b.Auth, b.Client, b.Server)
			r.Failures.Bars = append(r.Failures.Bars, stack(i, title, []string{"sauth", "s4xx", "s5xx"},
				[]int{scaled(b.Auth, t), scaled(b.Client, t), scaled(b.Server, t)}))
			lt := fmt.Sprintf("%s UTC: no 2xx answer", at)
			h := 0
			if oks[i] {
				lt = fmt.Sprintf("%s UTC: p95 %s over %d 2xx answers", at, dur(p95s[i], true), b.OK)
				h = scaled(uint64(p95s[i]), uint64(worst))
			}
			r.Latency.Bars = append(r.Latency.Bars, stack(i, lt, []string{"slat"}, []int{h}))
		}
		r.Failures.Label = fmt.Sprintf("%s: share of answers that failed per %s step; %d of %d failed (%s) over the range.", ps.Provider, stepText(step), r.failed, r.Total, r.FailRate)
		r.Latency.Label = fmt.Sprintf("%s: 95th percentile latency of 2xx answers per %s step; the tallest bar is %s; p95 over the range %s.", ps.Provider, stepText(step), dur(worst, worst > 0), r.P95)
		rows = append(rows, r)
	}
	slices.SortStableFunc(rows, func(a, b providerRow) int {
		// The highest failure share first (a provider with no answer last),
		// then the most failures, then by name.
		ra, rb := rate(a.failed, a.Total), rate(b.failed, b.Total)
		return cmp.Or(cmp.Compare(rb, ra), cmp.Compare(b.failed, a.failed), cmp.Compare(a.Name, b.Name))
	})
	more := 0
	if len(rows) > maxChartProviders {
		more = len(rows) - maxChartProviders
		rows = rows[:maxChartProviders]
	}
	return rows, more
}

// rate is n/of, -1 without any (sorted after 0).
func rate(n, of uint64) float64 {
	if of == 0 {
		return -1
	}
	return float64(n) / float64(of)
}

func subscriberRowOf(sc ops.SubscriberChart, step time.Duration) subscriberChartRow {
	r := subscriberChartRow{Name: sc.Name, Destination: sc.Destination, Processed: sc.Processed, DeadLettered: sc.DeadLettered,
		FailRate: pct(uint64(sc.DeadLettered), uint64(sc.Processed+sc.DeadLettered)),
		Attempts: sc.Attempts, FailedAttempts: sc.FailedAttempts, AttemptFailRate: pct(uint64(sc.FailedAttempts), uint64(sc.Attempts)),
		P50: dur(sc.P50, sc.Samples > 0), P95: dur(sc.P95, sc.Samples > 0), P99: dur(sc.P99, sc.Samples > 0),
		Samples: sc.Samples, Partial: sc.Partial}
	var attemptP95, attemptP99 time.Duration
	var most uint64
	var worst time.Duration
	for _, b := range sc.Buckets {
		most = max(most, uint64(b.Processed+b.DeadLettered+b.FailedAttempts))
		worst = max(worst, b.P95)
		attemptP95, attemptP99 = max(attemptP95, b.AttemptP95), max(attemptP99, b.AttemptP99)
	}
	// The worst step's attempt percentiles (the steps' own are computed
	// in SQL; a range-wide one would be another scan).
	r.AttemptP95, r.AttemptP99 = dur(attemptP95, sc.Attempts > 0), dur(attemptP99, sc.Attempts > 0)
	r.Volume = spark{Width: len(sc.Buckets) * sparkStep, Height: sparkHeight}
	r.Latency = r.Volume
	for i, b := range sc.Buckets {
		at := b.Start.UTC().Format("15:04")
		title := fmt.Sprintf("%s UTC: %d processed, %d dead-lettered", at, b.Processed, b.DeadLettered)
		if sc.Destination {
			title += fmt.Sprintf(", %d of %d HTTP attempts failed", b.FailedAttempts, b.Attempts)
		}
		r.Volume.Bars = append(r.Volume.Bars, stack(i, title, []string{"s2xx", "s5xx", "s4xx"},
			[]int{scaled(uint64(b.Processed), most), scaled(uint64(b.DeadLettered), most), scaled(uint64(b.FailedAttempts), most)}))
		lt := fmt.Sprintf("%s UTC: no processed event sampled", at)
		h := 0
		if b.Samples > 0 {
			lt = fmt.Sprintf("%s UTC: p95 %s from the hub's acceptance to processed (%d sampled)", at, dur(b.P95, true), b.Samples)
			h = scaled(uint64(b.P95), uint64(worst))
		}
		r.Latency.Bars = append(r.Latency.Bars, stack(i, lt, []string{"slat"}, []int{h}))
	}
	r.Volume.Label = fmt.Sprintf("%s: events per %s step: %d processed, %d dead-lettered", sc.Name, stepText(step), sc.Processed, sc.DeadLettered)
	if sc.Destination {
		r.Volume.Label += fmt.Sprintf(", %d of %d HTTP attempts failed", sc.FailedAttempts, sc.Attempts)
	}
	r.Volume.Label += "."
	r.Latency.Label = fmt.Sprintf("%s: 95th percentile time from the hub's acceptance to processed, per %s step; the tallest bar is %s; p95 over the range %s.",
		sc.Name, stepText(step), dur(worst, worst > 0), r.P95)
	return r
}
