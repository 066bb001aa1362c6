package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer is an upstream that echoes every connection and counts them.
type echoServer struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func newEchoServer(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() {
				_, _ = io.Copy(c, c)
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
			})
		}
	})
	t.Cleanup(s.close)
	return s
}

func (s *echoServer) addr() string { return s.ln.Addr().String() }

func (s *echoServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// deadAddr is an address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func newTestProxy(t *testing.T, upstreams ...string) *Proxy {
	t.Helper()
	p, err := NewProxy("127.0.0.1:0", upstreams...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dialProxy(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg and reads its echo within timeout.
func roundTrip(c net.Conn, msg string, timeout time.Duration) error {
	_ = c.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := io.WriteString(c, msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if string(got) != msg {
		return errors.New("echo differs: " + string(got))
	}
	return nil
}

func TestProxyForwardsRoundRobin(t *testing.T) {
	tests := []struct {
		name  string
		alive []bool // one upstream each, dead where false
		conns int
		want  []int64 // connections each upstream accepted
	}{
		{"one upstream", []bool{true}, 3, []int64{3}},
		{"round robin", []bool{true, true, true}, 6, []int64{2, 2, 2}},
		{"skips a dead upstream", []bool{false, true, true}, 4, []int64{0, 2, 2}},
		{"dead between live", []bool{true, false, true}, 4, []int64{2, 0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var addrs []string
			servers := make([]*echoServer, len(tt.alive))
			for i, alive := range tt.alive {
				if alive {
					servers[i] = newEchoServer(t)
					addrs = append(addrs, servers[i].addr())
				} else {
					addrs = append(addrs, deadAddr(t))
				}
			}
			p := newTestProxy(t, addrs...)
			for i := range tt.conns {
				c := dialProxy(t, p)
				if err := roundTrip(c, "hello "+string(rune('a'+i)), 5*time.Second); err != nil {
					t.Fatalf("connection %d: %v", i, err)
				}
			}
			for i, s := range servers {
				var got int64
				if s != nil {
					got = s.accepted.Load()
				}
				if got != tt.want[i] {
					t.Errorf("upstream %d accepted %d connections, want %d", i, got, tt.want[i])
				}
			}
			if st := p.status(); st.Connections != tt.conns || st.State != StateOpen {
				t.Errorf("status %+v, want %d connections, open", st, tt.conns)
			}
		})
	}
}

func TestProxyAllUpstreamsDead(t *testing.T) {
	p := newTestProxy(t, deadAddr(t), deadAddr(t))
	c := dialProxy(t, p)
	if err := roundTrip(c, "x", 5*time.Second); err == nil {
		t.Fatal("round trip through a proxy with no live upstream succeeded")
	}
}

// TestProxyPartitionThenHeal sends a known stream through an echo
// upstream, partitions the proxy midway, checks that nothing moves, heals
// it and checks that every byte came back, in order.
func TestProxyPartitionThenHeal(t *testing.T) {
	up := newEchoServer(t)
	p := newTestProxy(t, up.addr())
	c := dialProxy(t, p)
	want := make([]byte, 4<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	var received atomic.Int64
	got := make(chan []byte, 1)
	go func() {
		var buf bytes.Buffer
		chunk := make([]byte, 16<<10)
		for buf.Len() < len(want) {
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			n, err := c.Read(chunk)
			buf.Write(chunk[:n])
			received.Store(int64(buf.Len()))
			if err != nil {
				break
			}
		}
		got <- buf.Bytes()
	}()
	// The first megabyte goes through before the partition, the rest is
	// sent during it.
	const half = 1 << 20
	if _, err := c.Write(want[:half]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the first megabyte", func() bool { return received.Load() == half })
	p.Partition()
	if s := p.State(); s != StatePartitioned {
		t.Fatalf("state %q", s)
	}
	go func() { _, _ = c.Write(want[half:]) }()
	time.Sleep(500 * time.Millisecond)
	if now := received.Load(); now != half {
		t.Fatalf("partitioned proxy forwarded: %d bytes received, %d before the partition", now, half)
	}

	// A connection made during the partition is accepted but neither
	// forwarded nor answered.
	before := up.accepted.Load()
	late := dialProxy(t, p)
	if err := roundTrip(late, "late", 300*time.Millisecond); err == nil {
		t.Fatal("a connection made during the partition was answered")
	}
	if n := up.accepted.Load(); n != before {
		t.Fatalf("upstream accepted %d connections during the partition", n-before)
	}

	p.Heal()
	select {
	case b := <-got:
		if !bytes.Equal(b, want) {
			t.Fatalf("got %d bytes back, want the %d sent, in order", len(b), len(want))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("stream not complete 30s after Heal: %d of %d bytes", received.Load(), len(want))
	}
	// The late connection's bytes were held, not lost.
	buf := make([]byte, 4)
	_ = late.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(late, buf); err != nil || string(buf) != "late" {
		t.Fatalf("late connection after Heal: %q, %v", buf, err)
	}
}

func TestProxyCutResetsAndRefuses(t *testing.T) {
	up := newEchoServer(t)
	p := newTestProxy(t, up.addr())
	c := dialProxy(t, p)
	if err := roundTrip(c, "before", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if s := p.State(); s != StateCut {
		t.Fatalf("state %q", s)
	}
	if err := roundTrip(c, "after", 5*time.Second); err == nil {
		t.Fatal("a cut connection still forwards")
	}
	// New connections are closed at accept.
	for range 3 {
		n, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
		if err != nil {
			continue // reset before the dial returned: refused too
		}
		t.Cleanup(func() { _ = n.Close() })
		_ = n.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = n.Read(make([]byte, 1))
		var ne net.Error
		if err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("a connection to a cut proxy read %v, want it closed", err)
		}
	}
	waitFor(t, 5*time.Second, "no connection left", func() bool { return p.status().Connections == 0 })
	p.Heal()
	if err := roundTrip(dialProxy(t, p), "healed", 5*time.Second); err != nil {
		t.Fatalf("after Heal: %v", err)
	}
}

func TestProxyCloseLeavesNoGoroutines(t *testing.T) {
	base := runtime.NumGoroutine()
	up := newEchoServer(t)
	p, err := NewProxy("127.0.0.1:0", up.addr(), deadAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	var clients []net.Conn
	for i := range 6 {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		if i == 3 {
			p.Partition() // two connections wait for Heal to be dialed
			continue
		}
		if i < 3 {
			if err := roundTrip(c, "x", 5*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, 5*time.Second, "6 connections", func() bool { return p.status().Connections == 6 })
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if n := p.status().Connections; n != 0 {
		t.Fatalf("%d connections after Close", n)
	}
	for _, c := range clients {
		_ = c.Close()
	}
	up.close()
	waitFor(t, 5*time.Second, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
}

func TestProxyControlHandler(t *testing.T) {
	up := newEchoServer(t)
	p := newTestProxy(t, up.addr())
	h := p.ControlHandler()
	tests := []struct {
		method, path string
		code         int
		state        string // "" for an error answer
	}{
		{"GET", "/", 200, StateOpen},
		{"POST", "/partition", 200, StatePartitioned},
		{"GET", "/", 200, StatePartitioned},
		{"POST", "/cut", 200, StateCut},
		{"POST", "/heal", 200, StateOpen},
		{"HEAD", "/", 200, ""},
		{"POST", "/", 405, ""},
		{"DELETE", "/", 405, ""},
		{"GET", "/partition", 405, ""},
		{"PUT", "/cut", 405, ""},
		{"GET", "/heal", 405, ""},
		{"GET", "/nope", 404, ""},
		{"POST", "/partition/", 404, ""},
		{"POST", "//cut", 404, ""},
		{"BREW", "/%00", 404, ""},
		{"GET", "/?state=cut", 200, StateOpen},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, "http://proxy"+tt.path, strings.NewReader("{}")))
			if rec.Code != tt.code {
				t.Fatalf("code %d, want %d: %s", rec.Code, tt.code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
			if tt.method == "HEAD" {
				return
			}
			var body struct {
				State       string   `json:"state"`
				Connections *int     `json:"connections"`
				Upstreams   []string `json:"upstreams"`
				Error       string   `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if tt.state == "" {
				if body.Error == "" || body.State != "" {
					t.Fatalf("want a JSON error, got %s", rec.Body)
				}
				return
			}
			if body.State != tt.state || body.Connections == nil || len(body.Upstreams) != 1 || body.Upstreams[0] != up.addr() {
				t.Fatalf("body %s, want state %q, connections and upstreams", rec.Body, tt.state)
			}
			if got := p.State(); got != tt.state {
				t.Fatalf("proxy state %q, want %q", got, tt.state)
			}
		})
	}
}

// TestProxyControlHandlerOverHTTP drives the handler through a real
// server with odd requests: none may break it.
func TestProxyControlHandlerOverHTTP(t *testing.T) {
	p := newTestProxy(t, deadAddr(t))
	srv := httptest.NewServer(p.ControlHandler())
	t.Cleanup(srv.Close)
	for _, req := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /cut?x=%zz HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
		"POST /heal HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://other/partition HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /\x7f HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(c, req)
		line, _ := io.ReadAll(io.LimitReader(c, 64))
		_ = c.Close()
		if !strings.HasPrefix(string(line), "HTTP/1.1 ") {
			t.Errorf("%q: answer %q", req, line)
		}
	}
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || p.State() != StateOpen {
		t.Fatalf("after odd requests: %d, state %s", resp.StatusCode, p.State())
	}
}

// FuzzProxyControlHandler: no method, path or body makes the handler
// panic or answer anything but JSON with a known code.
func FuzzProxyControlHandler(f *testing.F) {
	for _, seed := range [][2]string{
		{"GET", "/"}, {"POST", "/cut"}, {"POST", "/heal"}, {"POST", "/partition"},
		{"DELETE", "/heal"}, {"", ""}, {"GET", "/../cut"}, {"POST", "/cut\x00"},
	} {
		f.Add(seed[0], seed[1], []byte("{}"))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	p, err := NewProxy("127.0.0.1:0", addr)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = p.Close() })
	h := p.ControlHandler()
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		req := &http.Request{Method: method, URL: &url.URL{Path: path}, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 404, 405:
		default:
			t.Fatalf("%q %q: code %d", method, path, rec.Code)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%q %q: body %q is not JSON", method, path, rec.Body)
		}
	})
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: timed out after %s", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
