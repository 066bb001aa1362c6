package subscriber

import (
	"strings"

	"github.com/jackc/pgx/v5"
)

// queries are the library's SQL statements, with the subscriber's schema
// filled in.
type queries struct {
	insertProcessed   string
	markStale         string
	insertDeadLetter  string
	claimRedrive      string
	markRedriven      string
	markRedriveFailed string
	applyIfNewer      string
}

func newQueries(schemaName string) queries {
	r := strings.NewReplacer("__SCHEMA__", pgx.Identifier{schemaName}.Sanitize())
	return queries{
		insertProcessed: r.Replace(`
INSERT INTO __SCHEMA__.processed_messages
    (subscriber, provider, event_id, subject, stream_seq, processed_at, outcome, dead_letter_id)
VALUES ($1, $2, $3, $4, NULLIF($5::bigint, 0), $6, 'processed', $7)
ON CONFLICT (subscriber, provider, event_id) DO NOTHING`),
		markStale: r.Replace(`
UPDATE __SCHEMA__.processed_messages SET outcome = 'skipped_stale'
WHERE subscriber = $1 AND provider = $2 AND event_id = $3`),
		insertDeadLetter: r.Replace(`
INSERT INTO __SCHEMA__.dead_letters
    (subscriber, provider, event_id, subject, stream_seq, headers, data, error, attempts, created_at)
VALUES ($1, NULLIF($2, ''), NULLIF($3, ''), $4, NULLIF($5::bigint, 0), $6, $7, $8, $9, $10)
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
SET redrive_requested_at = NULL, redrive_error = $2, attempts = attempts + 1
WHERE id = $1 AND redriven_at IS NULL`),
		applyIfNewer: r.Replace(`
INSERT INTO __SCHEMA__.entity_versions AS v (kind, id, last_occurred_at, last_event_id, updated_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (kind, id) DO UPDATE
SET last_occurred_at = excluded.last_occurred_at, last_event_id = excluded.last_event_id, updated_at = excluded.updated_at
WHERE v.last_occurred_at < excluded.last_occurred_at
RETURNING true`),
	}
}
