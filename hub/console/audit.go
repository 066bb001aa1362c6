package console

import (
	"bufio"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
)

// The audit page lists the audit trail (hub/ops records it: every action
// of the console, the admin API and the command line) and exports it as
// JSON lines. Both are reads: no console route writes to the trail.

// auditPageSize is the entries one audit page shows.
const auditPageSize = 50

// auditActions are the actions the filter offers.
var auditActions = append(slices.Clone(ops.Actions), ActionConsole)

// auditQuery is the audit page's filter form, as typed.
type auditQuery struct {
	Since, Until, Actor, Action, Before string
}

type auditView struct {
	Q        auditQuery
	Actions  []string
	Entries  []hub.AuditEntry
	Next     string // href of the next page; empty: none
	Export   string // href of the export of this filter
	Filtered bool
}

// parseAudit reads the audit page's query into a filter.
func parseAudit(q url.Values, now time.Time) (auditQuery, ops.AuditFilter, error) {
	in := auditQuery{Since: displayable(q.Get("since")), Until: displayable(q.Get("until")), Actor: displayable(q.Get("actor")),
		Action: displayable(q.Get("action")), Before: displayable(q.Get("before"))}
	v := opsValues(q)
	v.Set("limit", strconv.Itoa(auditPageSize))
	f, err := ops.DecodeAudit(v, now)
	return in, f, err
}

// filterValues is the query of in's filter (without the cursor).
func (in auditQuery) filterValues() url.Values {
	v := url.Values{}
	for k, val := range map[string]string{"since": in.Since, "until": in.Until, "actor": in.Actor, "action": in.Action} {
		if val != "" {
			v.Set(k, val)
		}
	}
	return v
}

func (cn *Console) auditPage(c *fiber.Ctx, s *session) error {
	v := auditView{Actions: auditActions}
	in, f, err := parseQuery(c, cn.cfg.Operator.Now(), parseAudit)
	v.Q = in
	v.Filtered = in != (auditQuery{})
	if err != nil {
		return cn.auditError(c, s, v, err)
	}
	f.Limit++ // one more tells whether there is a next page
	entries, err := cn.cfg.Operator.ListAudit(c.UserContext(), f)
	if err != nil {
		return cn.auditError(c, s, v, err)
	}
	if len(entries) > auditPageSize {
		entries = entries[:auditPageSize]
		next := in.filterValues()
		next.Set("before", ops.AuditCursor(entries[len(entries)-1]))
		v.Next = "/console/audit?" + next.Encode()
	}
	v.Entries = entries
	v.Export = "/console/audit.jsonl"
	if fv := in.filterValues(); len(fv) > 0 {
		v.Export += "?" + fv.Encode()
	}
	return cn.render(c, fiber.StatusOK, "audit", view{Title: "Audit trail", Nav: "audit", Session: s, Page: v})
}

// auditError shows the filter form again with the error.
func (cn *Console) auditError(c *fiber.Ctx, s *session, v auditView, err error) error {
	code, msg := failure(cn, c, err)
	return cn.render(c, code, "audit", view{Title: "Audit trail", Nav: "audit", Session: s, Page: v, Error: msg})
}

// auditExport streams the entries of the page's filter as JSON lines,
// newest first, a page of ops.MaxAuditLimit at a time and at most
// ops.MaxAuditExport, as a download. The first page is read before the
// answer starts, so a bad filter is shown as the page's error.
func (cn *Console) auditExport(c *fiber.Ctx, s *session) error {
	_, f, err := parseQuery(c, cn.cfg.Operator.Now(), parseAudit)
	if err != nil {
		return cn.failErr(c, s, err)
	}
	f.Limit = ops.MaxAuditLimit
	ctx := c.UserContext()
	op := cn.cfg.Operator
	first, err := op.AuditExportPage(ctx, f)
	if err != nil {
		return cn.failErr(c, s, err)
	}
	cn.audit(c, s, "audit export", "since", f.Since, "until", f.Until, "actor", f.Actor, "action", f.Action)
	c.Set(fiber.HeaderContentType, "application/x-ndjson; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="hookhub-audit.jsonl"`)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		ops.WriteAuditJSONL(ctx, w, op.AuditExportPage, f, first)
	})
	return nil
}
