// Package relay publishes the outbox to JetStream: every committed first
// delivery (an event PENDING in the outbox, its dedup row's next_attempt_at
// set) becomes exactly one message on the stream, and the event becomes
// PROCESSED only after JetStream's PubAck, recorded on its dedup row (the
// archive row is never rewritten).
//
// Who publishes, all through one code path (Relay.send builds each message
// with message and publishes it asynchronously; Relay.settle turns the
// PubAcks into hub.PublishResults; Outbox.RecordPublished records them):
//   - the fast path: the HTTP handler, once Postgres committed a first
//     delivery, hands it over in memory (Enqueue, which never blocks), and
//     the fast path publishes it within milliseconds, without reading it
//     back. A delivery it cannot take (its queue is full) or holds too
//     long is left to the claiming relay;
//   - the claiming relay: it leases due events from the outbox
//     (Outbox.Claim: FOR UPDATE SKIP LOCKED, then a lease, so several hub
//     replicas share the work), publishes them outside any transaction and
//     records the results. New events are left to the fast path of the
//     process that committed them for a grace period; a timer, a NATS
//     reconnect (NATSUp) and the Keeper wake the relay, so events left by
//     a crash, a NATS outage or another replica are published without
//     help;
//   - `hub republish` (Republish): copies of archived events under their
//     own message ids, recorded nowhere.
//
// The relay owns the timing rule between the first two: Config.Grace. New
// has the outbox hold every row committed from then on for the grace
// (Outbox.HoldNew), and the fast path publishes no row older than the grace
// less a fifth (fast.go says why no row is then stored twice).
//
// Message ids are "<provider>:<event_id>", so a publish repeated after a
// lost PubAck is dropped by JetStream inside the duplicate window. Retries
// back off, capped well inside the window; an event whose first attempt is
// older than half the window is looked up in the stream before it is
// published again, so an ack lost across a long NATS outage never stores
// the event twice.
//
// Relay and Keeper follow the hub's lifecycle contract
// (internal/startstop): Start launches their loops (the relay's
// Config.Workers fast-path pipelines and its claiming loop; the keeper's
// checks, after a first one), Stop ends them and waits; the relay's Stop
// then drains the outbox within its context.
//
// The Keeper keeps the stream: it checks it every few seconds (and when a
// publish fails as if it were gone), creates it when missing, merges this
// hub's subjects into it without removing another replica's, and when the
// stream it knew is gone (deleted, or replaced by another of the same
// name) recreates it and re-queues, through the outbox, every event the
// lost stream had acknowledged, under its original message id. It also
// checks the stream's settings that divert or stall publishing or break
// dedup (StreamFaults: sealed, a subject transform, no acks, ...), changes
// none of them, and holds publishing while a subject transform would
// store events where no subscriber looks. Its state (ok, missing,
// incomplete, conflict, misconfigured, restoring) feeds /readyz.
//
// Scan is the hub's one way to read a range of the stream (the relay's
// look-up of earlier attempts, the keeper's restore, and hub/ops' replay
// and reconcile): it ends at the stream's last sequence when it started,
// or where the server says nothing matching is left, never because nothing
// arrived for a while, and fails with a *ScanError naming the sequence it
// reached when the stream stalls or is deleted.
//
// The files, by concern:
//   - config.go: Config, its defaults (the grace among them) and Validate;
//   - relay.go: the Relay, the Outbox it needs, Start, Stop and NATSUp;
//   - fast.go: the fast path (Enqueue, the send/settle/record pipeline,
//     recordFast's gathering of marks);
//   - claim.go: the claiming relay (its loop, Drain, the claim passes);
//   - publish.go: the one publish path (send, settle, message, backoff,
//     failures) and Republish;
//   - lookup.go: the look-up in the stream of rows whose earlier attempt
//     the duplicate window may have forgotten;
//   - barrier.go: the record barrier a restore waits on;
//   - keeper.go, stream.go, settings.go: the Keeper, creating and merging
//     the stream, and the settings it checks;
//   - scan.go: Scan, the one stream scanner;
//   - tracing.go: the publish spans.
package relay
