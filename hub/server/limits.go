package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Overload protection. Four bounds keep a flood of connections or of slow
// requests from growing the hub's memory or starving fresh deliveries:
//
//   - a connection cap (LimitListener): past it a new connection is answered
//     503 with Retry-After at once and closed, before anything is read;
//   - a memory budget for request bodies, MaxInflight × MaxBodyBytes (what
//     MaxInflight full-size requests would hold): bodies are read by the
//     handler (fasthttp's StreamRequestBody) into buffers that grow with the
//     bytes that actually arrive, never with what Content-Length announces,
//     and each growth is reserved from the budget first; past it the
//     request is answered 503 with Retry-After. A slow sender holds only
//     what it sent;
//   - a cap on requests being verified and committed (MaxInflight), taken
//     once the body is complete: past it, 503 with Retry-After;
//   - the read timeout: a whole request, headers and body, must arrive
//     within it, so a slow sender holds its connection and its part of the
//     budget for a bounded time.
//
// Besides the budget, fasthttp reads ahead up to 8 KiB of each request
// before the handler runs: at most MaxConns × 8 KiB more.
//
// The admin listener (ServeAdmin) has bounds of its own, sized to its real
// bodies, and reads no body before it knows who sends it:
//
//   - a connection cap, AdminMaxConns (the same LimitListener), and a
//     quarter of it for one remote address (limitPerAddress);
//   - a body limit chosen from the request's headers before any body byte
//     is read (adminBodyLimit): MaxAdminBodyBytes for a request carrying
//     the admin token; none at all for any other request to /admin/ (an
//     announced body is answered 401 at once, unread); MaxConsoleFormBytes
//     for the console, whose sign-in form comes before any session; and
//     maxOtherAdminBody elsewhere. The path is the one the router will
//     match (routedPath), however the request-target spells it. A body
//     over its limit is answered 413 before it is read;
//   - read timeouts: a request's headers within adminReadTimeout, then its
//     body within adminBodyTimeout.
//
// Its bodies are small, so fasthttp reads them whole before the handler
// runs: at most AdminMaxConns × MaxConsoleFormBytes before authentication.
//
// On both listeners, a request fasthttp cannot read (a request line or
// headers beyond its read buffer: 431; a body over its limit: 413; too
// slow: 408; malformed: 400) is answered and its connection lingers
// (answerUnreadable), like a body the handler left unread (closeUnread).

// errOverloaded refuses a delivery past MaxInflight or the body budget
// (503, Retry-After).
var errOverloaded = errors.New("overloaded: too many requests in flight, retry later")

// readTimeout bounds the arrival of a whole webhook request.
const readTimeout = 10 * time.Second

// retryAfterSeconds is the Retry-After of every 503 the hub answers for
// overload or an unavailable database.
const retryAfterSeconds = 5

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

// budget is a pool of bytes reserved without blocking; gauge, when set,
// shows what is reserved.
type budget struct {
	limit int64
	used  atomic.Int64
	gauge interface{ Add(float64) }
}

// reserve takes n bytes if they are free at once.
func (b *budget) reserve(n int) bool {
	if b.used.Add(int64(n)) > b.limit {
		b.used.Add(-int64(n))
		return false
	}
	if b.gauge != nil {
		b.gauge.Add(float64(n))
	}
	return true
}

func (b *budget) release(n int) {
	if n == 0 {
		return
	}
	b.used.Add(-int64(n))
	if b.gauge != nil {
		b.gauge.Add(-float64(n))
	}
}

// bodyReadKey marks, in a request's locals, that the handler read the
// whole body (see closeUnread).
type bodyReadKey struct{}

// readBody reads the request body as streamed by fasthttp, at most limit
// bytes (a larger body fails with errTooLarge), into a buffer whose
// capacity is reserved from b as it grows (errOverloaded when b has no
// room). The caller releases the returned reservation, in bytes, once it
// no longer holds the body, error or not.
func readBody(c *fiber.Ctx, limit int, b *budget) (body []byte, reserved int, err error) {
	req := c.Request()
	if cl := req.Header.ContentLength(); cl > limit {
		return nil, 0, fmt.Errorf("%w: %d bytes announced, the limit is %d", errTooLarge, cl, limit)
	}
	grow := func(buf []byte, n int) ([]byte, error) {
		if !b.reserve(n) {
			return buf, errOverloaded
		}
		reserved += n
		return slices.Grow(buf, n), nil
	}
	stream := req.BodyStream()
	if stream == nil {
		// Not streamed (no body, or a server built without streaming):
		// copy, because fasthttp reuses its buffer after the handler.
		raw := req.Body()
		if len(raw) > limit {
			return nil, reserved, fmt.Errorf("%w: %d bytes, the limit is %d", errTooLarge, len(raw), limit)
		}
		buf, err := grow(nil, len(raw))
		if err != nil {
			return nil, reserved, err
		}
		c.Locals(bodyReadKey{}, true)
		return append(buf, raw...), reserved, nil
	}
	// Start small and grow with what arrives: a Content-Length is only a
	// claim, and a slow sender must not make the hub hold its full size.
	// The buffer doubles up to the announced length (plus the byte that
	// shows the end), or up to limit+1 for a chunked body.
	want := limit + 1
	if cl := req.Header.ContentLength(); cl >= 0 {
		want = cl + 1
	}
	r := io.LimitReader(stream, int64(limit)+1)
	buf, err := grow(nil, min(want, 16<<10))
	if err != nil {
		return nil, reserved, err
	}
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= want { // more than announced: fasthttp's stream never does that
				return nil, reserved, fmt.Errorf("%w: longer than its Content-Length", errBodyRead)
			}
			if buf, err = grow(buf, min(len(buf), want-len(buf))); err != nil {
				return nil, reserved, err
			}
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case len(buf) > limit:
			return nil, reserved, fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
		case errors.Is(err, io.EOF):
			c.Locals(bodyReadKey{}, true)
			return buf, reserved, nil
		case err != nil:
			return nil, reserved, fmt.Errorf("%w: %w", errBodyRead, err)
		}
	}
}

// errBodyRead is a body that did not arrive whole (the client went away
// or was too slow): answered 400, nothing archived.
var errBodyRead = errors.New("request body not received whole")

// Bounds of the admin listener (see above).
const (
	// DefaultAdminMaxConns is the admin listener's connection cap
	// (HUB_ADMIN_MAX_CONNS): probes, Prometheus and a few operators.
	DefaultAdminMaxConns = 256
	// MaxAdminBodyBytes bounds an admin API request's body, read only once
	// its bearer token is checked: its JSON objects are a few hundred
	// bytes.
	MaxAdminBodyBytes = 64 << 10
	// MaxConsoleFormBytes bounds a body the admin listener reads for the
	// console (hub/console), its sign-in form included, before any
	// session is known: its forms are a few hundred bytes. The console's
	// own bound on a form must not exceed it.
	MaxConsoleFormBytes = 16 << 10
	// maxOtherAdminBody bounds any other body on the admin listener:
	// /metrics, /healthz and /readyz take none, pprof's symbol look-up a
	// few addresses.
	maxOtherAdminBody = 4 << 10
	// adminReadTimeout bounds the arrival of an admin request's headers
	// (and of the whole request), adminBodyTimeout that of its body once
	// the headers are in.
	adminReadTimeout = 10 * time.Second
	adminBodyTimeout = 5 * time.Second
)

// adminBodyLimit is the admin listener's fasthttp HeaderReceived hook: it
// chooses a request's body limit and read timeout from its headers,
// before fasthttp reads any of the body.
func (s *Server) adminBodyLimit(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	limit := maxOtherAdminBody
	switch {
	case s.adminAuthorized(h.Peek(fiber.HeaderAuthorization)):
		limit = MaxAdminBodyBytes
	case s.refusesAdminBody(h):
		limit = 1 // the least fasthttp takes: an announced body is refused
	case strings.HasPrefix(routedPath(h), "/console"):
		limit = MaxConsoleFormBytes
	}
	return fasthttp.RequestConfig{MaxRequestBodySize: limit, ReadTimeout: adminBodyTimeout}
}

// refusesAdminBody reports whether h is a request to the admin API
// without its token: such a request is answered 401 without its body
// being read.
func (s *Server) refusesAdminBody(h *fasthttp.RequestHeader) bool {
	return s.cfg.AdminToken != "" && strings.HasPrefix(routedPath(h), "/admin") &&
		!s.adminAuthorized(h.Peek(fiber.HeaderAuthorization))
}

// routedPath is the path the router will match h's request against, as
// fiber finds it: the request URI's PathOriginal (the path of an
// absolute-form target such as "http://host/admin/x" included), neither
// decoded nor cleaned, lower-cased. A group's middleware (app.Group) runs
// for every path with its prefix, "/administrator" as well as "/admin/x".
// Reading the raw request-target instead would miss the absolute form,
// whose body would then be read before the token is checked.
func routedPath(h *fasthttp.RequestHeader) string {
	u := fasthttp.AcquireURI()
	defer fasthttp.ReleaseURI(u)
	_ = u.Parse(h.Host(), h.RequestURI()) // as fasthttp's Request.URI: an error leaves what it parsed
	return strings.ToLower(string(u.PathOriginal()))
}

// answerUnreadable wraps the ErrorHandler of app's fasthttp server, which
// answers a request fasthttp could not read (see the top of this file).
// Such a connection closes after the answer with the client's bytes
// unread: it lingers (limitConn.Close) so that the client reads the answer
// rather than a reset. An admin API request without its token whose
// announced body was refused unread is answered 401, as if the body had
// been read.
func (s *Server) answerUnreadable(app *fiber.App) {
	srv := app.Server()
	answer := srv.ErrorHandler
	srv.ErrorHandler = func(ctx *fasthttp.RequestCtx, err error) {
		lingerOnClose(ctx)
		if errors.Is(err, fasthttp.ErrBodyTooLarge) && s.refusesAdminBody(&ctx.Request.Header) {
			unauthorized(&ctx.Response)
			return
		}
		answer(ctx, err)
	}
}

// lingerOnClose makes the connection of ctx close after this answer,
// lingering first when it came through LimitListener.
func lingerOnClose(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.SetConnectionClose()
	if l, ok := ctx.Conn().(interface{ lingerOnClose() }); ok {
		l.lingerOnClose()
	}
}

// closeUnread closes the connection after a request whose body the
// handler did not read to the end. With bodies streamed, fasthttp would
// otherwise read the rest of that body as the next request on the
// connection: a request smuggled through a keep-alive connection shared
// by a proxy.
//
// The client may still be sending that body: closed at once, the
// connection would answer it with a reset, which can destroy the answer
// before the client reads it (a 413 seen as "connection reset by peer").
// A connection of LimitListener therefore lingers (see limitConn.Close).
func closeUnread(c *fiber.Ctx) error {
	err := c.Next()
	if cl := c.Request().Header.ContentLength(); cl != 0 && cl != -2 && c.Locals(bodyReadKey{}) == nil {
		lingerOnClose(c.Context())
	}
	return err
}

// lingerDelay is how long, at most, a connection closed with the client's
// bytes unread stays half-closed (our answer and FIN sent) before it is
// closed: the client reads the answer first, as with Go's net/http server
// (its rstAvoidanceDelay). Closed at once, the connection would answer
// those bytes with a reset, which can destroy the answer before the client
// reads it. The connection keeps its place under its listener's cap
// meanwhile.
const lingerDelay = 500 * time.Millisecond

// lingerClose half-closes c, reads and drops what the client still sends
// until it closes its side or lingerDelay passes, then closes c: nothing
// is left unread to provoke a reset while the client may still be reading
// the answer, and a client that hangs up frees the connection at once.
// Every connection the hub closes with the client's bytes unread ends
// here.
func lingerClose(c *net.TCPConn) {
	defer c.Close()
	if err := c.CloseWrite(); err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(lingerDelay))
	_, _ = io.Copy(io.Discard, c)
}

// LimitListener returns a listener that accepts at most max connections
// at once from ln. A connection past the cap is answered
// "503 Service Unavailable" with Retry-After and closed without reading
// its request; rejected is called for each. Closing a connection accepted
// through the listener frees its place.
func LimitListener(ln net.Listener, max int, rejected func()) net.Listener {
	if rejected == nil {
		rejected = func() {}
	}
	return &limitListener{Listener: ln, max: int64(max), rejected: rejected, refusing: newInflight(64)}
}

// adminShareDivisor: on the admin listener one remote address holds at
// most AdminMaxConns/adminShareDivisor connections at once (at least one).
// Its cap is small (probes, Prometheus, a few operators), and idle or
// slow connections are cheap to hold: without a share, one client holding
// AdminMaxConns connections that send nothing (each for adminReadTimeout,
// then opened again) or that idle after one request would keep Prometheus
// and the operators out.
const adminShareDivisor = 4

// limitPerAddress makes l refuse, as past its cap, a connection whose
// remote address already holds perAddr.
func (l *limitListener) limitPerAddress(perAddr int) {
	l.perAddr = max(1, perAddr)
	l.byAddr = map[string]int{}
}

// admit counts c under the per-address share, if any; false when its
// address holds its share already.
func (l *limitListener) admit(c net.Conn) (key string, ok bool) {
	a, tcp := c.RemoteAddr().(*net.TCPAddr)
	if l.byAddr == nil || !tcp { // a Unix socket's peers have no address to tell apart
		return "", true
	}
	key = a.IP.String()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byAddr[key] >= l.perAddr {
		return "", false
	}
	l.byAddr[key]++
	return key, true
}

// leave uncounts a connection of key admitted by admit.
func (l *limitListener) leave(key string) {
	if l.byAddr == nil || key == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byAddr[key]--; l.byAddr[key] <= 0 {
		delete(l.byAddr, key)
	}
}

type limitListener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	rejected func()
	// refusing bounds the goroutines that write 503s; past it a
	// connection is closed without an answer.
	refusing *inflight
	// perAddr, when byAddr is set, caps the connections of one remote
	// address (limitPerAddress).
	perAddr int
	mu      sync.Mutex
	byAddr  map[string]int
}

// overloadBody and overloadResponse are what a connection past the cap
// reads.
const (
	overloadBody     = `{"error":"overloaded: too many connections, retry later"}`
	overloadResponse = "HTTP/1.1 503 Service Unavailable\r\n" +
		"Content-Type: application/json\r\n" +
		"Retry-After: 5\r\n" +
		"Connection: close\r\n" +
		"Content-Length: 57\r\n\r\n" + overloadBody
)

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			if key, ok := l.admit(c); ok {
				return &limitConn{Conn: c, l: l, addr: key}, nil
			}
		}
		l.open.Add(-1)
		l.rejected()
		if !l.refusing.tryAcquire() {
			_ = c.Close()
			continue
		}
		go l.refuse(c)
	}
}

// refuse answers 503 and closes c, lingering (lingerClose) so that the
// client reads the answer rather than a reset.
func (l *limitListener) refuse(c net.Conn) {
	defer l.refusing.release()
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, err := io.WriteString(c, overloadResponse)
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		lingerClose(tc)
		return
	}
	_ = c.Close()
}

type limitConn struct {
	net.Conn
	l      *limitListener
	addr   string // its key under l's per-address share
	once   sync.Once
	linger atomic.Bool
}

// lingerOnClose makes the next Close linger (closeUnread).
func (c *limitConn) lingerOnClose() { c.linger.Store(true) }

func (c *limitConn) Close() error {
	if tc, ok := c.Conn.(*net.TCPConn); ok && c.linger.CompareAndSwap(true, false) {
		go func() {
			defer c.release()
			lingerClose(tc)
		}()
		return nil
	}
	err := c.Conn.Close()
	c.release()
	return err
}

func (c *limitConn) release() {
	c.once.Do(func() {
		c.l.leave(c.addr)
		c.l.open.Add(-1)
	})
}
