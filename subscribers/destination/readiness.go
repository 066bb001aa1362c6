package destination

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricReady is 1 for a destination that consumes, 0 for one that cannot
// start or stopped on an error (its reason is in /readyz and the log).
const MetricReady = "hookhub_destination_ready"

// Readiness is one destination's readiness (Service.Readiness).
type Readiness struct {
	Destination string `json:"destination"`
	Ready       bool   `json:"ready"`
	// Reason is why it is not ready: it could not be built (New), its
	// Run stopped on an error (a consumer JetStream refuses, a name that
	// is taken) and is being started again, or its consumer is gone.
	Reason string `json:"reason,omitempty"`
}

// newReadyGauge registers the ready gauge with reg, or returns the one
// already registered.
func newReadyGauge(reg prometheus.Registerer) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricReady,
		Help: "1 while the destination consumes, 0 while it cannot start or stopped on an error (see /readyz)."}, []string{"destination"})
	return must(reg, g, new([]error)) // an error other than a duplicate is ignored
}

// Readiness reports every destination of the set: running ones, and those
// that could not be built. It sets hookhub_destination_ready for each.
func (s *Service) Readiness() []Readiness {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Readiness, 0, len(s.running)+len(s.broken))
	for _, name := range slices.Sorted(maps.Keys(s.running)) {
		run := s.running[name]
		run.mu.Lock()
		failed, r := run.failed, run.r
		run.mu.Unlock()
		if failed == nil {
			failed = r.Healthy()
		}
		out = append(out, readiness(name, failed))
	}
	for _, name := range slices.Sorted(maps.Keys(s.broken)) {
		out = append(out, readiness(name, s.broken[name]))
	}
	slices.SortFunc(out, func(a, b Readiness) int { return strings.Compare(a.Destination, b.Destination) })
	for _, r := range out {
		v := 0.0
		if r.Ready {
			v = 1
		}
		s.ready.WithLabelValues(r.Destination).Set(v)
	}
	return out
}

func readiness(name string, err error) Readiness {
	if err == nil {
		return Readiness{Destination: name, Ready: true}
	}
	return Readiness{Destination: name, Reason: err.Error()}
}

// Healthy reports whether the process works: nil when it has no
// destination or at least one is ready. One destination that cannot start
// (a consumer JetStream refuses, a name taken in Postgres) does not make
// the process unhealthy: it shows in Readiness, /readyz,
// hookhub_destination_ready and the HookhubDestinationNotReady alert,
// while the others deliver. A paused or disabled destination, or one
// whose circuit is open, is ready: the process works, the endpoint does
// not; that shows in the metrics and alerts.
func (s *Service) Healthy() error {
	rs := s.Readiness()
	var problems []string
	for _, r := range rs {
		if r.Ready {
			return nil
		}
		problems = append(problems, fmt.Sprintf("%s: %s", r.Destination, r.Reason))
	}
	if len(problems) > 0 {
		return errors.New("no destination is ready: " + strings.Join(problems, "; "))
	}
	return nil
}

// Ready is nil when every destination is ready, else an error listing
// those that are not, each with its reason.
func (s *Service) Ready() error {
	var problems []string
	for _, r := range s.Readiness() {
		if !r.Ready {
			problems = append(problems, fmt.Sprintf("%s: %s", r.Destination, r.Reason))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
