package console

import (
	"fmt"
	"strconv"

	"github.com/hookhub/hookhub/hub/server"
)

// chart is the overview's traffic chart: one stacked bar per minute,
// 2xx at the bottom, then 4xx, then 5xx, drawn as SVG by the template.
type chart struct {
	Width, Height int
	Bars          []bar
	Max           uint64
	OK, Client    uint64
	Server        uint64
	Label         string // the chart's text alternative
	From, To      string // first and last minute shown (UTC)
}

type bar struct {
	X, W             int
	OKY, OKH         int
	ClientY, ClientH int
	ServerY, ServerH int
	Title            string
}

const (
	chartWidth  = 600
	chartHeight = 150
	barWidth    = chartWidth / server.TrafficMinutes
)

func newChart(mins []server.TrafficMinute) chart {
	ch := chart{Width: chartWidth, Height: chartHeight}
	for _, m := range mins {
		ch.Max = max(ch.Max, m.OK+m.ClientErr+m.SrvErr)
		ch.OK += m.OK
		ch.Client += m.ClientErr
		ch.Server += m.SrvErr
	}
	if len(mins) > 0 {
		ch.From, ch.To = mins[0].Start.Format("15:04"), mins[len(mins)-1].Start.Format("15:04")
	}
	scale := func(n uint64) int {
		if ch.Max == 0 || n == 0 {
			return 0
		}
		return max(1, int(n*uint64(chartHeight)/ch.Max))
	}
	for i, m := range mins {
		b := bar{X: i * barWidth, W: barWidth - 2}
		b.OKH, b.ClientH, b.ServerH = scale(m.OK), scale(m.ClientErr), scale(m.SrvErr)
		b.OKY = chartHeight - b.OKH
		b.ClientY = b.OKY - b.ClientH
		b.ServerY = b.ClientY - b.ServerH
		b.Title = fmt.Sprintf("%s UTC: %d 2xx, %d 4xx, %d 5xx", m.Start.Format("15:04"), m.OK, m.ClientErr, m.SrvErr)
		ch.Bars = append(ch.Bars, b)
	}
	ch.Label = "Webhook deliveries per minute over the last hour: " + strconv.FormatUint(ch.OK, 10) + " answered 2xx, " +
		strconv.FormatUint(ch.Client, 10) + " 4xx, " + strconv.FormatUint(ch.Server, 10) + " 5xx; busiest minute " +
		strconv.FormatUint(ch.Max, 10) + "."
	return ch
}
