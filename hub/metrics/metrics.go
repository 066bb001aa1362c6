// Package metrics defines the hub's Prometheus metrics. They are
// registered on the Registerer the hub is given, never on the global one.
package metrics

import "github.com/prometheus/client_golang/prometheus"

// Delivery outcomes, the "outcome" label of hub_deliveries_total.
const (
	OutcomeAccepted         = "accepted"          // first delivery, committed PENDING
	OutcomeDuplicate        = "duplicate"         // committed SKIPPED
	OutcomeUnpublishable    = "unpublishable"     // committed FAILED (type cannot form a subject)
	OutcomeInvalidSignature = "invalid_signature" // 401
	OutcomeStaleTimestamp   = "stale_timestamp"   // 401
	OutcomeBadRequest       = "bad_request"       // 400
	OutcomeTooLarge         = "too_large"         // 413
	OutcomeUnavailable      = "unavailable"       // 503: nothing committed
	OutcomeOverloaded       = "overloaded"        // 503: past HUB_MAX_INFLIGHT, refused before reading the body
)

// Publish outcomes, the "outcome" label of hub_publish_total.
const (
	PublishOK        = "ok"
	PublishDuplicate = "duplicate" // JetStream already had the message id: also a success
	PublishFound     = "found"     // found in the stream after an uncertain attempt
	PublishError     = "error"
	PublishDeferred  = "deferred" // the fast path was saturated: left to the relay
	// PublishExpired: the fast path held the row (queued behind a stalled
	// JetStream or a slow settle) until it was nearly as old as the relay's
	// grace, and left it to the claiming relay instead of publishing it.
	PublishExpired = "expired"
)

// Metrics are the hub's collectors.
type Metrics struct {
	Deliveries       *prometheus.CounterVec
	IngestSeconds    *prometheus.HistogramVec
	CommitBatch      prometheus.Histogram
	Published        *prometheus.CounterVec
	PublishLagSecond prometheus.Histogram
	OutboxPending    prometheus.Gauge
	OutboxOldest     prometheus.Gauge
	NATSConnected    prometheus.Gauge
	// ConnsRejected counts connections refused past HUB_MAX_CONNS.
	ConnsRejected prometheus.Counter
	// AdminConnsRejected counts connections to the admin listener refused
	// past HUB_ADMIN_MAX_CONNS, or past a quarter of it from one remote
	// address.
	AdminConnsRejected prometheus.Counter
	// AdminUnauthorized counts admin API requests answered 401 (no or a
	// wrong token): counted, never written to the audit trail, so that
	// no one without the token can flood it.
	AdminUnauthorized prometheus.Counter
	// AdmissionRefused counts expensive operations of hub/ops refused by
	// admission (429 with Retry-After), by pool (reads, actions) and what
	// was refused (payload_filter, bulk_plan, dry_run, charts,
	// audit_export, replay, bulk).
	AdmissionRefused *prometheus.CounterVec
	// BodyBytes is the memory reserved for request bodies being received
	// and handled (HUB_MAX_INFLIGHT × HUB_MAX_BODY_BYTES at most).
	BodyBytes      prometheus.Gauge
	StreamPresent  prometheus.Gauge
	StreamLost     prometheus.Counter
	StreamRestored prometheus.Counter
	// StreamSettingBroken is 1 for each setting of the stream that breaks
	// delivery or dedup (relay.StreamSettings), 0 for the others.
	StreamSettingBroken *prometheus.GaugeVec
	// The backfill (hub/backfill): events a provider's API listed that
	// the hub never received as webhooks, those ingested, runs by outcome
	// (BackfillOK, BackfillPartial, BackfillError, BackfillBounded,
	// BackfillSkipped), and the time of the last run that listed its
	// whole window.
	BackfillMissing     *prometheus.CounterVec
	BackfillIngested    *prometheus.CounterVec
	BackfillRuns        *prometheus.CounterVec
	BackfillLastSuccess *prometheus.GaugeVec
	// Missing events a backfill could not ingest (malformed, no usable
	// id, too large, fetch failed), and unfinished runs a periodic run
	// gave up to start over on the current window.
	BackfillFailed    *prometheus.CounterVec
	BackfillAbandoned *prometheus.CounterVec
	// BackfillInterval is HUB_BACKFILL_INTERVAL for each provider `hub
	// serve` backfills: the alerts' measure of a stale last success.
	BackfillInterval *prometheus.GaugeVec
	// ConsoleOIDCDiscovered is 1 once the console has read its OpenID
	// Connect provider's discovery document, 0 while it cannot (token
	// sign-in works meanwhile); absent without OIDC.
	ConsoleOIDCDiscovered *prometheus.GaugeVec
}

// Backfill run outcomes, the "outcome" label of hub_backfill_runs_total.
const (
	BackfillOK      = "ok"
	BackfillPartial = "partial" // listed the whole window, but some missing events could not be ingested
	BackfillError   = "error"   // stopped early: the API, the database or a shutdown
	BackfillBounded = "bounded" // stopped by a bound (pages, events, run time) or a cursor cycle: the API keeps paging
	BackfillSkipped = "skipped" // not run: another hub holds the provider's lease
)

// New creates the hub's metrics and registers them on reg.
func New(reg prometheus.Registerer) *Metrics {
	return &Metrics{
		Deliveries:            counterVec(reg, "hub_deliveries_total", "Webhook deliveries received, by provider and outcome.", "provider", "outcome"),
		IngestSeconds:         histogramVec(reg, "hub_ingest_duration_seconds", "Time from reading a delivery to answering it, by provider and outcome.", []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}, "provider", "outcome"),
		CommitBatch:           histogram(reg, "hub_commit_batch_deliveries", "Deliveries per group-commit transaction.", []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}),
		Published:             counterVec(reg, "hub_publish_total", "Outbox publishes to JetStream, by outcome.", "outcome"),
		PublishLagSecond:      histogram(reg, "hub_publish_lag_seconds", "Time from receiving an event to JetStream acknowledging it.", []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30, 120, 600}),
		OutboxPending:         gauge(reg, "hub_outbox_pending", "Committed events not yet acknowledged by JetStream (PENDING rows)."),
		OutboxOldest:          gauge(reg, "hub_outbox_oldest_pending_seconds", "Age of the oldest PENDING row; 0 when the outbox is empty."),
		NATSConnected:         gauge(reg, "hub_nats_connected", "1 while the hub's NATS connection is up."),
		BodyBytes:             gauge(reg, "hub_http_body_bytes", "Bytes reserved for webhook request bodies being received and handled; at most HUB_MAX_INFLIGHT x HUB_MAX_BODY_BYTES, past which deliveries are answered 503."),
		ConnsRejected:         counter(reg, "hub_http_connections_rejected_total", "Connections to the webhook listener answered 503 and closed because HUB_MAX_CONNS were open."),
		AdminConnsRejected:    counter(reg, "hub_admin_connections_rejected_total", "Connections to the admin listener (HUB_ADMIN_ADDR) answered 503 and closed because HUB_ADMIN_MAX_CONNS were open, or a quarter of them from its remote address."),
		AdminUnauthorized:     counter(reg, "hub_admin_unauthorized_total", "Admin API requests answered 401: no bearer token or a wrong one (not recorded in the audit trail)."),
		StreamPresent:         gauge(reg, "hub_stream_present", "1 while the hub's JetStream stream exists with this hub's subjects; 0 while it is missing, lacks some or shares them with another stream (and before the first check)."),
		StreamLost:            counter(reg, "hub_stream_lost_total", "Times this hub found its stream deleted or replaced by a new one (it recreates the stream and restores what it held)."),
		StreamRestored:        counter(reg, "hub_stream_restored_events_total", "Events a lost stream held that this hub re-queued for publishing to the recreated stream."),
		StreamSettingBroken:   gaugeVec(reg, "hub_stream_setting_broken", "1 while a setting of the hub's stream breaks delivery or dedup (sealed, subject_transform, retention, ...; /readyz says \"misconfigured\"), by setting; 0 otherwise.", "setting"),
		BackfillMissing:       counterVec(reg, "hub_backfill_missing_total", "Events a provider's API listed that the hub had not received as webhooks (found by a backfill, dry runs included): each means a webhook was lost.", "provider"),
		BackfillIngested:      counterVec(reg, "hub_backfill_ingested_total", "Missing events a backfill ingested from a provider's API (origin api).", "provider"),
		BackfillRuns:          counterVec(reg, "hub_backfill_runs_total", "Backfill runs, by provider and outcome (ok, partial, error, bounded, skipped).", "provider", "outcome"),
		BackfillLastSuccess:   gaugeVec(reg, "hub_backfill_last_success_timestamp_seconds", "Unix time of the last backfill run that listed its whole window, by provider; until one has, when hub serve's periodic backfill started.", "provider"),
		BackfillFailed:        counterVec(reg, "hub_backfill_failed_total", "Missing events a backfill could not ingest or redeliver (malformed in the API's answer, no usable id, too large, fetch failed); each is logged with its id and reason.", "provider"),
		BackfillAbandoned:     counterVec(reg, "hub_backfill_abandoned_total", "Unfinished backfill runs a periodic run gave up after continuing them the most times allowed, to start over on the current window (the old window's unchecked part is logged).", "provider"),
		BackfillInterval:      gaugeVec(reg, "hub_backfill_interval_seconds", "How often hub serve backfills the provider (HUB_BACKFILL_INTERVAL); absent when it does not.", "provider"),
		ConsoleOIDCDiscovered: gaugeVec(reg, "hub_console_oidc_discovered", "1 once the console has read its OpenID Connect provider's discovery document, 0 while the provider cannot be reached (OIDC sign-in answers 503; token sign-in works), by issuer; absent without HUB_CONSOLE_OIDC_ISSUER.", "issuer"),
		AdmissionRefused:      admissionRefused(reg),
	}
}

// The constructors below make a metric and register it on reg.

func counter(reg prometheus.Registerer, name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	reg.MustRegister(c)
	return c
}

func counterVec(reg prometheus.Registerer, name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	reg.MustRegister(c)
	return c
}

func gauge(reg prometheus.Registerer, name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	reg.MustRegister(g)
	return g
}

func gaugeVec(reg prometheus.Registerer, name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	reg.MustRegister(g)
	return g
}

func histogram(reg prometheus.Registerer, name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	reg.MustRegister(h)
	return h
}

func histogramVec(reg prometheus.Registerer, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	reg.MustRegister(h)
	return h
}

// admissionRefused is hub_admission_refused_total, registered on reg.
func admissionRefused(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hub_admission_refused_total",
		Help: "Expensive operator operations refused because their admission pool was spent (answered 429 with Retry-After), by pool (reads: plans, dry runs, payload filters, exports, charts; actions: replays, bulk actions) and what was refused.",
	}, []string{"pool", "what"})
	reg.MustRegister(c)
	return c
}
