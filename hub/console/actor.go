package console

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub"
)

// actor is who acts through s, for the audit trail: the operator an OIDC
// session signed in (their e-mail, or subject), or the token a token
// session signed in with ("token 1a2b3c4d", its fingerprint).
func (s *session) actor() hub.Actor {
	kind := hub.ActorToken
	if s.kind == sessionOIDC {
		kind = hub.ActorOperator
	}
	return hub.Actor{Kind: kind, Name: s.name, Role: s.role, Via: "console"}
}

// actx is the request's context carrying the session's actor, for the
// operator actions the request runs (hub/ops records them with it).
func actx(c *fiber.Ctx, s *session) context.Context {
	return hub.WithActor(c.UserContext(), s.actor())
}
