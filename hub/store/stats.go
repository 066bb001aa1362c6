package store

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/hub"
)

// Counts is what the two tables hold: archive rows, and events by
// publication state. An event's publication state is on its dedup row
// (its archive row's status is NULL), or on its archive row when it was
// FAILED there at ingest. Pending, Published and Failed count each event
// once, from where its state is.
type Counts struct {
	ArchiveRows int64 // webhook_events rows: every archived delivery
	Duplicates  int64 // of which SKIPPED: later deliveries of an event
	DedupRows   int64 // processed_webhook_events rows: every event accepted
	// Pending events are in the outbox: committed, not acknowledged by
	// JetStream (what OutboxBacklog counts).
	Pending int64
	// Published events were acknowledged by JetStream (PROCESSED).
	Published int64
	// Failed events will not be published: FAILED when archived (a type
	// that cannot form a subject), or given up after a permanent failure.
	Failed int64
	// An event FAILED when archived whose archive row was purged is in
	// none of the three.
}

// countsSQL counts both tables in one snapshot. The precedence of the
// dedup row's columns is the view webhook_event_status's: a stream
// sequence means published, then a due time pending, then an error failed.
const countsSQL = `
SELECT a.n, a.skipped, a.failed, p.n, p.pending, p.published, p.failed
FROM (SELECT count(*) AS n,
             count(*) FILTER (WHERE processing_status = 'SKIPPED') AS skipped,
             count(*) FILTER (WHERE processing_status = 'FAILED') AS failed
      FROM webhook_events WHERE created_at >= $1) a,
     (SELECT count(*) AS n,
             count(*) FILTER (WHERE stream_seq IS NULL AND next_attempt_at IS NOT NULL) AS pending,
             count(*) FILTER (WHERE stream_seq IS NOT NULL) AS published,
             count(*) FILTER (WHERE stream_seq IS NULL AND next_attempt_at IS NULL
                                AND publish_error IS NOT NULL) AS failed
      FROM processed_webhook_events WHERE processed_at >= $1) p`

// Counts counts the archive rows received at or after since and the
// events first received at or after since; a zero since counts every row.
// The archive side reads the created_at index; the dedup side scans the
// table (about 80 bytes a row).
func (s *Store) Counts(ctx context.Context, since time.Time) (Counts, error) {
	var c Counts
	var archiveFailed, failed int64
	err := s.pool.QueryRow(ctx, countsSQL, since).Scan(&c.ArchiveRows, &c.Duplicates,
		&archiveFailed, &c.DedupRows, &c.Pending, &c.Published, &failed)
	if err != nil {
		return Counts{}, fmt.Errorf("count events: %w", err)
	}
	c.Failed = archiveFailed + failed
	return c, nil
}

// EventIDs lists the event ids of provider's events first received at or
// after since (a zero since lists them all), in no particular order.
func (s *Store) EventIDs(ctx context.Context, provider string, since time.Time) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT event_id FROM processed_webhook_events
		WHERE provider = $1 AND processed_at >= $2`, provider, since)
	if err != nil {
		return nil, fmt.Errorf("list event ids: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list event ids: %w", err)
	}
	return ids, nil
}

// ImportedEvent is an event the hub accepted and JetStream acknowledged:
// its first delivery, the later deliveries of it, and the PubAck. See
// ImportPublished.
type ImportedEvent struct {
	First      hub.Delivery   // archived with its body; its ArchiveID is the dedup row's id
	Duplicates []hub.Delivery // archived SKIPPED, without a body
	// StreamSeq and PublishedAt are JetStream's acknowledgement: the
	// stream sequence (at least 1) and when it was received (zero: the
	// first delivery's receipt).
	StreamSeq   uint64
	PublishedAt time.Time
}

// ErrImport marks an event ImportPublished refuses: it names which and why.
var ErrImport = errors.New("cannot import event")

// importChunk is how many events one pair of COPY statements carries.
const importChunk = 2048

var (
	importArchiveColumns = []string{"id", "provider", "event_id", "event_type", "payload", "signature",
		"processing_status", "created_at", "body", "signed_at", "occurred_at", "trace_parent", "entities"}
	importDedupColumns = []string{"id", "provider", "event_id", "event_type", "processed_at",
		"publish_attempts", "stream_seq", "published_at"}
)

// ImportPublished bulk-writes events as the hub leaves them once every
// delivery is archived and every publish recorded: an archive row per
// delivery (the first with its body and no stored status, PROCESSED
// through its dedup row; the others SKIPPED) and a dedup row per event,
// out of the outbox, with its stream sequence. It is for filling a
// database the hub does not serve yet (a benchmark's archive, a migration
// from another system): it writes with COPY in one transaction, so an
// event already recorded fails the whole import and nothing is written.
// Afterwards it vacuums and analyzes both tables, as autovacuum would long
// have done for rows this old, so the first queries do not pay for it. It
// returns the archive rows and the events written.
//
// A payload must be JSON that Postgres's jsonb accepts (Delivery.Payload,
// or else Body); a first delivery with Delivery.Error set, or without a
// stream sequence, is refused with ErrImport.
func (s *Store) ImportPublished(ctx context.Context, events iter.Seq[ImportedEvent]) (archived, recorded int64, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("import: %w", err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("import: %w", err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()

	chunk := make([]ImportedEvent, 0, importChunk)
	flush := func() error {
		a, r, err := importChunkRows(ctx, tx, chunk)
		archived += a
		recorded += r
		chunk = chunk[:0]
		return err
	}
	for ev := range events {
		if ev.First.Error != "" {
			return 0, 0, fmt.Errorf("%w %s: it failed (%s), it was not published", ErrImport, cleanText(ev.First.EventID), cleanText(ev.First.Error))
		}
		if ev.StreamSeq == 0 || ev.StreamSeq > 1<<63-1 {
			return 0, 0, fmt.Errorf("%w %s: stream sequence %d", ErrImport, cleanText(ev.First.EventID), ev.StreamSeq)
		}
		if chunk = append(chunk, ev); len(chunk) == importChunk {
			if err := flush(); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("import: %w", err)
	}
	if len(chunk) > 0 {
		if err := flush(); err != nil {
			return 0, 0, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, fmt.Errorf("import: commit: %w", err)
	}
	if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) webhook_events, processed_webhook_events, webhook_event_entities`); err != nil {
		return archived, recorded, fmt.Errorf("import: vacuum: %w", err)
	}
	return archived, recorded, nil
}

// importChunkRows copies a chunk's archive rows, then its dedup rows.
func importChunkRows(ctx context.Context, tx pgx.Tx, events []ImportedEvent) (archived, recorded int64, err error) {
	var rows []*hub.Delivery // every delivery; the first of each event has first set
	var first []bool
	for i := range events {
		rows = append(rows, &events[i].First)
		first = append(first, true)
		for j := range events[i].Duplicates {
			rows = append(rows, &events[i].Duplicates[j])
			first = append(first, false)
		}
	}
	values := make([]any, len(importArchiveColumns))
	archived, err = tx.CopyFrom(ctx, pgx.Identifier{"webhook_events"}, importArchiveColumns,
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			d := rows[i]
			payload := d.Payload
			if payload == nil {
				payload = d.Body
			}
			var status, body any // NULL, NULL: a first delivery
			if first[i] {
				body = d.Body
			} else {
				status = string(hub.Skipped)
			}
			values[0], values[1], values[2], values[3] = [16]byte(d.ArchiveID), cleanText(d.Provider), cleanText(d.EventID), cleanText(d.EventType)
			values[4], values[5], values[6], values[7] = payload, nullText(d.Signature), status, d.ReceivedAt
			values[8], values[9], values[10], values[11] = body, nullTime(d.SignedAt), nullTime(d.OccurredAt), nullText(d.TraceParent)
			values[12] = nil
			if len(d.Entities) > 0 {
				if a := entityTexts(d.Entities); a != "" {
					values[12] = strings.Split(a, "\n")
				}
			}
			return values, nil
		}))
	if err != nil {
		return 0, 0, fmt.Errorf("import archive rows: %w", err)
	}
	dvalues := make([]any, len(importDedupColumns))
	recorded, err = tx.CopyFrom(ctx, pgx.Identifier{"processed_webhook_events"}, importDedupColumns,
		pgx.CopyFromSlice(len(events), func(i int) ([]any, error) {
			e := &events[i]
			d := &e.First
			dvalues[0], dvalues[1], dvalues[2], dvalues[3] = [16]byte(d.ArchiveID), cleanText(d.Provider), cleanText(d.EventID), cleanText(d.EventType)
			publishedAt := e.PublishedAt
			if publishedAt.IsZero() {
				publishedAt = d.ReceivedAt
			}
			dvalues[4], dvalues[5], dvalues[6], dvalues[7] = d.ReceivedAt, int32(1), int64(e.StreamSeq), publishedAt
			return dvalues, nil
		}))
	if err != nil {
		return archived, 0, fmt.Errorf("import dedup rows: %w", err)
	}
	return archived, recorded, nil
}

// nullText is s as a text value, NULL when empty.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return cleanText(s)
}

// nullTime is t, NULL when zero.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}
