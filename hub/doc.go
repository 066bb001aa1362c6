// Package hub holds hookhub's domain: what a verified delivery is, what
// becomes of it (Status, Outcome), and what the outbox publishes (OutboxRow,
// PublishResult). The adapters (hub/store for Postgres, hub/relay for
// JetStream, hub/server for HTTP) speak in these types; none of them owns
// them.
package hub
