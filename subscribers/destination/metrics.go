package destination

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names. Every metric has the label "destination".
const (
	MetricAttempts        = "hookhub_destination_attempts_total"
	MetricAttemptDuration = "hookhub_destination_attempt_duration_seconds"
	MetricBacklog         = "hookhub_destination_backlog"
	MetricCircuitOpen     = "hookhub_destination_circuit_open"
	MetricState           = "hookhub_destination_state"
	MetricLastSuccess     = "hookhub_destination_last_success_timestamp_seconds"
	MetricDisabled        = "hookhub_destination_disabled_total"
	MetricWaiting         = "hookhub_destination_waiting"
)

// attemptBuckets are the attempt duration histogram's buckets, 5 ms to
// 30 s (the longest default timeout is 10 s; the maximum 5 m lands in +Inf).
var attemptBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Metrics are the destinations' Prometheus series: one Metrics per
// process, shared by all its destinations (told apart by the label
// "destination"); safe for concurrent use. A nil *Metrics records nothing.
type Metrics struct {
	attempts    *prometheus.CounterVec   // destination, class
	duration    *prometheus.HistogramVec // destination
	backlog     *prometheus.GaugeVec     // destination
	circuitOpen *prometheus.GaugeVec     // destination
	state       *prometheus.GaugeVec     // destination, state
	lastSuccess *prometheus.GaugeVec     // destination
	disabled    *prometheus.CounterVec   // destination
	waiting     *prometheus.GaugeVec     // destination
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered). Metrics already registered with reg under the same
// description (a second NewMetrics on one registry) are shared. It panics
// if reg holds different metrics of the same names: a programming error.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	d := []string{"destination"}
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricAttempts,
			Help: "HTTP attempts to deliver an event, by class of answer: 2xx, 3xx, 4xx, 5xx, or error (no answer)."}, []string{"destination", "class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricAttemptDuration,
			Help: "Duration of an HTTP attempt, from the request's start to the response body read (or the error).", Buckets: attemptBuckets}, d),
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricBacklog,
			Help: "Events waiting for the destination: its consumer's pending plus unacknowledged messages, polled."}, d),
		circuitOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricCircuitOpen,
			Help: "1 while the destination's circuit breaker is open or probing (attempts held back), else 0."}, d),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricState,
			Help: "1 for the destination's current state (active, paused, disabled), 0 for the others."}, []string{"destination", "state"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricLastSuccess,
			Help: "Unix time of the destination's last delivered event (2xx answer)."}, d),
		disabled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDisabled,
			Help: "Times the destination was disabled because its endpoint answered 410 Gone."}, d),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricWaiting,
			Help: "Events parked out of the stream: waiting for a retry more than 10s away (a backoff, a Retry-After), or behind such an event on an ordered destination; polled."}, d),
	}
	if reg == nil {
		return m
	}
	var errs []error
	m.attempts = must(reg, m.attempts, &errs)
	m.duration = must(reg, m.duration, &errs)
	m.backlog = must(reg, m.backlog, &errs)
	m.circuitOpen = must(reg, m.circuitOpen, &errs)
	m.state = must(reg, m.state, &errs)
	m.lastSuccess = must(reg, m.lastSuccess, &errs)
	m.disabled = must(reg, m.disabled, &errs)
	m.waiting = must(reg, m.waiting, &errs)
	if len(errs) > 0 {
		panic(fmt.Sprintf("destination: register metrics: %v", errors.Join(errs...)))
	}
	return m
}

// must registers c with reg, returning the collector already registered
// under the same description if any; an error is appended to errs.
func must[T prometheus.Collector](reg prometheus.Registerer, c T, errs *[]error) T {
	if err := reg.Register(c); err != nil {
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing
			}
		}
		*errs = append(*errs, err)
	}
	return c
}

// ObserveAttempt counts one attempt of dest, of class (Result.Class: 2xx,
// 3xx, 4xx, 5xx, error), that took d.
func (m *Metrics) ObserveAttempt(dest, class string, d time.Duration) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(dest, class).Inc()
	m.duration.WithLabelValues(dest).Observe(d.Seconds())
}

// SetBacklog sets the number of events waiting for dest.
func (m *Metrics) SetBacklog(dest string, n uint64) {
	if m == nil {
		return
	}
	m.backlog.WithLabelValues(dest).Set(float64(n))
}

// SetWaiting sets the number of dest's parked events (waiting for a
// retry, or behind one on an ordered destination).
func (m *Metrics) SetWaiting(dest string, n int64) {
	if m == nil {
		return
	}
	m.waiting.WithLabelValues(dest).Set(float64(n))
}

// SetCircuitOpen sets whether dest's circuit breaker holds attempts back.
func (m *Metrics) SetCircuitOpen(dest string, open bool) {
	if m == nil {
		return
	}
	v := 0.0
	if open {
		v = 1
	}
	m.circuitOpen.WithLabelValues(dest).Set(v)
}

// SetState sets dest's current state: 1 for s, 0 for the other states.
func (m *Metrics) SetState(dest string, s State) {
	if m == nil {
		return
	}
	for _, each := range states() {
		v := 0.0
		if each == s {
			v = 1
		}
		m.state.WithLabelValues(dest, string(each)).Set(v)
	}
}

// SetLastSuccess records when dest last delivered an event.
func (m *Metrics) SetLastSuccess(dest string, t time.Time) {
	if m == nil {
		return
	}
	m.lastSuccess.WithLabelValues(dest).Set(float64(t.UnixNano()) / 1e9)
}

// CountDisabled counts dest being disabled by a 410 Gone.
func (m *Metrics) CountDisabled(dest string) {
	if m == nil {
		return
	}
	m.disabled.WithLabelValues(dest).Inc()
}

// Forget deletes every series of dest: for a destination removed from the
// file on reload, so it stops being exported.
func (m *Metrics) Forget(dest string) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"destination": dest}
	m.attempts.DeletePartialMatch(l)
	m.duration.DeletePartialMatch(l)
	m.backlog.DeletePartialMatch(l)
	m.circuitOpen.DeletePartialMatch(l)
	m.state.DeletePartialMatch(l)
	m.lastSuccess.DeletePartialMatch(l)
	m.waiting.DeletePartialMatch(l)
	m.disabled.DeletePartialMatch(l)
}
