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
package relay
