package admin

import (
	"context"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
)

// The console's sessions: GET /admin/sessions lists the live ones (newest
// first, with the cursor of the next page), POST /admin/sessions/revoke
// ends one ({"id"}), an operator's or a token's ({"name"}) or all
// ({"all": true}); hub/ops records each revocation in the audit trail, as
// the admin token's.

// revokeFields are the fields of a revocation's body.
var revokeFields = ops.Fields{"id": ops.Text, "name": ops.Text, "all": ops.Bool}

func (s *Server) listSessions(ctx context.Context, v ops.Values) (any, error) {
	f, err := ops.DecodeSessions(v)
	if err != nil {
		return nil, err
	}
	list, err := s.cfg.Operator.ListSessions(ctx, f)
	if err != nil {
		return nil, err
	}
	page := sessionPage{Sessions: list}
	if page.Sessions == nil {
		page.Sessions = []hub.SessionInfo{}
	}
	if len(list) == f.Limit {
		page.Next = ops.SessionCursor(list[len(list)-1])
	}
	return page, nil
}

func (s *Server) revokeSessions(ctx context.Context, v ops.Values) (any, error) {
	sel := hub.SessionSelector{ID: v.Get("id"), Name: v.Get("name"), All: v.Get("all") == "true"}
	return s.cfg.Operator.RevokeSessions(ctx, sel)
}

// sessionPage is one page of the console's sessions.
type sessionPage struct {
	Sessions []hub.SessionInfo `json:"sessions"`
	// Next is the before cursor of the next page, when more may follow.
	Next string `json:"next,omitempty"`
}
