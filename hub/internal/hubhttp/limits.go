package hubhttp

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

// On both listeners, a request fasthttp cannot read (a request line or
// headers beyond its read buffer: 431; a body over its limit: 413; too
// slow: 408; malformed: 400) is answered and its connection lingers
// (AnswerUnreadable), like a body the handler left unread (CloseUnread).

// ErrOverloaded refuses a request past the webhook listener's MaxInflight
// or the body budget (503, Retry-After).
var ErrOverloaded = errors.New("overloaded: too many requests in flight, retry later")

// ErrTooLarge is a body over its limit (413).
var ErrTooLarge = errors.New("body too large")

// ErrBodyRead is a body that did not arrive whole (the client went away
// or was too slow): answered 400, nothing archived.
var ErrBodyRead = errors.New("request body not received whole")

// RetryAfterSeconds is the Retry-After of every 503 the hub answers for
// overload or an unavailable database.
const RetryAfterSeconds = 5

// Budget is a pool of bytes reserved without blocking, for request
// bodies; its gauge, when set, shows what is reserved.
type Budget struct {
	limit int64
	used  atomic.Int64
	gauge interface{ Add(float64) }
}

// NewBudget returns a budget of limit bytes; gauge, when not nil, follows
// what is reserved.
func NewBudget(limit int64, gauge interface{ Add(float64) }) *Budget {
	return &Budget{limit: limit, gauge: gauge}
}

// Reserve takes n bytes if they are free at once.
func (b *Budget) Reserve(n int) bool {
	if b.used.Add(int64(n)) > b.limit {
		b.used.Add(-int64(n))
		return false
	}
	if b.gauge != nil {
		b.gauge.Add(float64(n))
	}
	return true
}

// Release gives back n bytes taken by Reserve.
func (b *Budget) Release(n int) {
	if n == 0 {
		return
	}
	b.used.Add(-int64(n))
	if b.gauge != nil {
		b.gauge.Add(-float64(n))
	}
}

// bodyReadKey marks, in a request's locals, that the handler read the
// whole body (see CloseUnread).
type bodyReadKey struct{}

// ReadBody reads the request body as streamed by fasthttp, at most limit
// bytes (a larger body fails with ErrTooLarge), into a buffer whose
// capacity is reserved from b as it grows (ErrOverloaded when b has no
// room). The caller releases the returned reservation, in bytes, once it
// no longer holds the body, error or not.
func ReadBody(c *fiber.Ctx, limit int, b *Budget) (body []byte, reserved int, err error) {
	req := c.Request()
	if cl := req.Header.ContentLength(); cl > limit {
		return nil, 0, fmt.Errorf("%w: %d bytes announced, the limit is %d", ErrTooLarge, cl, limit)
	}
	grow := func(buf []byte, n int) ([]byte, error) {
		if !b.Reserve(n) {
			return buf, ErrOverloaded
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
			return nil, reserved, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(raw), limit)
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
				return nil, reserved, fmt.Errorf("%w: longer than its Content-Length", ErrBodyRead)
			}
			if buf, err = grow(buf, min(len(buf), want-len(buf))); err != nil {
				return nil, reserved, err
			}
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case len(buf) > limit:
			return nil, reserved, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
		case errors.Is(err, io.EOF):
			c.Locals(bodyReadKey{}, true)
			return buf, reserved, nil
		case err != nil:
			return nil, reserved, fmt.Errorf("%w: %w", ErrBodyRead, err)
		}
	}
}

// RoutedPath is the path the router will match h's request against, as
// fiber finds it: the request URI's PathOriginal (the path of an
// absolute-form target such as "http://host/admin/x" included), neither
// decoded nor cleaned, lower-cased. A group's middleware (app.Group) runs
// for every path with its prefix, "/administrator" as well as "/admin/x".
// Reading the raw request-target instead would miss the absolute form,
// whose body would then be read before the token is checked.
func RoutedPath(h *fasthttp.RequestHeader) string {
	u := fasthttp.AcquireURI()
	defer fasthttp.ReleaseURI(u)
	_ = u.Parse(h.Host(), h.RequestURI()) // as fasthttp's Request.URI: an error leaves what it parsed
	return strings.ToLower(string(u.PathOriginal()))
}

// AnswerUnreadable wraps the ErrorHandler of app's fasthttp server, which
// answers a request fasthttp could not read (see the top of this file).
// Such a connection closes after the answer with the client's bytes
// unread: it lingers (limitConn.Close) so that the client reads the answer
// rather than a reset. Wrappers added later (hub/admin's) run first.
func AnswerUnreadable(app *fiber.App) {
	srv := app.Server()
	answer := srv.ErrorHandler
	srv.ErrorHandler = func(ctx *fasthttp.RequestCtx, err error) {
		LingerOnClose(ctx)
		answer(ctx, err)
	}
}

// LingerOnClose makes the connection of ctx close after this answer,
// lingering first when it came through LimitListener.
func LingerOnClose(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.SetConnectionClose()
	if l, ok := ctx.Conn().(interface{ lingerOnClose() }); ok {
		l.lingerOnClose()
	}
}

// CloseUnread closes the connection after a request whose body the
// handler did not read to the end. With bodies streamed, fasthttp would
// otherwise read the rest of that body as the next request on the
// connection: a request smuggled through a keep-alive connection shared
// by a proxy.
//
// The client may still be sending that body: closed at once, the
// connection would answer it with a reset, which can destroy the answer
// before the client reads it (a 413 seen as "connection reset by peer").
// A connection of LimitListener therefore lingers (see limitConn.Close).
func CloseUnread(c *fiber.Ctx) error {
	err := c.Next()
	if cl := c.Request().Header.ContentLength(); cl != 0 && cl != -2 && c.Locals(bodyReadKey{}) == nil {
		LingerOnClose(c.Context())
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
	return newLimitListener(ln, max, rejected)
}

// LimitListenerPerAddress is LimitListener that also refuses, as past its
// cap, a connection whose remote address already holds perAddr (at
// least one). Peers of a Unix socket, which have no address to tell
// apart, are not counted.
func LimitListenerPerAddress(ln net.Listener, maxConns, perAddr int, rejected func()) net.Listener {
	l := newLimitListener(ln, maxConns, rejected)
	l.perAddr = max(1, perAddr)
	l.byAddr = map[string]int{}
	return l
}

func newLimitListener(ln net.Listener, max int, rejected func()) *limitListener {
	if rejected == nil {
		rejected = func() {}
	}
	return &limitListener{Listener: ln, max: int64(max), rejected: rejected, refusing: make(chan struct{}, 64)}
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
	// refusing bounds the goroutines that write 503s (a non-blocking
	// semaphore); past it a connection is closed without an answer.
	refusing chan struct{}
	// perAddr, when byAddr is set, caps the connections of one remote
	// address (LimitListenerPerAddress).
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
		select {
		case l.refusing <- struct{}{}:
			go l.refuse(c)
		default:
			_ = c.Close()
		}
	}
}

// refuse answers 503 and closes c, lingering (lingerClose) so that the
// client reads the answer rather than a reset.
func (l *limitListener) refuse(c net.Conn) {
	defer func() { <-l.refusing }()
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

// lingerOnClose makes the next Close linger (CloseUnread).
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
