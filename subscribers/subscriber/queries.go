package subscriber

import (
	"strings"

	"github.com/jackc/pgx/v5"
)

// queries are the library's SQL statements, with the subscriber's schema
// filled in.
type queries struct {
	insertProcessed string
	// insertProcessedBatch, processedOf and clearAttemptsBatch serve
	// effects (HandleEffect).
	insertProcessedBatch string
	processedOf          string
	clearAttemptsBatch   string
	markStale            string
	insertDeadLetter     string
	// insertBareDeadLetter is insertDeadLetter's fallback.
	insertBareDeadLetter string
	claimRedrive         string
	markRedriven         string
	markRedriveFailed    string
	applyIfNewer         string
	startAttempt         string
	startAttemptAny      string
	finishAttempt        string
	clearAttempts        string
	// forgetProcessed serves DeadLetterKept.
	forgetProcessed string
}

func newQueries(schemaName string) queries {
	r := strings.NewReplacer("__SCHEMA__", pgx.Identifier{schemaName}.Sanitize())
	return queries{
		insertProcessed: r.Replace(`
INSERT INTO __SCHEMA__.processed_messages
    (subscriber, provider, event_id, subject, stream_seq, processed_at, outcome, dead_letter_id)
VALUES ($1, $2, $3, $4, NULLIF($5::bigint, 0), $6, 'processed', $7)
ON CONFLICT (subscriber, provider, event_id) DO NOTHING`),
		insertProcessedBatch: r.Replace(`
INSERT INTO __SCHEMA__.processed_messages
    (subscriber, provider, event_id, subject, stream_seq, processed_at, outcome)
SELECT $1::text, p, e, s, NULLIF(q, 0), $2::timestamptz, o
FROM unnest($3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[]) AS t(p, e, s, q, o)
ON CONFLICT (subscriber, provider, event_id) DO NOTHING`),
		// processedOf returns the positions (from 1) of the events of a
		// batch that have a processed row: one index probe each (the
		// LATERAL ... LIMIT 1 keeps the planner from hashing the whole
		// table for a few keys).
		processedOf: r.Replace(`
SELECT t.i FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(p, e, i)
CROSS JOIN LATERAL (
    SELECT 1 FROM __SCHEMA__.processed_messages m
    WHERE m.subscriber = $1 AND m.provider = t.p AND m.event_id = t.e
    LIMIT 1) AS found`),
		clearAttemptsBatch: r.Replace(`
DELETE FROM __SCHEMA__.handler_attempts
WHERE (provider, event_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`),
		markStale: r.Replace(`
UPDATE __SCHEMA__.processed_messages SET outcome = 'skipped_stale'
WHERE subscriber = $1 AND provider = $2 AND event_id = $3`),
		// The dead letter also clears the event's crash-loop count, so a
		// redrive starts afresh.
		insertDeadLetter: r.Replace(`
WITH cleared AS (
    DELETE FROM __SCHEMA__.handler_attempts WHERE provider = $2::text AND event_id = $3::text
)
INSERT INTO __SCHEMA__.dead_letters
    (subscriber, provider, event_id, subject, stream_seq, headers, data, error, attempts, created_at)
VALUES ($1, NULLIF($2::text, ''), NULLIF($3::text, ''), $4, NULLIF($5::bigint, 0), $6, $7, $8, $9, $10)
RETURNING id`),
		// The last resort when Postgres refused the dead letter above: no
		// headers or identifiers, ASCII text, the exact body.
		insertBareDeadLetter: r.Replace(`
INSERT INTO __SCHEMA__.dead_letters
    (subscriber, provider, event_id, subject, stream_seq, headers, data, error, attempts, created_at)
VALUES ($1, NULL, NULL, $2, NULLIF($3::bigint, 0), '{}', $4, $5, $6, $7)
RETURNING id`),
		claimRedrive: r.Replace(`
SELECT id, subject, headers, data, COALESCE(stream_seq, 0), attempts
FROM __SCHEMA__.dead_letters
WHERE redrive_requested_at IS NOT NULL AND redriven_at IS NULL
ORDER BY id
LIMIT 1
FOR UPDATE SKIP LOCKED`),
		markRedriven: r.Replace(`
UPDATE __SCHEMA__.dead_letters SET redriven_at = $2, redrive_error = NULL WHERE id = $1`),
		markRedriveFailed: r.Replace(`
UPDATE __SCHEMA__.dead_letters
SET redrive_requested_at = NULL, redrive_error = $2, attempts = LEAST(attempts::bigint + 1, 2147483647)
WHERE id = $1 AND redriven_at IS NULL`),
		applyIfNewer: r.Replace(`
INSERT INTO __SCHEMA__.entity_versions AS v (kind, id, last_occurred_at, last_event_id, updated_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (kind, id) DO UPDATE
SET last_occurred_at = excluded.last_occurred_at, last_event_id = excluded.last_event_id, updated_at = excluded.updated_at
WHERE v.last_occurred_at < excluded.last_occurred_at
RETURNING true`),
		// startAttempt counts a handler call about to start for an event not
		// yet processed, and returns the calls counted before it that never
		// finished; no row when the event was processed.
		startAttempt: r.Replace(`
INSERT INTO __SCHEMA__.handler_attempts AS a (provider, event_id, unfinished, last_started_at)
SELECT $1::text, $2::text, 1, $3::timestamptz
WHERE NOT EXISTS (
    SELECT 1 FROM __SCHEMA__.processed_messages p
    WHERE p.subscriber = $4::text AND p.provider = $1::text AND p.event_id = $2::text)
ON CONFLICT (provider, event_id) DO UPDATE
SET unfinished = a.unfinished + 1, last_started_at = excluded.last_started_at
RETURNING unfinished - 1`),
		// startAttemptAny is startAttempt for an event whose handler is
		// called even if it was processed (a resent replay copy); $4 (the
		// subscriber) only keeps startAttempt's arguments.
		startAttemptAny: r.Replace(`
INSERT INTO __SCHEMA__.handler_attempts AS a (provider, event_id, unfinished, last_started_at)
SELECT $1::text, $2::text, 1, $3::timestamptz
WHERE $4::text IS NOT NULL
ON CONFLICT (provider, event_id) DO UPDATE
SET unfinished = a.unfinished + 1, last_started_at = excluded.last_started_at
RETURNING unfinished - 1`),
		finishAttempt: r.Replace(`
UPDATE __SCHEMA__.handler_attempts SET unfinished = unfinished - 1
WHERE provider = $1 AND event_id = $2 AND unfinished > 0`),
		clearAttempts: r.Replace(`
DELETE FROM __SCHEMA__.handler_attempts WHERE provider = $1 AND event_id = $2`),
		forgetProcessed: r.Replace(`
DELETE FROM __SCHEMA__.processed_messages WHERE subscriber = $1 AND provider = $2 AND event_id = $3`),
	}
}
