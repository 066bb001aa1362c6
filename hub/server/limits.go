package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
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
		c.Response().Header.SetConnectionClose()
		if l, ok := c.Context().Conn().(interface{ lingerOnClose() }); ok {
			l.lingerOnClose()
		}
	}
	return err
}

// lingerDelay is how long a connection closed with a request body unread
// stays half-closed (our answer and FIN sent, the client's bytes left
// unread) before it is closed: the client reads the answer first, as Go's
// net/http server does (its rstAvoidanceDelay). The connection keeps its
// place under HUB_MAX_CONNS meanwhile.
const lingerDelay = 500 * time.Millisecond

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

type limitListener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	rejected func()
	// refusing bounds the goroutines that write 503s; past it a
	// connection is closed without an answer.
	refusing *inflight
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
			return &limitConn{Conn: c, l: l}, nil
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

// refuse answers 503 and closes c. It half-closes first and reads what the
// client sent meanwhile (briefly), so that the client reads the answer
// rather than a reset.
func (l *limitListener) refuse(c net.Conn) {
	defer l.refusing.release()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, overloadResponse); err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

type limitConn struct {
	net.Conn
	l      *limitListener
	once   sync.Once
	linger atomic.Bool
}

// lingerOnClose makes the next Close linger (closeUnread).
func (c *limitConn) lingerOnClose() { c.linger.Store(true) }

func (c *limitConn) Close() error {
	if tc, ok := c.Conn.(*net.TCPConn); ok && c.linger.CompareAndSwap(true, false) {
		err := tc.CloseWrite()
		time.AfterFunc(lingerDelay, func() {
			_ = tc.Close()
			c.release()
		})
		return err
	}
	err := c.Conn.Close()
	c.release()
	return err
}

func (c *limitConn) release() { c.once.Do(func() { c.l.open.Add(-1) }) }
