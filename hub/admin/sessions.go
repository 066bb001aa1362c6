package admin

import (
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
		v, err := s.values(c, nil)
		if err != nil {
			return s.answer(c, nil, err)
		}
		f, err := ops.DecodeSessions(v)
		if err != nil {
			return s.answer(c, nil, err)
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
