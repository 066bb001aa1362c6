package admin

import (
	"bufio"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
)

// mountAudit serves the audit trail, read-only: GET /admin/audit lists
// entries (JSON, newest first, with the cursor of the next page), and
// ?format=jsonl exports them as JSON lines. No route writes to it: only
// the actions themselves do (hub/ops).
func (s *Server) mountAudit(admin fiber.Router) {
	op := s.cfg.Operator
	admin.Get("/audit", func(c *fiber.Ctx) error {
		v, err := s.values(c, nil)
		if err != nil {
			return s.answer(c, nil, err)
		}
		f, err := ops.DecodeAudit(v, op.Now())
		if err != nil {
			return s.answer(c, nil, err)
		}
		switch c.Query("format") {
		case "", "json":
		case "jsonl":
			return s.exportAudit(c, f)
		default:
			return s.answer(c, nil, &ops.InputError{Field: "format", Reason: "json (the default) or jsonl"})
		}
		entries, err := op.ListAudit(c.UserContext(), f)
		if err != nil {
			return s.answer(c, nil, err)
		}
		page := auditPage{Entries: entries}
		if len(entries) == f.Limit {
			page.Next = ops.AuditCursor(entries[len(entries)-1])
		}
		return s.answer(c, page, nil)
	})
}

// auditPage is one page of the audit trail.
type auditPage struct {
	Entries []hub.AuditEntry `json:"entries"`
	// Next is the before cursor of the next page, when more may follow.
	Next string `json:"next,omitempty"`
}

// exportAudit streams the entries f selects as JSON lines, newest first,
// a page at a time, at most ops.MaxAuditExport. The first page is read before
// the answer starts, so a bad filter is still a 400.
func (s *Server) exportAudit(c *fiber.Ctx, f ops.AuditFilter) error {
	op := s.cfg.Operator
	ctx := c.UserContext()
	f.Limit = ops.MaxAuditLimit
	first, err := op.AuditExportPage(ctx, f)
	if err != nil {
		return s.answer(c, nil, err)
	}
	c.Set(fiber.HeaderContentType, "application/x-ndjson")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="hookhub-audit.jsonl"`)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		ops.WriteAuditJSONL(ctx, w, op.AuditExportPage, f, first)
	})
	return nil
}
