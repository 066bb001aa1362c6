// Package destination delivers the hub's events to HTTP endpoints, so a
// subscriber can be written in any language: each destination is a
// subscriber (subscribers/subscriber) whose handler POSTs the event,
// signed with Standard Webhooks (standardwebhooks.com), to a URL declared
// in a destinations file. Delivery is at least once with a stable
// webhook-id, the hub's "<provider>:<event_id>": the receiver deduplicates
// on it. See docs/destinations.md.
//
// Destinations are declared in a destinations file (Parse, Load): YAML,
// or JSON, with a list under "destinations:" of entries naming a URL,
// subject filters, the environment variables holding the signing secrets
// and optional limits (Spec). Unknown fields are errors, and every
// problem is reported at once, naming the destination and the field.
//
// Everything an endpoint answers (the snippet, an error) passes through
// the destination's redact.Redactor (Destination.Redactor) in the Client,
// and the attempt log redacts again on write and on read, so no
// credential the destination holds or sends reaches the log.
//
// # Files
//
//   - config.go: the destinations file (Spec, Destination, Parse, Load).
//   - configdecode.go: its decoding, field by field, every error in the
//     file's words.
//   - configcheck.go: the rules that protect the hub (ReservedNames, the
//     link-local refusal, also at connect time: dialControl), the start
//     (ParseStart, Receives) and the destination's Redactor.
//   - sign.go: Standard Webhooks secrets and signatures.
//   - envelope.go: the body sent (the envelope, or the provider's bytes).
//   - send.go: one bounded HTTP attempt (Client, Result).
//   - policy.go, circuit.go: the retry delays and horizon; the circuit
//     breaker.
//   - park.go, parkrun.go: waiting events parked out of the stream, and
//     their scheduler; send, the one HTTP attempt (concurrency slots, then
//     the rate limit).
//   - destination.go: the Runner, one destination's subscriber.
//   - service.go: the Service, a file's destinations in one process, with
//     reload; readiness.go: each destination's readiness (/readyz,
//     hookhub_destination_ready).
//   - state.go, tables.go, inspect.go: the destination's own tables
//     (migrations, registration, status); the state, the attempt log and
//     the parked events' keys are read and written through deststate,
//     which hub/ops uses without this runtime.
//   - metrics.go: the hookhub_destination_* metrics.
//
// # One event
//
// A Runner is a subscriber whose workers pass a gate (Config.Admit)
// before they take a message: the destination must be active (not paused
// or disabled, as its state row in Postgres says, read every
// StatePollInterval) and its circuit must let the worker through (one
// probe at a time while open). The rate limit is taken by send, once a
// worker holds a message, right before its request (an idle worker
// holding a token would let a burst through). The handler (an effect: subscriber.Subscriber.HandleEffect, outside any
// transaction) then builds the body and headers, POSTs once, and:
//
//   - on 2xx returns the attempt as delivered: the library writes it in
//     the transaction that records the event as processed, one
//     transaction and one INSERT (deststate.RecordAttempts) for a batch of events,
//     then acks them;
//   - on 410 disables the destination (until `hub destinations resume`)
//     and asks for the message again later (subscriber.RetryAfter), so
//     nothing is dead-lettered for it;
//   - otherwise records the failed attempt (on the pool) and, within
//     the horizon (retry_for, counted from the first attempt since the
//     event's last delivery or dead letter), retries after Policy.Delay
//     (Retry-After honoured up to max_retry_after), at most the circuit's
//     longest cooldown while the circuit is open, and never past the
//     horizon (Policy.Until); past the horizon it returns a permanent
//     error and the library dead-letters the event.
//
// A retry due within MaxHeldRetry waits unacknowledged in the stream
// (subscriber.RetryAfter); the consumer's MaxAckPending (MaxWaitingRetries)
// leaves room for many of them. A later one is parked: the handler returns
// a parked record, which the library writes (into <name>.parked) in the
// transaction that records the event as processed, then acks the message;
// a parked event holds no place of the window, however long it waits. The
// runner's scheduler (watchParked) claims the due ones with a lease, sends
// them and deletes each delivered one with its attempt in one transaction,
// parks it again after a failure, or dead-letters it at the horizon
// (subscriber.DeadLetterKept, which also deletes its processed row, so a
// redrive delivers it). A crash mid-send leaves the row to be taken again
// when its lease ends: at least once, same webhook-id. deststate.RetryNow ends every
// wait; a recovery (the circuit closing) ends the waits that were the
// hub's own backoff.
//
// An ordered destination has one worker and a MaxAckPending of one: a
// failed event is retried before any later one is sent. While it has
// parked events, a new event is parked behind them unsent, and the
// scheduler sends only the head (the first parked) and only when it is
// due: the order holds, and the stream keeps flowing.
//
// The HTTP call cannot join the transaction: a crash between the
// receiver's answer and the commit sends the event again, with the same
// webhook-id, as does a batch whose commit fails, or two copies of an
// event (a re-publication) handled at the same time. `hub replay` copies
// are sent again even when the event was delivered
// (subscriber.Config.ResendReplays).
package destination
