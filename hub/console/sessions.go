package console

import (
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
)

// The Sessions page lists the console's sessions on every replica (they
// are rows in Postgres) and lets an admin revoke one, or every session of
// one operator or token: planned first (a GET that lists what would end),
// done by the POST through hub/ops, which records it in the audit trail.

// sessionsPageSize is the sessions one page shows.
const sessionsPageSize = 100

type sessionsView struct {
	Name     string // the name filter, as typed
	Before   string
	Sessions []hub.SessionInfo
	Mine     string // the id of the session viewing the page
	Next     string // href of the next page; empty: none
}

// sessionsPage lists the live sessions, newest first.
func (cn *Console) sessionsPage(c *fiber.Ctx, s *session) error {
	q, err := queryValues(c)
	if err != nil {
		return cn.failErr(c, s, err)
	}
	v := sessionsView{Name: displayable(q.Get("name")), Before: displayable(q.Get("before")), Mine: s.ref}
	f := ops.SessionFilter{Name: q.Get("name"), Before: q.Get("before"), Limit: sessionsPageSize + 1}
	list, err := cn.cfg.Operator.ListSessions(c.UserContext(), f)
	if err != nil {
		code, msg := failure(cn, c, err)
		return cn.render(c, code, "sessions", view{Title: "Sessions", Nav: "sessions", Session: s, Page: v, Error: msg})
	}
	if len(list) > sessionsPageSize {
		list = list[:sessionsPageSize]
		next := url.Values{"before": {ops.SessionCursor(list[len(list)-1])}}
		if f.Name != "" {
			next.Set("name", f.Name)
		}
		v.Next = "/console/sessions?" + next.Encode()
	}
	v.Sessions = list
	return cn.render(c, fiber.StatusOK, "sessions", view{Title: "Sessions", Nav: "sessions", Session: s, Page: v, Flash: flashOf(q)})
}

type revokePlanView struct {
	Sel      hub.SessionSelector
	Sessions []hub.SessionInfo // what the revocation would end (the first page)
	Mine     string
	Yours    bool // the plan ends the session viewing it
}

// revokePlan shows the sessions a revocation (?id= or ?name=) would end,
// and a confirmation form: nothing ends until it is posted.
func (cn *Console) revokePlan(c *fiber.Ctx, s *session) error {
	q, err := queryValues(c)
	if err != nil {
		return cn.failErr(c, s, err)
	}
	sel := hub.SessionSelector{ID: q.Get("id"), Name: q.Get("name")}
	if (sel.ID == "") == (sel.Name == "") {
		return cn.fail(c, s, fiber.StatusBadRequest, "Name one session (id) or one operator or token (name) to revoke.")
	}
	list, err := cn.cfg.Operator.ListSessions(c.UserContext(), ops.SessionFilter{ID: sel.ID, Name: sel.Name, Limit: sessionsPageSize})
	if err != nil {
		return cn.failErr(c, s, err)
	}
	if len(list) == 0 {
		return cn.fail(c, s, fiber.StatusNotFound, "No live session matches: it ended or was revoked already.")
	}
	v := revokePlanView{Sel: hub.SessionSelector{ID: displayable(sel.ID), Name: displayable(sel.Name)}, Sessions: list, Mine: s.ref}
	for _, x := range list {
		v.Yours = v.Yours || x.ID == s.ref
	}
	return cn.render(c, fiber.StatusOK, "sessionsplan", view{Title: "Revoke sessions", Nav: "sessions", Session: s, Page: v})
}

// revoke ends the sessions the confirmed plan names (hub/ops records it).
func (cn *Console) revoke(c *fiber.Ctx, s *session) error {
	form := formOf(c)
	sel := hub.SessionSelector{ID: form.Get("id"), Name: form.Get("name")}
	res, err := cn.cfg.Operator.RevokeSessions(actx(c, s), sel)
	cn.audit(c, s, "revoke sessions", "id", sel.ID, "name", sel.Name, "revoked", res.Revoked, "err", err)
	if err != nil {
		return cn.failErr(c, s, err)
	}
	return c.Redirect("/console/sessions?"+url.Values{"flash": {"revoked"}, "n": {strconv.FormatInt(res.Revoked, 10)}}.Encode(), fiber.StatusSeeOther)
}
