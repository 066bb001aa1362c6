// Package relay publishes the outbox to JetStream: every committed first
// delivery (a PENDING archive row) becomes exactly one message on the
// stream, and the row becomes PROCESSED only after JetStream's PubAck.
//
// The relay is the only publisher. The HTTP handler commits and then wakes
// it (Notify), so a delivery is usually on the stream within milliseconds;
// a timer and a NATS reconnect wake it too, so rows left by a crash, a NATS
// outage or another replica are published without help. Rows are claimed
// with FOR UPDATE SKIP LOCKED, so several hub replicas share the work.
//
// Message ids are "<provider>:<event_id>", so a publish repeated after a
// lost PubAck is dropped by JetStream inside the duplicate window. Retries
// back off, capped well inside the window; a row whose first attempt is
// older than half the window is looked up in the stream before it is
// published again, so an ack lost across a long NATS outage never stores
// the event twice.
//
// The Keeper keeps the stream: it checks it every few seconds (and when a
// publish fails as if it were gone), creates it when missing, merges this
// hub's subjects into it without removing another replica's, and when the
// stream it knew is gone (deleted, or replaced by another of the same
// name) recreates it and re-queues, through the outbox, every event the
// lost stream had acknowledged, under its original message id. Its state
// (ok, missing, incomplete, restoring) feeds /readyz.
package relay
