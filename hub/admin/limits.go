package admin

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/hookhub/hookhub/hub/console"
	"github.com/hookhub/hookhub/hub/internal/hubhttp"
)

// The admin listener (Serve) has bounds of its own, sized to its real
// bodies, and reads no body before it knows who sends it:
//
//   - a connection cap, MaxConns, and a quarter of it for one remote
//     address (hubhttp.LimitListenerPerAddress);
//   - a body limit chosen from the request's headers before any body byte
//     is read (bodyLimit): MaxBodyBytes for a request carrying the admin
//     token; none at all for any other request to /admin/ (an announced
//     body is answered 401 at once, unread); console.MaxFormBytes for the
//     console, whose sign-in form comes before any session; and
//     maxOtherBody elsewhere. The path is the one the router will match
//     (hubhttp.RoutedPath), however the request-target spells it. A body
//     over its limit is answered 413 before it is read;
//   - read timeouts: a request's headers within readTimeout, then its
//     body within bodyTimeout.
//
// Its bodies are small, so fasthttp reads them whole before the handler
// runs: at most MaxConns × console.MaxFormBytes before authentication.
//
// A request fasthttp cannot read (431, 413, 408, 400) is answered and its
// connection lingers (hubhttp.AnswerUnreadable), as on the webhook
// listener.

const (
	// DefaultMaxConns is the admin listener's connection cap
	// (HUB_ADMIN_MAX_CONNS): probes, Prometheus and a few operators.
	DefaultMaxConns = 256
	// MaxBodyBytes bounds an admin API request's body, read only once its
	// bearer token is checked: its JSON objects are a few hundred bytes.
	MaxBodyBytes = 64 << 10
	// maxOtherBody bounds any other body on the admin listener: /metrics,
	// /healthz and /readyz take none, pprof's symbol look-up a few
	// addresses.
	maxOtherBody = 4 << 10
	// readTimeout bounds the arrival of an admin request's headers (and
	// of the whole request), bodyTimeout that of its body once the
	// headers are in.
	readTimeout = 10 * time.Second
	bodyTimeout = 5 * time.Second
)

// shareDivisor: on the admin listener one remote address holds at most
// MaxConns/shareDivisor connections at once (at least one). Its cap is
// small (probes, Prometheus, a few operators), and idle or slow
// connections are cheap to hold: without a share, one client holding
// MaxConns connections that send nothing (each for readTimeout, then
// opened again) or that idle after one request would keep Prometheus and
// the operators out.
const shareDivisor = 4

// bodyLimit is the admin listener's fasthttp HeaderReceived hook: it
// chooses a request's body limit and read timeout from its headers,
// before fasthttp reads any of the body.
func (s *Server) bodyLimit(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	limit := maxOtherBody
	switch {
	case s.authorized(h.Peek(fiber.HeaderAuthorization)):
		limit = MaxBodyBytes
	case s.refusesBody(h):
		limit = 1 // the least fasthttp takes: an announced body is refused
	case strings.HasPrefix(hubhttp.RoutedPath(h), "/console"):
		limit = console.MaxFormBytes
	}
	return fasthttp.RequestConfig{MaxRequestBodySize: limit, ReadTimeout: bodyTimeout}
}

// refusesBody reports whether h is a request to the admin API without
// its token: such a request is answered 401 without its body being read.
func (s *Server) refusesBody(h *fasthttp.RequestHeader) bool {
	return s.cfg.Token != "" && strings.HasPrefix(hubhttp.RoutedPath(h), "/admin") &&
		!s.authorized(h.Peek(fiber.HeaderAuthorization))
}

// answerUnauthorizedUnread wraps the ErrorHandler of app's fasthttp
// server (hubhttp.AnswerUnreadable): an admin API request without its
// token whose announced body was refused unread is answered 401, as if
// the body had been read, and its connection lingers.
func (s *Server) answerUnauthorizedUnread(app *fiber.App) {
	srv := app.Server()
	answer := srv.ErrorHandler
	srv.ErrorHandler = func(ctx *fasthttp.RequestCtx, err error) {
		if errors.Is(err, fasthttp.ErrBodyTooLarge) && s.refusesBody(&ctx.Request.Header) {
			hubhttp.LingerOnClose(ctx)
			s.cfg.Metrics.AdminUnauthorized.Inc()
			unauthorized(&ctx.Response)
			return
		}
		answer(ctx, err)
	}
}
