package admin

import (
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
)

// mountSessions serves the console's sessions: GET /admin/sessions lists
// the live ones (newest first, with the cursor of the next page), POST
// /admin/sessions/revoke ends one ({"id"}), an operator's or a token's
// ({"name"}) or all ({"all": true}); hub/ops records each revocation in
// the audit trail, as the admin token's.
func (s *Server) mountSessions(admin fiber.Router) {
	op := s.cfg.Operator
	admin.Get("/sessions", func(c *fiber.Ctx) error {
		f := ops.SessionFilter{Name: c.Query("name"), Before: c.Query("before"), Limit: ops.DefaultSessionLimit}
		if l := c.Query("limit"); l != "" {
			var err error
			if f.Limit, err = strconv.Atoi(l); err != nil {
				return s.answer(c, nil, &ops.InputError{Field: "limit", Reason: fmt.Sprintf("not a whole number (1..%d)", ops.MaxSessionLimit)})
			}
		}
		list, err := op.ListSessions(c.UserContext(), f)
		if err != nil {
			return s.answer(c, nil, err)
		}
		page := sessionPage{Sessions: list}
		if page.Sessions == nil {
			page.Sessions = []hub.SessionInfo{}
		}
		if len(list) == f.Limit {
			page.Next = ops.SessionCursor(list[len(list)-1])
		}
		return s.answer(c, page, nil)
	})
	admin.Post("/sessions/revoke", func(c *fiber.Ctx) error {
		var sel hub.SessionSelector
		if err := s.decodeBody(c, &sel); err != nil {
			return s.answer(c, nil, err)
		}
		res, err := op.RevokeSessions(c.UserContext(), sel)
		return s.answer(c, res, err)
	})
}

// sessionPage is one page of the console's sessions.
type sessionPage struct {
	Sessions []hub.SessionInfo `json:"sessions"`
	// Next is the before cursor of the next page, when more may follow.
	Next string `json:"next,omitempty"`
}
