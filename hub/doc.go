// Package hub holds hookhub's domain: what a verified delivery is, what
// becomes of it (Status, Outcome), and what the outbox publishes (OutboxRow,
// PublishResult), and the codes of its errors (Error, ErrorCode). The
// adapters (hub/store for Postgres, hub/relay for JetStream, hub/server and
// hub/admin for HTTP) speak in these types; none of them owns them.
//
// It owns the one ingest path (ingest.go): a verified event (Event), a
// webhook's or one read from a provider's API, becomes a Delivery by
// NewDelivery, its id and type checked by the one rule (CheckText, within
// MaxEventIDLen and MaxEventTypeLen), and is committed through an Ingest,
// which hands each committed, publishable delivery to the relay.
//
// # Package map
//
// Every package of the module, by path from the module root, with what it
// provides (TestPackageMapIsComplete keeps this list equal to `go list
// ./...`). docs/where-to-work.md says which of them a change starts in.
// Imports run one way (TestImportsRunOneWay, tests included): internal/
// imports nothing of hub/ or migrations, the subscriber side nothing of
// hub/, schema neither.
//
// The hub, from the request to the stream:
//
//   - hub: the domain (this package): Delivery, Status, Outcome, OutboxRow, PublishResult, the backfill checkpoint, error codes.
//   - hub/server: the webhook listener (fiber): POST /webhooks/{provider}, /healthz, /readyz, its limits and its answers to refused deliveries.
//   - hub/provider: signature verification and event extraction, one file per provider, and the provider registry.
//   - hub/provider/internal/derive: identifiers that look real but depend only on a seed (sample ids, Shopify's event id).
//   - hub/provider/samples: realistic signed deliveries per provider, for `hub send`, the bench and the tests.
//   - hub/store: the Postgres adapter, the only code that reads or writes the hub's tables (ingest, group commit, outbox, operators' queries).
//   - hub/relay: the publishes of the outbox to JetStream: the fast path, the claiming relay, republished copies, the stream look-up (a replay's copies, for one subscriber, are published by hub/ops).
//   - hub/metrics: the hub's Prometheus metrics.
//
// Around it:
//
//   - hub/backfill: lists a provider's events through its API and ingests those whose webhooks never arrived.
//   - hub/backfill/fakeapi: local fakes of the providers' event APIs, for backfill's tests.
//   - hub/ops: the operator's tools behind the CLI, /admin/ and the console: events, replay, republish, dlq, purge, status, reconcile.
//   - hub/ops/opstest: the cases every operator face (admin API, console, CLI) decodes alike, shared by their tests.
//   - hub/admin: operator HTTP: the admin API under /admin/, the console it mounts, /metrics, pprof, the admin listener and its limits.
//   - hub/console: the operator web console under /console/ (server-rendered pages, sessions, CSRF).
//   - hub/internal/hubhttp: what both HTTP listeners share: the one table of error codes (hub.ErrorCode) to statuses, connection and body limits, panic recovery.
//   - hub/bench: `hub bench`: the whole path measured end to end against batching disabled and the raw ceiling; `hub bench destinations`: the destinations process.
//   - hub/chaos: `hub chaos`: the failover proof: signed load retried as providers retry, faults (a hub, the Postgres primary, a JetStream node killed; partitions through its proxies), and the check that every acknowledged event is archived, on the stream once and processed once; a local topology of a Postgres primary and standby, three JetStream nodes and hubs behind a load balancer.
//   - hub/service: wiring, configuration (HUB_*), startup in order and graceful shutdown.
//   - hub/service/testhub: a whole hub in-process for a test: the one way a test runs a hub.
//   - hub/internal/hubdb: a test's database with the hub's schema (a copy of a migrated template) and a role with its run-time privileges.
//   - hub/cmd/hub: the hub command: serve, dev, migrate, send, the operator commands, bench, chaos, version.
//
// The contract, the schema, and the subscriber side:
//
//   - schema: the hub ↔ subscriber contract: subjects, headers, payload types, JSON Schemas.
//   - migrations: the hub's SQL migrations (v0.1.0's schema and the additive ones after it, docs/migrations.md), embedded in the hub binary only.
//   - subscribers: the subscriber side's overview (library, example services, process runner).
//   - subscribers/subscriber: the subscriber library: durable consumer, idempotency, dead letters, replay subjects.
//   - subscribers/service: runs a subscriber service as a process (config, logging, connections, health, signals).
//   - subscribers/credits: the credits subscriber (a ledger row per Paddle subscription.created).
//   - subscribers/credits/cmd/credits: the credits command.
//   - subscribers/downgrade: the downgrade subscriber (a Paddle subscription's plan, "free" on cancel).
//   - subscribers/downgrade/cmd/downgrade: the downgrade command.
//   - subscribers/destination: destinations: events POSTed to HTTP endpoints, signed with Standard Webhooks.
//   - subscribers/destination/cmd/destinations: the destinations command (a file's destinations in one process).
//   - subscribers/destination/deststate: a destination's tables (state, attempt log, parked keys), read and written without the runtime: hub/ops reads destinations through it.
//   - subscribers/destination/internal/receivertest: HTTP receivers for the destination tests (Node with the official libraries, and Go).
//   - subscribers/email: the email subscriber (welcome and cancellation emails through an SMTP outbox).
//   - subscribers/email/cmd/email: the email command.
//   - subscribers/internal/subtest: the subscriber tests' real Postgres and JetStream, and hub-shaped messages.
//
// Shared infrastructure (internal/, importable only inside the module):
//
//   - internal/backoff: the one backoff of retries that double up to a cap.
//   - internal/buildinfo: the version `hub version` prints and the HTTP clients' User-Agent.
//   - internal/hubtest: a fresh Postgres database and an embedded JetStream server per test.
//   - internal/jsontext: reads the shape of JSON text without decoding it:
//     the one JSON scanner (hub/provider reads a body's members with it,
//     hub/store weighs a payload with it: Values).
//   - internal/logging: the slog logger of every hookhub program, from LOG_LEVEL and LOG_FORMAT.
//   - internal/loopback: whether a host names this machine (plain http:// allowed, `hub dev` record trusted).
//   - internal/migrate: the Migrator (goose over pgx under an advisory lock) of the hub's and the subscribers' embedded migrations; embeds no SQL.
//   - internal/natsembed: the embedded nats-server of `hub dev` and the tests.
//   - internal/outbound: the one outbound HTTP client constructor (timeouts, redirect policy, body and header caps) and Retry-After parser, of the backfill's provider APIs and the destinations.
//   - internal/pgurl: edits Postgres URLs (databases next to a configured one) and hides their passwords.
//   - internal/redact: hides credentials in text the hub did not write itself (API answers, errors); a Redactor does it for one party (a destination: its configured values, signatures, URL query and path tokens).
//     Terminal, the one writer every CLI output and log line passes through, escapes what could drive a terminal.
//   - internal/startstop: the one lifecycle contract of background components (start with a context, stop idempotent).
//   - internal/tracing: OpenTelemetry setup for the hub and the subscribers (off by default).
package hub
