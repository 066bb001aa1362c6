package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/hub"
)

// Payload filters. A payload filter has no index: the scan
// walks ix_webhook_events_created_at backwards from the cursor (or Until)
// as a listing does, and evaluates each condition (payload #> path =
// ANY(values), jsonb equality) as a filter on the rows it reads, so
// ingest writes nothing more. The rows read are bounded (MaxScan): a page
// ends when it is full or the bound is hit, and the caller learns which
// (hub.ArchiveScan.Truncated) and where to resume.

// ScanArchive lists the rows matching f, payload conditions included,
// newest first, at most f.Limit of them, reading at most f.MaxScan archive
// rows.
func (s *Store) ScanArchive(ctx context.Context, f hub.ArchiveFilter) (hub.ArchiveScan, error) {
	var out hub.ArchiveScan
	if f.Limit < 1 || f.MaxScan < 1 {
		return out, errors.New("scan archive: limit and max scan must be at least 1")
	}
	var args queryArgs
	where, join, hit, err := scanConds(f, &args)
	if err != nil {
		return out, err
	}
	maxScan, limit := args.add(f.MaxScan), args.add(f.Limit)
	// n numbers the rows read; the last one read comes back whether it
	// matches or not (n = MaxScan: the bound, or last: the range's end):
	// it tells how many were read, whether the bound stopped the scan, and
	// where to resume. The window runs over the index scan as it streams
	// (lead looks one row ahead), and the outer LIMIT stops the walk once
	// the page is full: there is no outer ORDER BY, which would make the
	// planner sort every row read before the LIMIT (EXPLAINed on 200k
	// rows: a page of 10 found in the first 9,007 rows read 9,007, not
	// 20,000). The rows come in the subquery's order (n); they are sorted
	// by n below all the same.
	sql := `SELECT id, created_at, n, hit, last, bytes FROM (
    SELECT a.id, a.created_at, row_number() OVER w AS n, COALESCE(` + hit + `, false) AS hit, lead(a.id) OVER w IS NULL AS last,
           COALESCE(sum(pg_column_size(a.payload)) OVER w, 0) AS bytes
    FROM webhook_events a` + join + `
    WHERE ` + where + `
    WINDOW w AS (ORDER BY a.created_at DESC, a.id DESC)
    ORDER BY a.created_at DESC, a.id DESC LIMIT ` + maxScan + `
) s WHERE hit OR last OR n = ` + maxScan + ` LIMIT ` + limit
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return out, fmt.Errorf("scan archive: %w", err)
	}
	type picked struct {
		id        uuid.UUID
		at        time.Time
		n         int64
		hit, last bool
		bytes     int64
	}
	ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (picked, error) {
		var p picked
		err := r.Scan(&p.id, &p.at, &p.n, &p.hit, &p.last, &p.bytes)
		return p, err
	})
	if err != nil {
		return out, fmt.Errorf("scan archive: %w", err)
	}
	slices.SortFunc(ps, func(a, b picked) int { return cmp.Compare(a.n, b.n) })
	var ids [][16]byte
	for _, p := range ps {
		out.Scanned = max(out.Scanned, int(p.n))
		out.Bytes = max(out.Bytes, p.bytes) // a running sum: the last row read's
		if p.hit {
			ids = append(ids, p.id)
		}
	}
	if len(ps) > 0 {
		last := ps[len(ps)-1]
		switch {
		case len(ids) == f.Limit:
			out.Resume = hub.ArchiveCursor{ReceivedAt: last.at, ArchiveID: last.id}
		case int(last.n) == f.MaxScan && !last.last:
			out.Truncated = true
			out.Resume = hub.ArchiveCursor{ReceivedAt: last.at, ArchiveID: last.id}
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	sel := deliveryColumns
	if f.CountDeliveries {
		sel += `, (SELECT count(*) FROM webhook_events d WHERE d.provider = v.provider AND d.event_id = v.event_id)`
	}
	rows, err = s.pool.Query(ctx, `SELECT `+sel+` FROM webhook_event_status v
WHERE v.id = ANY ($1::uuid[]) ORDER BY v.created_at DESC, v.id DESC`, ids)
	if err != nil {
		return out, fmt.Errorf("scan archive: %w", err)
	}
	out.Rows, err = collectDeliveries(rows, f.CountDeliveries)
	if err != nil {
		return out, fmt.Errorf("scan archive: %w", err)
	}
	return out, nil
}

// scanConds are ScanArchive's conditions: where, on the rows the scan
// walks (f's range, entity and status, as ListArchive chooses them on the
// tables), join for the status, and hit, whether a row walked matches
// (its status and f.Where).
func scanConds(f hub.ArchiveFilter, args *queryArgs) (where, join, hit string, err error) {
	where = archiveConds(f, args, "a.created_at", "a.id")
	if f.Entity != "" {
		// The entity on each row read, in any of its slots.
		where += ` AND ` + entityRow(args.add(f.Entity))
	}
	var matches []string
	for _, m := range f.Where {
		if len(m.Path) == 0 || len(m.Any) == 0 {
			return "", "", "", errors.New("scan archive: a payload match needs a path and a value")
		}
		vals := make([]string, len(m.Any))
		for i, v := range m.Any {
			vals[i] = string(v)
		}
		matches = append(matches, "a.payload #> "+args.add(m.Path)+"::text[] = ANY ("+args.add(vals)+"::text[]::jsonb[])")
	}
	// The status: the rows the scan walks (base), and which of them are
	// of the status (hit), on the tables as ListArchive chooses them.
	base := `a.processing_status IS DISTINCT FROM 'SKIPPED'`
	hit = "true"
	const dedup = ` LEFT JOIN processed_webhook_events p ON p.id = a.id AND a.processing_status IS NULL`
	switch f.Status {
	case "":
	case hub.Skipped:
		base = `a.processing_status = 'SKIPPED'`
	case hub.Processed:
		join, hit = dedup, processedSQL
	case hub.Pending:
		join, hit = dedup, `(a.processing_status IS NULL AND p.next_attempt_at IS NOT NULL)`
	case hub.Failed:
		join, hit = dedup, `(a.processing_status = 'FAILED' OR (a.processing_status IS NULL AND p.next_attempt_at IS NULL
        AND p.stream_seq IS NULL AND p.publish_error IS NOT NULL))`
	default:
		return "", "", "", fmt.Errorf("scan archive: unknown status %q", f.Status)
	}
	if len(matches) > 0 {
		hit += " AND " + strings.Join(matches, " AND ")
	}
	return base + " AND " + where, join, hit, nil
}
