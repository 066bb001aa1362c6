// Package relay publishes the outbox to JetStream: every committed first
// delivery (an event PENDING in the outbox, its dedup row's next_attempt_at
// set) becomes exactly one message on the stream, and the event becomes
// PROCESSED only after JetStream's PubAck, recorded on its dedup row (the
// archive row is never rewritten).
//
// Who publishes, all through one code path (Relay.send builds each message
// with message and publishes it asynchronously; Relay.settle turns the
// PubAcks into hub.PublishResults; Outbox.RecordPublished records them):
//   - the fast path (RunFast): the HTTP handler, once Postgres committed a
//     first delivery, hands it over in memory (Enqueue, which never
//     blocks), and the fast path publishes it within milliseconds, without
//     reading it back. A delivery it cannot take (its queue is full) or
//     holds too long is left to the claiming relay;
//   - the claiming relay (Run): it leases due events from the outbox
//     (Outbox.Claim: FOR UPDATE SKIP LOCKED, then a lease, so several hub
//     replicas share the work), publishes them outside any transaction and
//     records the results. New events are left to the fast path of the
//     process that committed them for a grace period; a timer, a NATS
//     reconnect (Reconnected) and Notify wake the relay, so events left by
//     a crash, a NATS outage or another replica are published without
//     help;
//   - `hub republish` (Republish): copies of archived events under their
//     own message ids, recorded nowhere.
//
// Message ids are "<provider>:<event_id>", so a publish repeated after a
// lost PubAck is dropped by JetStream inside the duplicate window. Retries
// back off, capped well inside the window; an event whose first attempt is
// older than half the window is looked up in the stream before it is
// published again, so an ack lost across a long NATS outage never stores
// the event twice (see RunFast for the fast path's part of that argument).
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
package relay
