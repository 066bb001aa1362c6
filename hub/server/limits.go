package server

import (
	"net"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub/internal/hubhttp"
)

// Overload protection of the webhook listener. Four bounds keep a flood of
// connections or of slow requests from growing the hub's memory or
// starving fresh deliveries:
//
//   - a connection cap (LimitListener): past it a new connection is answered
//     503 with Retry-After at once and closed, before anything is read;
//   - a memory budget for request bodies, MaxInflight × MaxBodyBytes (what
//     MaxInflight full-size requests would hold): bodies are read by the
//     handler (fasthttp's StreamRequestBody) into buffers that grow with the
//     bytes that actually arrive, never with what Content-Length announces,
//     and each growth is reserved from the budget first; past it the
//     request is answered 503 with Retry-After. A slow sender holds only
//     what it sent. The admin API's bodies share it (Bodies);
//   - a cap on requests being verified and committed (MaxInflight), taken
//     once the body is complete: past it, 503 with Retry-After;
//   - the read timeout: a whole request, headers and body, must arrive
//     within it, so a slow sender holds its connection and its part of the
//     budget for a bounded time.
//
// Besides the budget, fasthttp reads ahead up to 8 KiB of each request
// before the handler runs: at most MaxConns × 8 KiB more.
//
// A request fasthttp cannot read (431, 413, 408, 400) is answered and its
// connection lingers (hubhttp.AnswerUnreadable), like a body the handler
// left unread (hubhttp.CloseUnread). The admin listener's bounds are
// hub/admin's.

// errOverloaded refuses a delivery past MaxInflight or the body budget
// (503, Retry-After); errTooLarge and errBodyRead are a body over the
// limit (413) and one that did not arrive whole (400).
var (
	errOverloaded = hubhttp.ErrOverloaded
	errTooLarge   = hubhttp.ErrTooLarge
	errBodyRead   = hubhttp.ErrBodyRead
)

// readTimeout bounds the arrival of a whole webhook request.
const readTimeout = 10 * time.Second

// retryAfterSeconds is the Retry-After of every 503 the hub answers for
// overload or an unavailable database.
const retryAfterSeconds = hubhttp.RetryAfterSeconds

// LimitListener returns a listener that accepts at most maxConns connections
// at once from ln (HUB_MAX_CONNS): past the cap a connection is answered
// 503 with Retry-After and closed unread; rejected is called for each.
func LimitListener(ln net.Listener, maxConns int, rejected func()) net.Listener {
	return hubhttp.LimitListener(ln, maxConns, rejected)
}

// inflight is a non-blocking counting semaphore.
type inflight struct{ slots chan struct{} }

func newInflight(n int) *inflight { return &inflight{slots: make(chan struct{}, n)} }

// tryAcquire takes a slot if one is free at once.
func (f *inflight) tryAcquire() bool {
	select {
	case f.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (f *inflight) release() { <-f.slots }

// budget is the webhook listener's body budget (hubhttp.Budget).
type budget struct{ *hubhttp.Budget }

func (b budget) release(n int) { b.Release(n) }

// readBody reads the request body within limit and b (hubhttp.ReadBody).
func readBody(c *fiber.Ctx, limit int, b budget) (body []byte, reserved int, err error) {
	return hubhttp.ReadBody(c, limit, b.Budget)
}
