// Package chaos proves the hub's promise under faults: it starts a local
// topology (a Postgres primary and standby, a JetStream cluster, hubs
// behind a load balancer), injects faults under load and checks that
// every acknowledged event is archived, on the stream once and processed
// once.
package chaos
