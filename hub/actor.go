package hub

import (
	"context"
	"sync/atomic"
)

// Actor is who asked for an operator action: a person signed in to the
// console through OpenID Connect, a bearer of one of the hub's tokens
// (the admin API, break-glass console sign-in), or the user running the
// command line. The audit trail records it with every action; it never
// holds a secret (a token is named by its fingerprint).
type Actor struct {
	// Kind is ActorOperator, ActorToken or ActorCLI.
	Kind string `json:"kind"`
	// Name identifies the actor: an operator's e-mail (or subject when the
	// provider gives no e-mail), "token 1a2b3c4d" (the first 8 hex digits
	// of the token's SHA-256), or the OS user and host ("alice@ops-1").
	Name string `json:"name"`
	// Role is the role the action ran with: "admin" or "read-only".
	Role string `json:"role"`
	// Via is where the action came from: "console", "admin-api" or "cli".
	Via string `json:"via"`
}

// Actor kinds.
const (
	ActorOperator = "operator"
	ActorToken    = "token"
	ActorCLI      = "cli"
)

type actorKey struct{}

// WithActor returns ctx carrying a, for the operator action called with
// it to record (the audit trail).
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the Actor ctx carries, if any.
func ActorFrom(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// CancelledBy is the cause (context.Cause) of an action's context that an
// operator cancelled: the audit trail records who, in the action's entry.
type CancelledBy struct{ Actor Actor }

func (c *CancelledBy) Error() string {
	return "cancelled by " + c.Actor.Name + " (" + c.Actor.Role + ", " + c.Actor.Via + ")"
}

type auditMarkKey struct{}

// WithAuditMark returns ctx that remembers whether an action called with
// it was recorded in the audit trail (hub/ops marks it: MarkAudited), and
// the function that tells. The admin API and the console use it to record
// a request they refused themselves, and only then: a refusal is
// recorded once.
func WithAuditMark(ctx context.Context) (context.Context, func() bool) {
	var done atomic.Bool
	return context.WithValue(ctx, auditMarkKey{}, &done), done.Load
}

// MarkAudited records in ctx (WithAuditMark) that its action is in the
// audit trail.
func MarkAudited(ctx context.Context) {
	if d, ok := ctx.Value(auditMarkKey{}).(*atomic.Bool); ok {
		d.Store(true)
	}
}
