package destination_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/subscribers/destination"
)

// series returns the gathered series of reg as "name{labels} value" lines
// (histograms as their sample count), sorted.
func series(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := mf.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := destination.NewMetrics(reg)
	// Nothing is exported before a destination reports.
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	require.Zero(t, n)

	last := time.Unix(1_700_000_000, 500_000_000)
	// Many destinations share one Metrics, concurrently.
	var wg sync.WaitGroup
	for _, dest := range []string{"billing", "crm"} {
		for range 4 {
			wg.Go(func() {
				m.ObserveAttempt(dest, "2xx", 31250*time.Microsecond) // 1/32 s and 8 s: sums exact in any order
				m.ObserveAttempt(dest, "error", 8*time.Second)
				m.SetBacklog(dest, 42)
				m.SetCircuitOpen(dest, true)
				m.SetState(dest, destination.StatePaused)
				m.SetLastSuccess(dest, last)
			})
		}
	}
	wg.Wait()
	m.CountDisabled("crm")
	m.SetCircuitOpen("crm", false)
	m.SetState("crm", destination.StateDisabled)

	want := map[string]float64{}
	for _, dest := range []string{"billing", "crm"} {
		want[fmt.Sprintf("%s{class=2xx,destination=%s}", destination.MetricAttempts, dest)] = 4
		want[fmt.Sprintf("%s{class=error,destination=%s}", destination.MetricAttempts, dest)] = 4
		want[fmt.Sprintf("%s{destination=%s}", destination.MetricAttemptDuration, dest)] = 8
		want[fmt.Sprintf("%s{destination=%s}", destination.MetricBacklog, dest)] = 42
		want[fmt.Sprintf("%s{destination=%s}", destination.MetricLastSuccess, dest)] = 1_700_000_000.5
	}
	want["hookhub_destination_circuit_open{destination=billing}"] = 1
	want["hookhub_destination_circuit_open{destination=crm}"] = 0
	want["hookhub_destination_state{destination=billing,state=active}"] = 0
	want["hookhub_destination_state{destination=billing,state=paused}"] = 1
	want["hookhub_destination_state{destination=billing,state=disabled}"] = 0
	want["hookhub_destination_state{destination=crm,state=active}"] = 0
	want["hookhub_destination_state{destination=crm,state=paused}"] = 0
	want["hookhub_destination_state{destination=crm,state=disabled}"] = 1
	want["hookhub_destination_disabled_total{destination=crm}"] = 1
	require.Equal(t, want, series(t, reg))

	// The histogram's buckets run from 5 ms to 30 s.
	const help = `# HELP hookhub_destination_attempt_duration_seconds Duration of an HTTP attempt, from the request's start to the response body read (or the error).`
	hist := help + "\n# TYPE hookhub_destination_attempt_duration_seconds histogram\n"
	for _, dest := range []string{"billing", "crm"} {
		for _, b := range []struct {
			le    string
			count int
		}{{"0.005", 0}, {"0.01", 0}, {"0.025", 0}, {"0.05", 4}, {"0.1", 4}, {"0.25", 4}, {"0.5", 4}, {"1", 4}, {"2.5", 4}, {"5", 4}, {"10", 8}, {"30", 8}, {"+Inf", 8}} {
			hist += fmt.Sprintf("hookhub_destination_attempt_duration_seconds_bucket{destination=%q,le=%q} %d\n", dest, b.le, b.count)
		}
		hist += fmt.Sprintf("hookhub_destination_attempt_duration_seconds_sum{destination=%q} 32.125\n", dest)
		hist += fmt.Sprintf("hookhub_destination_attempt_duration_seconds_count{destination=%q} 8\n", dest)
	}
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(hist), destination.MetricAttemptDuration))

	// A destination removed on reload stops being exported; the others stay.
	m.Forget("crm")
	got := series(t, reg)
	for k := range want {
		if strings.Contains(k, "destination=crm") {
			delete(want, k)
		}
	}
	require.Equal(t, want, got)

	// A second NewMetrics on the same registry shares the series.
	m2 := destination.NewMetrics(reg)
	m2.CountDisabled("billing")
	require.Equal(t, 1.0, series(t, reg)["hookhub_destination_disabled_total{destination=billing}"])
}

func TestMetricsNil(t *testing.T) {
	t.Parallel()
	var m *destination.Metrics
	m.ObserveAttempt("billing", "2xx", time.Second)
	m.SetBacklog("billing", 1)
	m.SetCircuitOpen("billing", true)
	m.SetState("billing", destination.StateActive)
	m.SetLastSuccess("billing", time.Now())
	m.CountDisabled("billing")
	m.Forget("billing")
	// Unregistered metrics work too.
	destination.NewMetrics(nil).ObserveAttempt("billing", "2xx", time.Second)
}

func TestMetricsConflict(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: destination.MetricBacklog, Help: "something else"}))
	require.Panics(t, func() { destination.NewMetrics(reg) })
}
