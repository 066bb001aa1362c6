package subscriber

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names. Every metric has the label "subscriber".
const (
	MetricProcessed        = "hookhub_subscriber_processed_total"
	MetricSkippedDuplicate = "hookhub_subscriber_skipped_duplicate_total"
	MetricSkippedStale     = "hookhub_subscriber_skipped_stale_total"
	MetricSkippedMarkers   = "hookhub_subscriber_skipped_server_markers_total"
	MetricFailed           = "hookhub_subscriber_failed_total"
	MetricDeadLettered     = "hookhub_subscriber_dead_lettered_total"
	MetricRedriven         = "hookhub_subscriber_redriven_total"
	MetricHandlerDuration  = "hookhub_subscriber_handler_duration_seconds"
	MetricInFlight         = "hookhub_subscriber_in_flight"
	MetricHandlerPanics    = "hookhub_subscriber_handler_panics_total"
	MetricCrashLoops       = "hookhub_subscriber_crash_loops_total"
	MetricDeadLetterErrors = "hookhub_subscriber_dead_letter_errors_total"
	MetricStuckMessages    = "hookhub_subscriber_stuck_messages"
	MetricConsumerUp       = "hookhub_subscriber_consumer_up"
	MetricWorkersWaiting   = "hookhub_subscriber_workers_waiting"
	MetricResent           = "hookhub_subscriber_resent_total"
)

// Stats are the subscriber's counters since New, the same as its metrics.
type Stats struct {
	Processed        uint64 // handler succeeded and committed
	SkippedDuplicate uint64 // already processed: handler not called
	SkippedStale     uint64 // handler returned ErrStale (or ApplyIfNewer said stale)
	SkippedMarkers   uint64 // server delete markers (schema.IsServerMarker): acked, handler not called
	Failed           uint64 // failed attempts (handler error, panic, or the database)
	DeadLettered     uint64 // messages stored as dead letters and terminated
	Redriven         uint64 // dead letters redriven successfully (processed or skipped)
	Panics           uint64 // handler calls that panicked (also counted in Failed)
	CrashLoops       uint64 // messages dead-lettered because earlier handler calls never returned
	DeadLetterErrors uint64 // dead letters that could not be stored (the message is retried)
	Resent           uint64 // replay copies of processed events handled again (Config.ResendReplays)
}

type metrics struct {
	processed, duplicate, stale, failed, dead, redriven   prometheus.Counter
	panics, crashLoops, deadLetterErrors, markers, resent prometheus.Counter
	duration                                              prometheus.Observer
	inFlight, stuck, consumerUp, waiting                  prometheus.Gauge

	stats struct {
		processed, duplicate, stale, failed, dead, redriven atomic.Uint64
		panics, crashLoops, deadLetterErrors, markers       atomic.Uint64
		resent                                              atomic.Uint64
	}
}

func newMetrics(reg prometheus.Registerer, name string) (*metrics, error) {
	labels := []string{"subscriber"}
	counter := func(n, help string) (prometheus.Counter, error) {
		v, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: n, Help: help}, labels))
		if err != nil {
			return nil, err
		}
		return v.WithLabelValues(name), nil
	}
	m := &metrics{}
	var errs []error
	for _, c := range []struct {
		dst        *prometheus.Counter
		name, help string
	}{
		{&m.processed, MetricProcessed, "Events handled and committed."},
		{&m.duplicate, MetricSkippedDuplicate, "Deliveries of events already processed (handler not called)."},
		{&m.stale, MetricSkippedStale, "Events skipped as older than the state already applied."},
		{&m.markers, MetricSkippedMarkers, "Subject delete markers the NATS server wrote on the stream, acked without calling the handler."},
		{&m.failed, MetricFailed, "Failed attempts (handler error or panic, or database failure)."},
		{&m.dead, MetricDeadLettered, "Messages stored as dead letters and terminated."},
		{&m.redriven, MetricRedriven, "Dead letters redriven successfully."},
		{&m.panics, MetricHandlerPanics, "Handler calls that panicked (each is a failed attempt)."},
		{&m.crashLoops, MetricCrashLoops, "Messages dead-lettered without calling the handler because earlier calls for the event never returned (the handler may crash the process)."},
		{&m.deadLetterErrors, MetricDeadLetterErrors, "Dead letters Postgres did not store; the message is retried later."},
		{&m.resent, MetricResent, "Replay copies of events already processed whose handler was called again (ResendReplays)."},
	} {
		var err error
		if *c.dst, err = counter(c.name, c.help); err != nil {
			errs = append(errs, err)
		}
	}
	h, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricHandlerDuration,
		Help:    "Time spent in the handler, per attempt.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 9), // 1ms .. ~65s
	}, labels))
	if err != nil {
		errs = append(errs, err)
	} else {
		m.duration = h.WithLabelValues(name)
	}
	for _, g := range []struct {
		dst        *prometheus.Gauge
		name, help string
	}{
		{&m.inFlight, MetricInFlight, "Messages being handled now."},
		{&m.stuck, MetricStuckMessages, "Messages due to be dead-lettered whose dead letter cannot be stored; they are retried (see /healthz)."},
		{&m.consumerUp, MetricConsumerUp, "1 while the durable consumer exists and is pulled, 0 while it is being (re)created or the subscriber is not running."},
		{&m.waiting, MetricWorkersWaiting, "Workers waiting in Config.Admit before taking their next message."},
	} {
		v, err := register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: g.name, Help: g.help}, labels))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		*g.dst = v.WithLabelValues(name)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("subscriber: register metrics: %w", errors.Join(errs...))
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// the same description, so several subscribers (told apart by their label)
// can share one registry.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if err := reg.Register(c); err != nil {
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing, nil
			}
		}
		var zero T
		return zero, err
	}
	return c, nil
}

func (m *metrics) observe(d time.Duration) { m.duration.Observe(d.Seconds()) }

func (m *metrics) count(o outcome) {
	switch o {
	case outcomeProcessed:
		inc(m.processed, &m.stats.processed)
	case outcomeDuplicate:
		inc(m.duplicate, &m.stats.duplicate)
	case outcomeStale:
		inc(m.stale, &m.stats.stale)
	case outcomeResent:
		inc(m.resent, &m.stats.resent)
	}
}

// inc counts one in a metric and in its Stats twin.
func inc(c prometheus.Counter, n *atomic.Uint64) {
	c.Inc()
	n.Add(1)
}

func (m *metrics) countMarker()          { inc(m.markers, &m.stats.markers) }
func (m *metrics) countFailed()          { inc(m.failed, &m.stats.failed) }
func (m *metrics) countDead()            { inc(m.dead, &m.stats.dead) }
func (m *metrics) countRedriven()        { inc(m.redriven, &m.stats.redriven) }
func (m *metrics) countPanic()           { inc(m.panics, &m.stats.panics) }
func (m *metrics) countCrashLoop()       { inc(m.crashLoops, &m.stats.crashLoops) }
func (m *metrics) countDeadLetterError() { inc(m.deadLetterErrors, &m.stats.deadLetterErrors) }

func (m *metrics) snapshot() Stats {
	return Stats{
		Processed:        m.stats.processed.Load(),
		SkippedDuplicate: m.stats.duplicate.Load(),
		SkippedStale:     m.stats.stale.Load(),
		SkippedMarkers:   m.stats.markers.Load(),
		Failed:           m.stats.failed.Load(),
		DeadLettered:     m.stats.dead.Load(),
		Redriven:         m.stats.redriven.Load(),
		Panics:           m.stats.panics.Load(),
		CrashLoops:       m.stats.crashLoops.Load(),
		DeadLetterErrors: m.stats.deadLetterErrors.Load(),
		Resent:           m.stats.resent.Load(),
	}
}
