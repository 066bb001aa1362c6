// Package hub holds hookhub's domain: what a verified delivery is, what
// becomes of it (Status, Outcome), and what the outbox publishes (OutboxRow,
// PublishResult). The adapters (hub/store for Postgres, hub/relay for
// JetStream, hub/server for HTTP) speak in these types; none of them owns
// them.
//
// It owns the one ingest path (ingest.go): a verified event (Event), a
// webhook's or one read from a provider's API, becomes a Delivery by
// NewDelivery, its id and type checked by the one rule (CheckText, within
// MaxEventIDLen and MaxEventTypeLen), and is committed through an Ingest,
// which hands each committed, publishable delivery to the relay.
package hub
