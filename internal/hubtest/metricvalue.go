package hubtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricValue returns the value of the first series of the counter or
// gauge name in reg whose labels include labels (nil: any series), 0 when
// there is none.
func MetricValue(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	v, _ := metricSeries(t, reg, name, labels)
	return v
}

// RequireMetric is MetricValue for a series that must exist: it fails the
// test when reg has none.
func RequireMetric(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := metricSeries(t, reg, name, labels)
	if !ok {
		t.Fatalf("no metric %s%v", name, labels)
	}
	return v
}

// metricSeries is the value of the first series of the counter or gauge
// name in reg whose labels include labels, and whether there is one.
func metricSeries(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue series
				}
			}
			return m.GetCounter().GetValue() + m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}
