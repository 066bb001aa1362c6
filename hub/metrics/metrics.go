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
		Deliveries:            registered(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hub_deliveries_total", Help: "Webhook deliveries received, by provider and outcome."}, []string{"provider", "outcome"})),
		IngestSeconds:         registered(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hub_ingest_duration_seconds", Help: "Time from reading a delivery to answering it, by provider and outcome.", Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}}, []string{"provider", "outcome"})),
		CommitBatch:           registered(reg, prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hub_commit_batch_deliveries", Help: "Deliveries per group-commit transaction.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}})),
		Published:             registered(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hub_publish_total", Help: "Outbox publishes to JetStream, by outcome."}, []string{"outcome"})),
		PublishLagSecond:      registered(reg, prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hub_publish_lag_seconds", Help: "Time from receiving an event to JetStream acknowledging it.", Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30, 120, 600}})),
		OutboxPending:         registered(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "hub_outbox_pending", Help: "Committed events not yet acknowledged by JetStream (PENDING rows)."})),
		OutboxOldest:          registered(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "hub_outbox_oldest_pending_seconds", Help: "Age of the oldest PENDING row; 0 when the outbox is empty."})),
		NATSConnected:         registered(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "hub_nats_connected", Help: "1 while the hub's NATS connection is up."})),
		BodyBytes:             registered(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "hub_http_body_bytes", Help: "Bytes reserved for webhook request bodies being received and handled; at most HUB_MAX_INFLIGHT x HUB_MAX_BODY_BYTES, past which deliveries are answered 503."})),
		ConnsRejected:         registered(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "hub_http_connections_rejected_total", Help: "Connections to the webhook listener answered 503 and closed because HUB_MAX_CONNS were open."})),
		AdminConnsRejected:    registered(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "hub_admin_connections_rejected_total", Help: "Connections to the admin listener (HUB_ADMIN_ADDR) answered 503 and closed because HUB_ADMIN_MAX_CONNS were open, or a quarter of them from its remote address."})),
		AdminUnauthorized:     registered(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "hub_admin_unauthorized_total", Help: "Admin API requests answered 401: no bearer token or a wrong one (not recorded in the audit trail)."})),
		StreamPresent:         registered(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "hub_stream_present", Help: "1 while the hub's JetStream stream exists with this hub's subjects; 0 while it is missing, lacks some or shares them with another stream (and before the first check)."})),
		StreamLost:            registered(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "hub_stream_lost_total", Help: "Times this hub found its stream deleted or replaced by a new one (it recreates the stream and restores what it held)."})),
		StreamRestored:        registered(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "hub_stream_restored_events_total", Help: "Events a lost stream held that this hub re-queued for publishing to the recreated stream."})),
		StreamSettingBroken:   registered(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hub_stream_setting_broken", Help: "1 while a setting of the hub's stream breaks delivery or dedup (sealed, subject_transform, retention, ...; /readyz says \"misconfigured\"), by setting; 0 otherwise."}, []string{"setting"})),
		BackfillMissing:       registered(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hub_backfill_missing_total", Help: "Events a provider's API listed that the hub had not received as webhooks (found by a backfill, dry runs included): each means a webhook was lost."}, []string{"provider"})),
		BackfillIngested:      registered(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hub_backfill_ingested_total", Help: "Missing events a backfill ingested from a provider's API (origin api)."}, []string{"provider"})),
		BackfillRuns:          registered(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hub_backfill_runs_total", Help: "Backfill runs, by provider and outcome (ok, partial, error, bounded, skipped)."}, []string{"provider", "outcome"})),
		BackfillLastSuccess:   registered(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hub_backfill_last_success_timestamp_seconds", Help: "Unix time of the last backfill run that listed its whole window, by provider; until one has, when hub serve's periodic backfill started."}, []string{"provider"})),
		BackfillFailed:        registered(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hub_backfill_failed_total", Help: "Missing events a backfill could not ingest or redeliver (malformed in the API's answer, no usable id, too large, fetch failed); each is logged with its id and reason."}, []string{"provider"})),
		BackfillAbandoned:     registered(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hub_backfill_abandoned_total", Help: "Unfinished backfill runs a periodic run gave up after continuing them the most times allowed, to start over on the current window (the old window's unchecked part is logged)."}, []string{"provider"})),
		BackfillInterval:      registered(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hub_backfill_interval_seconds", Help: "How often hub serve backfills the provider (HUB_BACKFILL_INTERVAL); absent when it does not."}, []string{"provider"})),
		ConsoleOIDCDiscovered: registered(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hub_console_oidc_discovered", Help: "1 once the console has read its OpenID Connect provider's discovery document, 0 while the provider cannot be reached (OIDC sign-in answers 503; token sign-in works), by issuer; absent without HUB_CONSOLE_OIDC_ISSUER."}, []string{"issuer"})),
		AdmissionRefused:      admissionRefused(reg),
	}
}

// registered registers c on reg and returns it.
func registered[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	reg.MustRegister(c)
	return c
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
