package console

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub"
)

// actor is who the session's actions are recorded as in the audit trail:
// a token session by the token's fingerprint and its role. (Helper O's
// OIDC sessions extend this with the operator's e-mail or subject.)
func (s *session) actor() hub.Actor {
	return hub.Actor{Kind: hub.ActorToken, Name: "token " + s.tokenFP, Role: s.role, Via: "console"}
}

// actx is the request's context carrying the session's actor, for the
// operator actions the request runs (hub/ops records them with it).
func actx(c *fiber.Ctx, s *session) context.Context {
	return hub.WithActor(c.UserContext(), s.actor())
}
