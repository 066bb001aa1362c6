// Package subscriber is the library hookhub's subscriber services are built
// on. It consumes the hub's JetStream stream with a durable pull consumer
// and runs a handler for each event inside a Postgres transaction that also
// records the event as processed, so that at-least-once delivery becomes
// one side effect per event.
//
// A subscriber is a name, handlers and migrations:
//
//	sub, err := subscriber.New(subscriber.Config{Name: "credits", Pool: pool, JetStream: js, Migrations: credits.Migrations})
//	sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
//		_, s, err := ev.PaddleSubscription()
//		if err != nil {
//			return err
//		}
//		_, err = tx.Exec(ctx, `INSERT INTO credits.ledger ...`, s.CustomerID, ev.EventID)
//		return err
//	})
//	err = sub.Run(ctx) // until ctx is cancelled
//
// # Names, schema and tables
//
// Config.Name is the durable consumer's name and the Postgres schema the
// subscriber owns. Run creates the schema and applies, each under its own
// advisory lock (several replicas may start at once):
//
//   - the library's tables, versioned in <name>.subscriber_schema_version:
//     processed_messages (subscriber, provider, event_id, subject,
//     stream_seq, processed_at, outcome), dead_letters, entity_versions
//     and handler_attempts (crash-loop detection);
//   - the service's own goose migrations (Config.Migrations), versioned in
//     <name>.schema_version by migrate.ForSchema.
//
// # The consumer
//
// Run creates or updates the durable consumer: filter subjects = the
// subjects handlers are registered for (they must not overlap, JetStream
// rejects that) and their replay companions (Filters: a leading wildcard,
// "*.>", is spelled out over the stream's providers so that it matches no
// replay subject), Config.Start when it is created (the whole history by
// default; an existing consumer keeps its position; operators can rewind
// it with a consumer reset), AckExplicit, AckWait and a bounded MaxAckPending. It pulls at
// most Concurrency messages ahead and hands them to Concurrency workers.
//
// The consumer's server-side MaxDeliver is unlimited, on purpose: the
// library counts attempts itself (the delivery count JetStream reports) and
// dead-letters a message whose handler fails for the MaxDeliver-th time.
// With a server-side limit, a message whose last attempt could not be
// dead-lettered (Postgres down at that moment) or was cut short (a crash)
// would silently never be delivered again. Redelivery delays come from
// NakWithDelay(Backoff[attempt-1]), not from the consumer's BackOff, which
// applies to ack timeouts only.
//
// If the durable consumer disappears (deleted, or the stream deleted and
// created again), Run recreates it and goes on; meanwhile Healthy reports
// "no consumer" and the gauge hookhub_subscriber_consumer_up is 0.
//
// # One message
//
//  0. A subject delete marker the NATS server wrote (schema.IsServerMarker:
//     the header Nats-Marker-Reason, with the stream's
//     SubjectDeleteMarkerTTL) is not an event: ack, count
//     skipped_server_markers, log at debug. No handler, no dead letter.
//  1. BEGIN; INSERT INTO <name>.processed_messages ... ON CONFLICT
//     (subscriber, provider, event_id) DO NOTHING.
//  2. If the row existed, the event was processed before (a redelivery, a
//     re-publication under a new Nats-Msg-Id, a consumer reset, a replay
//     copy): COMMIT, ack, count skipped_duplicate. The handler is not
//     called. Except with Config.ResendReplays, for a copy `hub replay`
//     made for this subscriber (on its private replay subject; every such
//     copy has Event.Replayed set, whatever the setting): the handler is
//     called again, as in 3 (the row is kept as it is, a failure retried
//     as in 4), and the message counted as resent.
//  3. Otherwise call the handler with the transaction (inside a savepoint)
//     and the Event; COMMIT; then ack.
//  4. Handler error, panic or runtime.Goexit (the handler runs on a
//     goroutine of its own, which recovers; the panic is logged once with
//     its stack; the error's methods are called once, recovered too, and
//     only its text is kept: a typed nil or an Error that panics is a
//     failure with a fixed text, see SafeCall and ErrorText; errors.Is
//     and errors.As look at most 100 errors of its chain, a method that
//     does not return within 5 s is not called again for that error, and
//     past 100 such calls still running none is started): ROLLBACK and
//     NakWithDelay(Backoff[attempt-1]), never a
//     bare Nak. A handler error wrapping a *RetryError (RetryAfter) is
//     naked with its own delay instead (at most MaxRetryAfter, read once
//     with the rest of the error) and is never dead-lettered for
//     MaxDeliver: the handler decides when to give up, with Permanent; the
//     crash-loop count below still applies, and on a redrive it is a
//     failed redrive like any error. At attempt MaxDeliver, or at once for
//     a Permanent error (an undecodable payload, missing hub headers, a
//     provider or event id holding NUL bytes or invalid UTF-8; Permanent
//     wins over a RetryError it wraps or is wrapped by), the message goes to
//     <name>.dead_letters with its headers, exact body, error and attempt
//     count, and is terminated (TermWithReason); other messages keep
//     flowing.
//  5. While the handler runs, InProgress is sent every AckWait/3, so a slow
//     handler does not get its message redelivered to another worker.
//
// Before taking each message a worker calls Config.Admit, when set (with
// a context cancelled when Run stops; recovered: a panic is logged with
// its stack and counts as an error). An error means "not now": the worker
// waits (100ms, doubling up to 5s) and asks again; it never takes a
// message without a nil Admit. While every worker waits in Admit no
// message is handled, which is how a service pauses, rate-limits, or lets
// one message through at a time. Messages already pulled wait meanwhile;
// past AckWait JetStream delivers them again (their delivery count grows,
// which MaxDeliver counts: handlers of such services retry with
// RetryAfter), and the copy handled second is skipped as a duplicate.
//
// # Effects outside the database
//
// A service whose work is a side effect outside the database (an HTTP
// call: a destination) registers an EffectFunc with HandleEffect instead
// of a handler. Its events are not handled in a transaction, and the
// library records many of them as processed in one (group commit), which
// costs Postgres far less per event than a transaction each:
//
//  1. Skip if processed: one SELECT on processed_messages (on a
//     redelivery, the crash-loop count's statement below answers it),
//     ack, count skipped_duplicate. The workers' questions go to one
//     group reader, which asks once for the questions that come within
//     2 ms of the first (no wait once every worker has asked, nor with
//     one worker): a read serves several events at a moderate rate and
//     every worker in a backlog. A replay copy with
//     Config.ResendReplays is not skipped (counted as resent).
//  2. Call the effect (recovered, with HandlerTimeout, its error read as
//     a handler's). An error follows step 4 of One message exactly
//     (RetryAfter, Permanent, MaxDeliver, crash loops); ErrStale records
//     the event as skipped_stale.
//  3. On success the event and the record the effect returned go to the
//     subscriber's committer, and the worker takes its next message. The
//     committer collects up to 64 events, waiting at most 20 ms after
//     the first (not at all with one worker and none queued: an ordered
//     subscriber; the wait delays the ack, not the effect), then in one
//     transaction inserts
//     their processed rows (ON CONFLICT DO NOTHING), clears their
//     crash-loop counts and hands the records to Config.RecordBatch
//     (one multi-row INSERT for the batch); COMMIT; then each message is
//     acked (DoubleAck) and counted processed. A failed batch (Postgres,
//     or RecordBatch's error or panic) naks each of its messages with the
//     backoff, counted as failed but never dead-lettered for it: their
//     effects run again.
//
// Effects are at least once: an effect may run again for an event when
// its batch failed, when the process died between the effect and the
// commit, and when two copies of an event (a re-publication) are handled
// at the same time, since neither is recorded yet; the receiver
// deduplicates (a destination's webhook-id). A redrive of a dead letter
// whose subject has an effect calls it and records the event as
// processed and redriven in one transaction, with its record. On
// shutdown the committer writes and acks what is queued before Run
// returns.
//
// # Poison messages
//
// Whatever a message or a handler's error holds, its dead letter can be
// stored: every text the library writes (errors, ids, subject, header
// names and values) goes through SanitizeText, which makes it valid UTF-8
// without NUL bytes (each becomes U+FFFD) and cuts it at a rune boundary
// (errors at 8 KiB); the body is stored exactly (bytea). Services use
// SanitizeText for free text they store and CheckStorable for values
// they must not rewrite (ids), which makes such a message permanent. If
// Postgres still refuses the dead letter for its values (SQLSTATE class
// 22, 23 or 54, e.g. a database whose encoding is not UTF-8), it is stored
// bare: no headers or ids, ASCII text, the exact body. If it cannot be
// stored at all, the message is not terminated (it would be lost): it is
// retried with backoff, counted in hookhub_subscriber_dead_letter_errors_total,
// and reported as stuck by Healthy and hookhub_subscriber_stuck_messages
// until its dead letter is stored.
//
// # Crash loops
//
// A handler that kills the process (os.Exit, a segfault, an OOM kill, a
// panic on a goroutine it started) never reaches a nak or a dead letter,
// and JetStream redelivers its message forever. Delivery counts cannot
// tell this apart from messages merely redelivered (a Postgres outage, a
// shutdown, a message waiting behind slow handlers), so the library
// counts the calls themselves: on a redelivery (and for every redrive) it
// adds one to the event's row in <name>.handler_attempts, in its own
// committed statement, before calling the handler, and takes it back when
// the call returns (on success, in the handler's transaction). First
// deliveries are not counted: no extra write on the fast path. When
// max(MaxDeliver-1, 1) counted calls never returned, the next delivery
// is dead-lettered without calling the handler ("delivered N times
// without settling: ... the handler may crash the process"), and counted
// in hookhub_subscriber_crash_loops_total; a redrive is given up the same
// way. So a handler that kills the process is called MaxDeliver times, as
// one that fails (twice when MaxDeliver is 1).
//
// The ack is a DoubleAck: it waits for the server's confirmation, so a
// graceful shutdown returns only after every ack reached the server, and a
// message counted as done is known to be acked. A lost ack is harmless
// anyway: the redelivery finds the processed row and is skipped. That is
// why a crash at any point neither loses nor duplicates: before COMMIT,
// nothing was written and the message is redelivered after AckWait; after
// COMMIT, the redelivery is skipped.
//
// Handlers must do their side effects through the transaction. Effects
// outside the database (email, HTTP calls) go through an outbox table
// written in the transaction and a sender (see the email service), which
// narrows duplicates to the sender's own crash window.
//
// # Ordering
//
// JetStream keeps the stream's order, but retries, redrives, concurrency
// and providers themselves deliver events late. ApplyIfNewer records the
// provider's occurred-at time per entity and tells a handler whether its
// event is newer than the last one applied; a handler that returns
// ErrStale has its writes undone and the event recorded (and counted) as
// skipped_stale, not failed.
//
// # Dead letters and redrive
//
// ListDeadLetters, GetDeadLetter, RequestRedrive and RequestRedriveAll work
// on any subscriber's tables from any process (the hub's operator CLI), as
// do the inspection functions operators read them with: ListSubscribers,
// ProcessedMessages, DeadLettersOf, LastDeadLetterID and
// CountWaitingDeadLetters. The tables are the library's: nothing else
// reads them.
// A running subscriber picks up requested redrives every RedriveInterval
// (SELECT ... FOR UPDATE SKIP LOCKED, so one replica takes each), processes
// them through the same transaction path (processed row, then handler) and
// marks them redriven_at; a redrive of an event processed meanwhile is a
// skip. A failed redrive records redrive_error (sanitized) and clears the
// request.
//
// A service that keeps an event for later attempts of its own after the
// library recorded it as processed (a destination parks a long retry in
// its own table, written with a RecordBatch record, and the message is
// acked) gives up on it with DeadLetterKept: in the service's
// transaction, the dead letter is stored and the processed row deleted,
// so the event is where a dead-lettered message would be and a redrive
// delivers it.
//
// # Shutdown
//
// When Run's context is cancelled it stops fetching, hands back the
// messages it pulled but did not start (Nak: they did not fail, another
// replica may take them now), stops the workers waiting in Admit (a call
// still running is not waited for), lets the in-flight ones finish, commit and
// be acked within ShutdownTimeout, stops the redrive loop and the
// Background tasks, and returns nil. Past the timeout it cancels the
// handlers' contexts and returns ErrShutdownTimeout; their transactions
// roll back and JetStream redelivers their messages. A Background task
// that panics stops Run with an error, as one that fails does, instead of
// killing the process.
//
// # Metrics and health
//
// Counters hookhub_subscriber_{processed,skipped_duplicate,skipped_stale,
// skipped_server_markers,failed,dead_lettered,redriven,handler_panics,
// crash_loops,dead_letter_errors,resent}_total, the histogram
// hookhub_subscriber_handler_duration_seconds and the gauges
// hookhub_subscriber_{in_flight,stuck_messages,consumer_up,workers_waiting}
// (workers_waiting: workers inside Config.Admit), all labelled
// subscriber, go to Config.Registerer. A handler error, RetryAfter
// included, counts in failed. NewServeMux serves them on /metrics
// with /healthz, which fails (503) while a subscriber is not consuming,
// NATS is disconnected, the consumer is being recreated or a message is
// stuck.
package subscriber
