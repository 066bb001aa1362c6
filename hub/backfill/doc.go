// Package backfill closes the gap providers leave when they stop retrying a
// webhook (Stripe after 3 days, Paddle after its retry schedule, GitHub
// never): it lists a provider's events through its API, finds those the hub
// never received (no row in processed_webhook_events), and ingests them
// through the webhook's own statement (hub/store's Ingest: archive row,
// dedup row and outbox entry in one transaction), with origin "api" and no
// signature header. A webhook of such an event arriving later is answered
// as a duplicate (idempotent: true), and the stream gets each event once.
//
// A Source lists one provider's events (source.go: the interface shared
// with the GitHub source; api.go: its HTTP client, retrying 429 and 5xx
// with Retry-After honoured, and what the source's retry rule says is a
// rate limit). Sources (registry.go) registers each source, one line: its
// provider, its settings (credentials, API base URL, ...) and how to build
// it; the hub derives its configuration variables from it, and passes the
// names it gives the settings for the sources' errors (Names): the package
// reads no environment. Stripe (GET /v1/events, created[gte|lt],
// starting_after, has_more) and Paddle (GET /events, after, order_by
// id[DESC], meta.pagination; no time filter, so the window is applied
// here) archive the event object's bytes as the API returned them; their
// id, type and time are extracted by hub/provider's own code
// (provider.StripeEvent, provider.PaddleEvent), so the dedup key of a
// backfilled event is the one its webhook would have. ParseStripeList and
// ParsePaddleList read the untrusted answers (fuzzed).
//
// GitHub (github.go) lists a webhook's deliveries (GET {hook}/deliveries,
// cursor paging through the Link header): one event per
// X-GitHub-Delivery guid, without bodies, so it is a Fetcher (GET
// {hook}/deliveries/{id}: the payload as GitHub's API re-encodes it, with
// the type read by provider.GitHubEvent, the GitHub verifier's own
// code). Its events carry no Hub-Occurred-At, as GitHub's webhooks carry none
// (Event.OccurredAtAPIOnly: the delivery time only places them in the
// window). It is also a Redeliverer (POST .../attempts): with
// Request.Redeliver (`hub backfill --redeliver`) the engine asks GitHub to
// send each missing webhook again, signed and with its original bytes,
// instead of ingesting the API's copy; such a run fetches and ingests
// nothing and counts the events redelivered. GitHub answers its rate
// limits with 403 or 429 and x-ratelimit-*/Retry-After headers: its retry
// rule (githubRateLimit) tells the shared client how long to wait them out.
//
// The Engine runs a window: page by page, one batched look-up of the page's
// ids in the dedup table, bodies fetched for a Fetcher (GitHub), the
// missing events ingested in one transaction, then the provider's
// checkpoint saved (table backfill_checkpoints: window, cursor, counts, and
// a lease so two hubs never backfill one provider at once). An interrupted
// run is continued from the page after the last one saved; a page ingested
// but not saved is listed again and its events are then present, so
// nothing is ingested twice. RateLimited bounds the API requests a second.
//
// Bounds (DESIGN invariant 9). A run reads at most Config.MaxPages pages,
// Config.MaxEvents events and runs Config.MaxRunTime at most (ErrBound),
// stops at a cursor it has already read (ErrCursorCycle) and at a page
// older than its window; what it ingested is saved, and the next run
// continues. Periodic runs continue an unfinished run at most
// Request.MaxResumes times, then start over on their window, logging
// what they leave unchecked. A malformed item is counted failed with its
// id and skipped (Event.Invalid), never failing its page. A run renews its
// lease while it works, so a dead run's lapses within Config.Lease.
//
// Who publishes. Ingested events are PENDING outbox rows; the relay
// (hub/relay), the one publisher, publishes them:
//   - in `hub serve` (HUB_BACKFILL_INTERVAL) the engine commits through
//     hub.Ingest, which hands each committed, publishable event to the
//     relay's fast path (Config.Relay), exactly as for a webhook;
//   - `hub backfill` (the command) publishes nothing itself: it commits
//     through a store without relay grace, so its rows are due at once, and
//     the running hubs' claiming relays publish them at their next poll (1 s).
//     The command thus needs no NATS connection, works while NATS is down
//     (the rows wait in the outbox like any accepted webhook), and adds no
//     second publisher whose retries, duplicate-window look-ups and stream
//     restores would have to agree with the hubs'. Without a running hub
//     the events wait in the outbox (`hub status` shows them) until one
//     starts.
//
// Metrics (hub/metrics): hub_backfill_missing_total{provider} (every
// missing event found means a webhook was lost: alert
// HookhubBackfillFoundMissing), hub_backfill_ingested_total{provider},
// hub_backfill_failed_total{provider}, hub_backfill_abandoned_total{provider},
// hub_backfill_runs_total{provider,outcome} (ok, partial, error, bounded,
// skipped), hub_backfill_last_success_timestamp_seconds{provider} (alerts
// HookhubBackfillStale, HookhubBackfillFailing).
//
// Package fakeapi has local fake provider APIs for tests.
package backfill
