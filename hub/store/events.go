package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/hub"
)

// The archive as operators read it. Every status and publication column
// comes from the view webhook_event_status: SKIPPED and FAILED-at-ingest
// from the archive row, the rest from the dedup row. The rows of a listing
// are chosen on the tables first, so that the planner walks an index in
// the listing's order and stops at its limit (EXPLAINed on 200k archive
// rows):
//
//   - by default, SKIPPED and PROCESSED: ix_webhook_events_created_at,
//     backwards from the cursor (or Until), PROCESSED joining each row to
//     its dedup row by primary key;
//   - PENDING: the outbox (ix_processed_webhook_events_due), small;
//   - FAILED: ix_webhook_events_failed_created_at and the events a relay
//     gave up on (ix_processed_webhook_events_given_up), both small.

// deliveryColumns are the view's columns an ArchivedDelivery is scanned
// from (scanDelivery), qualified by alias v.
const deliveryColumns = `v.id, v.provider, v.event_id, v.event_type, v.processing_status, COALESCE(v.error_message, ''),
       v.created_at, COALESCE(v.signature, ''), v.signed_at, COALESCE(v.stream_seq, 0), v.published_at,
       v.publish_attempts, v.origin, v.entities`

func scanDelivery(r pgx.Row, extra ...any) (hub.ArchivedDelivery, error) {
	var d hub.ArchivedDelivery
	var status, origin string
	var signedAt, publishedAt *time.Time
	var seq int64
	var entities []string
	dest := append([]any{&d.ArchiveID, &d.Provider, &d.EventID, &d.EventType, &status, &d.Error,
		&d.ReceivedAt, &d.Signature, &signedAt, &seq, &publishedAt, &d.Attempts, &origin, &entities}, extra...)
	if err := r.Scan(dest...); err != nil {
		return d, err
	}
	d.Entities = parseEntities(entities)
	d.Status, d.Origin = hub.Status(status), hub.Origin(origin)
	if signedAt != nil {
		d.SignedAt = *signedAt
	}
	if publishedAt != nil {
		d.PublishedAt = *publishedAt
	}
	d.StreamSeq = uint64(max(seq, 0))
	return d, nil
}

// parseEntities reads the archive's entities column.
func parseEntities(ss []string) []hub.Entity {
	if len(ss) == 0 {
		return nil
	}
	out := make([]hub.Entity, 0, len(ss))
	for _, s := range ss {
		if e, ok := hub.ParseEntity(s); ok {
			out = append(out, e)
		}
	}
	return out
}

// processedSQL is the view's PROCESSED on the tables it reads, webhook_events
// a LEFT JOIN processed_webhook_events p ON p.id = a.id AND
// a.processing_status IS NULL: a first delivery whose dedup row has its
// stream sequence.
const processedSQL = `(a.processing_status IS NULL AND p.stream_seq IS NOT NULL)`

// queryArgs numbers a statement's parameters as they are added.
type queryArgs []any

func (q *queryArgs) add(v any) string {
	*q = append(*q, v)
	return "$" + strconv.Itoa(len(*q))
}

// ListArchive lists archive rows matching f, newest first (received_at,
// then archive id, descending), at most f.Limit of them. Continue a
// listing with f.Before set to the last row's Cursor.
func (s *Store) ListArchive(ctx context.Context, f hub.ArchiveFilter) ([]hub.ArchivedDelivery, error) {
	if f.Limit < 1 {
		return nil, errors.New("list archive: limit must be at least 1")
	}
	if f.Where != nil {
		return nil, errors.New("list archive: a payload filter (Where) is read by ScanArchive")
	}
	var args queryArgs
	// With an entity, the rows are walked on the entity's slot indexes,
	// whose keys carry the archive's order (a.created_at, a.id): the time
	// bounds and the cursor bound their range scans.
	where := archiveConds(f, &args, "a.created_at", "a.id")
	limit := args.add(f.Limit)

	// The rows are chosen on the tables themselves (the view's status is
	// an expression over a join: the planner cannot estimate a filter on
	// it, and would read whole ranges to find a page), then read through
	// the view, which has the last word on each row's status.
	candidates, err := listCandidates(f, &args, where, limit)
	if err != nil {
		return nil, err
	}
	statusCond := `v.processing_status <> 'SKIPPED'`
	if f.Status != "" {
		statusCond = `v.processing_status = ` + args.add(string(f.Status))
	}
	sql := `WITH candidates AS (
    ` + candidates + `
)
SELECT ` + deliveryColumns + ` FROM webhook_event_status v
WHERE v.id IN (SELECT id FROM candidates) AND ` + statusCond + `
ORDER BY v.created_at DESC, v.id DESC LIMIT ` + limit
	if f.CountDeliveries {
		// Counted for the page only, on ix_webhook_events_provider_event_id.
		sql = `SELECT x.*, (SELECT count(*) FROM webhook_events d WHERE d.provider = x.provider AND d.event_id = x.event_id)
FROM (` + sql + `) x ORDER BY x.created_at DESC, x.id DESC`
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("list archive: %w", err)
	}
	out, err := collectDeliveries(rows, f.CountDeliveries)
	if err != nil {
		return nil, fmt.Errorf("list archive: %w", err)
	}
	return out, nil
}

// listCandidates is the query of the ids ListArchive reads a page of, on
// the tables themselves, as f's entity and status make it best walked;
// where and limit are the conditions and the LIMIT placeholder.
func listCandidates(f hub.ArchiveFilter, args *queryArgs, where, limit string) (string, error) {
	var candidates string
	switch {
	case f.Entity != "":
		// The entity's slot indexes hold first deliveries only, newest
		// first per id: each walked backwards from the cursor, its rows
		// joined to their dedup rows (for the status) by primary key,
		// until a page matches (entityCandidates). The status is the
		// view's, on the tables.
		entity := args.add(f.Entity)
		statusExpr := `TRUE`
		if f.Status != "" {
			statusExpr = `COALESCE(a.processing_status,
                CASE WHEN p.stream_seq IS NOT NULL THEN 'PROCESSED'
                     WHEN p.next_attempt_at IS NULL AND p.publish_error IS NOT NULL THEN 'FAILED'
                     ELSE 'PENDING' END) = ` + args.add(string(f.Status))
		}
		candidates = entityCandidates(entity, statusExpr+` AND `+where, limit)
	case !validStatus(f.Status):
		return "", fmt.Errorf("list archive: unknown status %q", f.Status)
	}
	if candidates == "" {
		switch f.Status {
		case "":
			// Every first delivery: only a duplicate's archive row says SKIPPED.
			candidates = `SELECT a.id FROM webhook_events a
    WHERE a.processing_status IS DISTINCT FROM 'SKIPPED' AND ` + where + `
    ORDER BY a.created_at DESC, a.id DESC LIMIT ` + limit
		case hub.Skipped:
			candidates = `SELECT a.id FROM webhook_events a
    WHERE a.processing_status = 'SKIPPED' AND ` + where + `
    ORDER BY a.created_at DESC, a.id DESC LIMIT ` + limit
		case hub.Processed:
			// Most rows: walking the archive newest first finds a page soon.
			candidates = `SELECT a.id FROM webhook_events a
    LEFT JOIN processed_webhook_events p ON p.id = a.id AND a.processing_status IS NULL
    WHERE ` + processedSQL + ` AND ` + where + `
    ORDER BY a.created_at DESC, a.id DESC LIMIT ` + limit
		case hub.Pending:
			// Few rows, found through the outbox's partial index.
			candidates = `SELECT a.id FROM processed_webhook_events p JOIN webhook_events a ON a.id = p.id
    WHERE p.next_attempt_at IS NOT NULL AND a.processing_status IS NULL AND ` + where + `
    ORDER BY a.created_at DESC, a.id DESC LIMIT ` + limit
		case hub.Failed:
			// Few rows, found through the partial indexes: first deliveries
			// FAILED on their archive row at ingest, and those whose dedup row
			// a relay gave up on.
			candidates = `(SELECT a.id FROM webhook_events a
     WHERE a.processing_status = 'FAILED' AND ` + where + `
     ORDER BY a.created_at DESC, a.id DESC LIMIT ` + limit + `)
    UNION ALL
    (SELECT a.id FROM processed_webhook_events p JOIN webhook_events a ON a.id = p.id
     WHERE p.next_attempt_at IS NULL AND p.stream_seq IS NULL AND p.publish_error IS NOT NULL
       AND a.processing_status IS NULL AND ` + where + `
     ORDER BY a.created_at DESC, a.id DESC LIMIT ` + limit + `)`
		}
	}
	return candidates, nil
}

// collectDeliveries reads archive rows of deliveryColumns, followed by
// their deliveries' count when count is set.
func collectDeliveries(rows pgx.Rows, count bool) ([]hub.ArchivedDelivery, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.ArchivedDelivery, error) {
		if !count {
			return scanDelivery(r)
		}
		var n int64
		d, err := scanDelivery(r, &n)
		d.Deliveries = int(n)
		return d, err
	})
}

// validStatus reports whether st is a status ListArchive filters by ("" for
// every first delivery).
func validStatus(st hub.Status) bool {
	switch st {
	case "", hub.Skipped, hub.Processed, hub.Pending, hub.Failed:
		return true
	}
	return false
}

// archiveConds is f's conditions on the archive row (alias a), but the
// status's, the payload's and the entity's. The time bounds and the cursor
// are on the columns at and aid (the archive's created_at and id, or the
// entity index's when a query walks it). Values travel as parameters
// (added to args); only column names are spliced.
func archiveConds(f hub.ArchiveFilter, args *queryArgs, at, aid string) string {
	var conds []string
	if f.Provider != "" {
		conds = append(conds, "a.provider = "+args.add(f.Provider))
	}
	if f.EventType != "" {
		conds = append(conds, "a.event_type = "+args.add(f.EventType))
	}
	if f.EventID != "" {
		if f.Provider != "" {
			conds = append(conds, "a.event_id = "+args.add(f.EventID))
		} else {
			// ix_webhook_events_provider_event_id leads with the provider:
			// the providers present are found by a loose index scan (a few
			// descents of that index), then each (provider, event_id) is
			// one more, instead of reading the whole archive.
			conds = append(conds, "a.event_id = "+args.add(f.EventID)+` AND a.provider = ANY (ARRAY(
        WITH RECURSIVE ps AS (
            SELECT min(provider) AS provider FROM webhook_events
            UNION ALL
            SELECT (SELECT min(w.provider) FROM webhook_events w WHERE w.provider > ps.provider) FROM ps WHERE ps.provider IS NOT NULL)
        SELECT provider FROM ps WHERE provider IS NOT NULL))`)
		}
	}
	if !f.Since.IsZero() {
		conds = append(conds, at+" >= "+args.add(f.Since))
	}
	if !f.Until.IsZero() {
		conds = append(conds, at+" < "+args.add(f.Until))
	}
	if !f.Before.IsZero() {
		// The keyset: after the cursor in newest-first order.
		conds = append(conds, "("+at+", "+aid+") < ("+args.add(f.Before.ReceivedAt)+", "+args.add([16]byte(f.Before.ArchiveID))+"::uuid)")
	}
	if len(conds) == 0 {
		return "true"
	}
	return strings.Join(conds, " AND ")
}

// FindEvent returns the event whose delivery (first or duplicate) has
// archive id id. The dedup row's id is the first delivery's archive id,
// so an event whose archive rows were purged is still found by it. The
// bool is false when no event has such a delivery.
func (s *Store) FindEvent(ctx context.Context, id uuid.UUID) (provider, eventID string, found bool, err error) {
	err = s.pool.QueryRow(ctx, `
		SELECT provider, event_id FROM webhook_events WHERE id = $1
		UNION ALL
		SELECT provider, event_id FROM processed_webhook_events WHERE id = $1
		LIMIT 1`, [16]byte(id)).Scan(&provider, &eventID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("find event by archive id: %w", err)
	}
	return provider, eventID, true, nil
}

// Event returns an event's dedup row; the bool is false when the hub never
// accepted that event.
func (s *Store) Event(ctx context.Context, provider, eventID string) (hub.EventRecord, bool, error) {
	e := hub.EventRecord{Provider: provider, EventID: eventID}
	err := s.pool.QueryRow(ctx, `SELECT id, event_type, processed_at FROM processed_webhook_events
		WHERE provider = $1 AND event_id = $2`, provider, eventID).Scan(&e.FirstArchiveID, &e.EventType, &e.FirstSeen)
	if errors.Is(err, pgx.ErrNoRows) {
		return hub.EventRecord{}, false, nil
	}
	if err != nil {
		return hub.EventRecord{}, false, fmt.Errorf("read event: %w", err)
	}
	return e, true, nil
}

// Deliveries returns the archived deliveries of one event, oldest first
// (the first delivery, then the duplicates), with their bodies, at most
// limit of them (limit < 1: all).
func (s *Store) Deliveries(ctx context.Context, provider, eventID string, limit int) ([]hub.ArchivedDelivery, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryColumns+`, v.body FROM webhook_event_status v
		WHERE v.provider = $1 AND v.event_id = $2 ORDER BY v.created_at, v.id LIMIT $3`, provider, eventID, lim)
	if err != nil {
		return nil, fmt.Errorf("read deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.ArchivedDelivery, error) {
		var body []byte
		d, err := scanDelivery(r, &body)
		d.Body = body
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("read deliveries: %w", err)
	}
	return out, nil
}
