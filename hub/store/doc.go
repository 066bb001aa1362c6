// Package store is the hub's Postgres adapter: it archives and deduplicates
// verified deliveries in one transaction (Ingest), and serves the outbox
// relay the committed events that JetStream has not acknowledged yet
// (Claim).
//
// The two tables are described in migrations/. The dedup table's id is the
// archive id of an event's first delivery, which links the two.
package store
