package admin

import (
	"bufio"
	"context"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
)

// listAudit answers GET /admin/audit, the audit trail, read-only: entries
// (JSON, newest first, with the cursor of the next page), or with
// ?format=jsonl their export as JSON lines. No route writes to it: only
// the actions themselves do (hub/ops).
func (s *Server) listAudit(ctx context.Context, v ops.Values) (any, error) {
	op := s.cfg.Operator
	f, err := ops.DecodeAudit(v, op.Now())
	if err != nil {
		return nil, err
	}
	switch v.Get("format") {
	case "", "json":
	case "jsonl":
		return s.exportAudit(ctx, f)
	default:
		return nil, &ops.InputError{Field: "format", Reason: "json (the default) or jsonl"}
	}
	entries, err := op.ListAudit(ctx, f)
	if err != nil {
		return nil, err
	}
	page := auditPage{Entries: entries}
	if len(entries) == f.Limit {
		page.Next = ops.AuditCursor(entries[len(entries)-1])
	}
	return page, nil
}

// auditPage is one page of the audit trail.
type auditPage struct {
	Entries []hub.AuditEntry `json:"entries"`
	// Next is the before cursor of the next page, when more may follow.
	Next string `json:"next,omitempty"`
}

// jsonlExport writes an answer of JSON lines, as a download.
type jsonlExport func(w *bufio.Writer)

// exportAudit streams the entries f selects as JSON lines, newest first,
// a page at a time, at most ops.MaxAuditExport. The first page is read before
// the answer starts, so a bad filter is still a 400.
func (s *Server) exportAudit(ctx context.Context, f ops.AuditFilter) (any, error) {
	op := s.cfg.Operator
	f.Limit = ops.MaxAuditLimit
	first, err := op.AuditExportPage(ctx, f)
	if err != nil {
		return nil, err
	}
	return jsonlExport(func(w *bufio.Writer) { ops.WriteAuditJSONL(ctx, w, op.AuditExportPage, f, first) }), nil
}
