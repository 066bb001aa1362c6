// Package ops implements the operator's tools on top of the archive, the
// stream and the subscribers' own tables: forensics (events list and
// show), safe replay to one subscriber, republishing archived events,
// dead letters, retention and status. The `hub` command line and the admin
// HTTP API are thin layers over it, so both behave the same.
//
// Ops owns no table. It reads and purges the hub's tables through the
// store (Archive: hub/store, their only owner), the subscribers' tables
// through the subscriber library's functions, a destination's through
// deststate (never the destination runtime), and publishes republished
// copies through the hub's publisher (Republisher: hub/relay), so that a
// copy is built by the same code as the original message.
//
// Every action (replay, republish, redrive, purge, destination pause and
// resume, bulk actions; not dry runs) is recorded in the audit trail with
// the actor its context carries (hub.WithActor): written through the
// store (Config.Audit) before the action changes anything, kept alive by a
// heartbeat while it runs, and finished with its outcome and result
// (audit.go); a refusal is finished as refused. Ops is the trail's only
// writer: callers record what Ops does not run itself (a backfill run, a
// migration) through RunAudited, and their own refusals through Refuse;
// ListAudit reads it.
//
// Every operation is safe to repeat: replays and republishes reach
// subscribers whose idempotency skips what they already processed, and a
// purge never touches the dedup table.
//
// Every read of a range of the stream (replay, its dry run, reconcile)
// goes through relay.Scan: it covers the whole range or fails with
// ErrIncompleteRead, never answering success for a part of it. Every
// expensive operation is admitted by its cost (admission.go), in one of
// two pools: reads (plans, dry runs, payload filters, audit exports,
// charts: Config.ReadBudget) and actions (replays and bulk actions:
// Config.MaxConcurrentReplays running at once, Config.MaxReplayBytesHeld
// of messages held together); past a budget, ErrBusy (a *BusyError with
// its Retry-After), counted in hub_admission_refused_total. Each run is
// bounded by MaxReplayEvents and MaxReplayBytes.
package ops
