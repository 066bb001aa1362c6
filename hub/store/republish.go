package store

import (
	"context"
	"errors"
	"strings"

	"github.com/hookhub/hookhub/hub"
)

// PublishedRows returns published (PROCESSED) first deliveries matching f
// that still have their body, oldest first (received_at, then archive id),
// at most f.Limit of them, as the rows a publisher sends: what `hub
// republish` publishes again. Continue with f.After set to the last row's
// position. Their publish attempts are not read: a copy is a new message.
//
// The rows are chosen on the tables (see ListArchive): the planner walks
// ix_webhook_events_created_at from f.Since (or the cursor) and stops at
// the limit, or uses ix_webhook_events_provider_event_id for one event, or
// the primary key for archive ids; each row's status is then read through
// the view webhook_event_status.
func (s *Store) PublishedRows(ctx context.Context, f hub.PublishedFilter) ([]hub.OutboxRow, error) {
	if f.Limit < 1 {
		return nil, errors.New("published rows: limit must be at least 1")
	}
	var args queryArgs
	conds := []string{processedSQL, `a.body IS NOT NULL`}
	if f.Provider != "" {
		conds = append(conds, "a.provider = "+args.add(f.Provider))
	}
	if f.EventID != "" {
		conds = append(conds, "a.event_id = "+args.add(f.EventID))
	}
	if !f.Since.IsZero() {
		conds = append(conds, "a.created_at >= "+args.add(f.Since))
	}
	if !f.Until.IsZero() {
		conds = append(conds, "a.created_at < "+args.add(f.Until))
	}
	if f.ArchiveIDs != nil {
		ids := make([][16]byte, len(f.ArchiveIDs))
		for i, id := range f.ArchiveIDs {
			ids[i] = id
		}
		conds = append(conds, "a.id = ANY("+args.add(ids)+"::uuid[])")
	}
	if !f.After.IsZero() {
		conds = append(conds, "(a.created_at, a.id) > ("+args.add(f.After.ReceivedAt)+", "+args.add([16]byte(f.After.ArchiveID))+"::uuid)")
	}
	// The rows are chosen on the tables (see ListArchive), then read
	// through the view, which has the last word on their status.
	limit := args.add(f.Limit)
	sql := `WITH candidates AS (
    SELECT a.id FROM webhook_events a
    LEFT JOIN processed_webhook_events p ON p.id = a.id AND a.processing_status IS NULL
    WHERE ` + strings.Join(conds, " AND ") + `
    ORDER BY a.created_at, a.id LIMIT ` + limit + `
)
SELECT v.id, v.provider, v.event_id, v.event_type, v.body, v.created_at, v.occurred_at, v.trace_parent, v.entities
FROM webhook_event_status v
WHERE v.id IN (SELECT id FROM candidates) AND v.processing_status = 'PROCESSED'
ORDER BY v.created_at, v.id`
	return s.outboxRows(ctx, "read published events", false, sql, args...)
}
