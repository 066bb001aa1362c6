package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// The states of a Proxy.
const (
	StateOpen        = "open"
	StatePartitioned = "partitioned"
	StateCut         = "cut"
)

const (
	// proxyDialTimeout bounds each dial of an upstream.
	proxyDialTimeout = 2 * time.Second
	// proxyBufSize is what a connection holds per direction while
	// partitioned: one read, then it stops reading.
	proxyBufSize = 32 << 10
	// proxyMaxConns bounds the connections a proxy holds; past it new
	// ones are closed at accept.
	proxyMaxConns = 1024
)

// Proxy is a TCP proxy that injects network faults between a client and
// its upstreams: a partition (bytes stop, nothing is closed or refused) or
// a cut (every connection reset, new ones refused). Each accepted
// connection dials the upstreams round-robin, trying the next one when a
// dial fails, so that with several upstreams it is a small TCP load
// balancer.
type Proxy struct {
	ln        net.Listener
	upstreams []string
	ctx       context.Context // cancelled by Close: ends dials in progress
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	mu     sync.Mutex
	state  string
	gate   chan struct{} // closed while the state is open
	next   int           // the upstream the next connection tries first
	conns  map[*proxyConn]struct{}
	closed bool
}

// proxyConn is one client connection and, once dialed, its upstream.
type proxyConn struct {
	client net.Conn
	done   chan struct{} // closed by close

	mu     sync.Mutex
	up     net.Conn // nil until dialed
	closed bool
}

// NewProxy listens on listen ("127.0.0.1:0" picks a free port) and
// forwards every accepted connection to one of upstreams.
func NewProxy(listen string, upstreams ...string) (*Proxy, error) {
	if len(upstreams) == 0 {
		return nil, errors.New("chaos: proxy: no upstream")
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("chaos: proxy: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gate := make(chan struct{})
	close(gate)
	p := &Proxy{
		ln:        ln,
		upstreams: append([]string(nil), upstreams...),
		ctx:       ctx,
		cancel:    cancel,
		state:     StateOpen,
		gate:      gate,
		conns:     map[*proxyConn]struct{}{},
	}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the address the proxy listens on, as host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// State is StateOpen, StatePartitioned or StateCut.
func (p *Proxy) State() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// Partition makes the proxy a network partition: existing connections
// stop forwarding in both directions (what they have read waits, at most
// one buffer each way, and they stop reading), new connections are
// accepted but not forwarded, and nothing is closed, refused or answered.
// A chunk read before Partition returns may still be delivered; none read
// after it is until Heal.
func (p *Proxy) Partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == StateOpen {
		p.gate = make(chan struct{})
	}
	p.state = StatePartitioned
}

// Cut closes every connection, with a reset where it can (SO_LINGER 0),
// and refuses new ones (closes them at accept) until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	if p.state == StateOpen {
		p.gate = make(chan struct{})
	}
	p.state = StateCut
	conns := p.snapshot()
	p.mu.Unlock()
	for _, pc := range conns {
		pc.close(true)
	}
}

// Heal puts the proxy back to forwarding: stalled connections resume
// where they stopped, without losing a byte.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != StateOpen {
		close(p.gate)
	}
	p.state = StateOpen
}

// Close closes the listener and every connection, and waits until every
// goroutine of the proxy has returned. It is idempotent.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		conns := p.snapshot()
		p.mu.Unlock()
		p.cancel()
		p.closeErr = p.ln.Close()
		for _, pc := range conns {
			pc.close(false)
		}
		p.wg.Wait()
	})
	return p.closeErr
}

// snapshot lists the connections; p.mu is held.
func (p *Proxy) snapshot() []*proxyConn {
	out := make([]*proxyConn, 0, len(p.conns))
	for pc := range p.conns {
		out = append(out, pc)
	}
	return out
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			// A transient failure (out of descriptors): wait a little.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		pc := &proxyConn{client: c, done: make(chan struct{})}
		if !p.register(pc) {
			pc.close(true)
			continue
		}
		p.wg.Go(func() { p.serve(pc) })
	}
}

// register adds pc to the connections unless the proxy is cut, closed or
// full.
func (p *Proxy) register(pc *proxyConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.state == StateCut || len(p.conns) >= proxyMaxConns {
		return false
	}
	p.conns[pc] = struct{}{}
	return true
}

// serve forwards pc until both directions ended or it is closed. A
// partitioned proxy dials the upstream only once healed.
func (p *Proxy) serve(pc *proxyConn) {
	defer func() {
		p.mu.Lock()
		delete(p.conns, pc)
		p.mu.Unlock()
		pc.close(false)
	}()
	if !p.wait(pc) {
		return
	}
	up, err := p.dial()
	if err != nil || !pc.setUp(up) {
		if up != nil {
			_ = up.Close()
		}
		return
	}
	var pipes sync.WaitGroup
	pipes.Go(func() { p.pipe(pc, up, pc.client) })
	pipes.Go(func() { p.pipe(pc, pc.client, up) })
	pipes.Wait()
}

// dial connects to the next upstream in turn, trying the others in order
// when it fails.
func (p *Proxy) dial() (net.Conn, error) {
	p.mu.Lock()
	first := p.next
	p.next = (p.next + 1) % len(p.upstreams)
	p.mu.Unlock()
	d := net.Dialer{Timeout: proxyDialTimeout}
	var errs []error
	for k := range p.upstreams {
		i := (first + k) % len(p.upstreams)
		c, err := d.DialContext(p.ctx, "tcp", p.upstreams[i])
		if err == nil {
			if k > 0 {
				// The next connection starts after the one that answered,
				// so that a dead upstream does not double its successor's
				// share.
				p.mu.Lock()
				p.next = (i + 1) % len(p.upstreams)
				p.mu.Unlock()
			}
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// pipe copies src to dst, waiting while the proxy is not open before each
// read and before passing on what it read (bytes, end of stream or
// error). An end of stream is passed on as a half close.
func (p *Proxy) pipe(pc *proxyConn, dst, src net.Conn) {
	buf := make([]byte, proxyBufSize)
	for {
		if !p.wait(pc) {
			return
		}
		n, err := src.Read(buf)
		if !p.wait(pc) {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				pc.close(true)
				return
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
				return
			}
			pc.close(false)
			return
		default:
			pc.close(true)
			return
		}
	}
}

// wait blocks while the proxy is partitioned or cut, and reports whether
// pc may go on (false once it is closed).
func (p *Proxy) wait(pc *proxyConn) bool {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	select {
	case <-gate:
		select {
		case <-pc.done:
			return false
		default:
			return true
		}
	case <-pc.done:
		return false
	}
}

// setUp records the upstream connection, unless pc was closed meanwhile.
func (pc *proxyConn) setUp(up net.Conn) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.closed {
		return false
	}
	pc.up = up
	return true
}

// close closes both sides, with a reset when reset is set.
func (pc *proxyConn) close(reset bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.closed {
		return
	}
	pc.closed = true
	close(pc.done)
	for _, c := range []net.Conn{pc.client, pc.up} {
		if c == nil {
			continue
		}
		if l, ok := c.(interface{ SetLinger(int) error }); ok && reset {
			_ = l.SetLinger(0)
		}
		_ = c.Close()
	}
}

// proxyStatus is what the control handler's GET / answers.
type proxyStatus struct {
	State       string   `json:"state"`
	Connections int      `json:"connections"`
	Upstreams   []string `json:"upstreams"`
}

func (p *Proxy) status() proxyStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return proxyStatus{State: p.state, Connections: len(p.conns), Upstreams: p.upstreams}
}

// ControlHandler serves the proxy's control API: POST /partition, POST
// /cut and POST /heal change its state; GET / reports
// {"state":...,"connections":N,"upstreams":[...]}, as every POST does
// after its change. Any other path is a 404 and any other method a 405,
// with a JSON error.
func (p *Proxy) ControlHandler() http.Handler {
	actions := map[string]func(){
		"/partition": p.Partition,
		"/cut":       p.Cut,
		"/heal":      p.Heal,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		action, isAction := actions[r.URL.Path]
		switch {
		case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		case r.URL.Path == "/":
			w.Header().Set("Allow", "GET, HEAD")
			proxyJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"})
			return
		case isAction && r.Method == http.MethodPost:
			action()
		case isAction:
			w.Header().Set("Allow", "POST")
			proxyJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"})
			return
		default:
			proxyJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
			return
		}
		proxyJSON(w, http.StatusOK, p.status())
	})
}

func proxyJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
