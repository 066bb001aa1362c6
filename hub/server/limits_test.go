package server

import (
	"crypto/sha256"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

const testAdminToken = "admin-token-0123456789abcdef0123456789"

func adminLimitServer() *Server {
	return &Server{cfg: Config{AdminToken: testAdminToken}, adminTokenSum: sha256.Sum256([]byte(testAdminToken))}
}

func requestHeader(uri, auth string) *fasthttp.RequestHeader {
	var h fasthttp.RequestHeader
	h.SetMethod(fasthttp.MethodPost)
	h.SetRequestURI(uri)
	if auth != "" {
		h.Set(fasthttp.HeaderAuthorization, auth)
	}
	return &h
}

func TestAdminBodyLimit(t *testing.T) {
	s := adminLimitServer()
	bearer := "Bearer " + testAdminToken
	cases := []struct {
		uri, auth string
		want      int
	}{
		{"/admin/replay", bearer, MaxAdminBodyBytes},
		{"/admin/replay", "bearer   " + testAdminToken, MaxAdminBodyBytes},
		{"/metrics", bearer, MaxAdminBodyBytes}, // the token's holder may do anything
		{"/admin/replay", "", 1},
		{"/admin", "", 1},
		{"/admin?x=1", "", 1},
		{"/ADMIN/replay", "", 1},
		{"/admin/replay", "Bearer " + testAdminToken + "x", 1},
		{"/admin/replay", "Basic " + testAdminToken, 1},
		{"/administrator", "", 1}, // the /admin group's middleware runs for it (a plain prefix)
		{"/admin;x/replay", "", 1},
		{"/admin%2Freplay", "", 1},
		{"/console/login", "", MaxConsoleFormBytes},
		{"/Console/login", "", MaxConsoleFormBytes},
		{"/console", "", MaxConsoleFormBytes},
		{"/consoles", "", MaxConsoleFormBytes},
		{"//admin/replay", "", maxOtherAdminBody}, // the router finds no route
		{"/%61dmin/replay", "", maxOtherAdminBody},
		{"/metrics", "", maxOtherAdminBody},
		{"/debug/pprof/symbol", "", maxOtherAdminBody},
		{"http://hub/admin/replay", "", 1}, // absolute form: routed to /admin/replay
		{"HTTPS://hub:1/ADMIN", "", 1},
		{"http://hub/console/login", "", MaxConsoleFormBytes},
		{"", "", maxOtherAdminBody},
	}
	for _, tc := range cases {
		t.Run(tc.uri+" "+tc.auth, func(t *testing.T) {
			got := s.adminBodyLimit(requestHeader(tc.uri, tc.auth))
			if got.MaxRequestBodySize != tc.want || got.ReadTimeout != adminBodyTimeout {
				t.Fatalf("got %d, %s; want %d, %s", got.MaxRequestBodySize, got.ReadTimeout, tc.want, adminBodyTimeout)
			}
		})
	}
	// Without an admin token nothing is authorized, and /admin/ is no
	// route: the default limit.
	off := &Server{}
	if got := off.adminBodyLimit(requestHeader("/admin/replay", "Bearer ")); got.MaxRequestBodySize != maxOtherAdminBody {
		t.Fatalf("admin API off: got %d", got.MaxRequestBodySize)
	}
}

// FuzzAdminBodyLimit: whatever the request-target and Authorization
// header, the limit is one of the four, the admin API's only with the
// token, and an /admin/ request without it may send no body.
func FuzzAdminBodyLimit(f *testing.F) {
	for _, seed := range [][2]string{
		{"/admin/replay", "Bearer " + testAdminToken}, {"/admin", ""}, {"/ADMIN/x", "bearer x"},
		{"/console/login", ""}, {"/metrics", ""}, {"//admin", ""}, {"/admin%2f", ""}, {"*", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	s := adminLimitServer()
	f.Fuzz(func(t *testing.T, uri, auth string) {
		h := requestHeader(uri, auth)
		got := s.adminBodyLimit(h).MaxRequestBodySize
		authorized := s.adminAuthorized(h.Peek(fasthttp.HeaderAuthorization))
		// What the router matches: the parsed URI's path, as fiber takes it.
		var u fasthttp.URI
		_ = u.Parse(nil, h.RequestURI())
		target := strings.ToLower(string(u.PathOriginal()))
		adminPath := strings.HasPrefix(target, "/admin")
		switch {
		case authorized && got != MaxAdminBodyBytes:
			t.Fatalf("authorized: limit %d", got)
		case !authorized && got == MaxAdminBodyBytes:
			t.Fatalf("the admin API's limit without the token (%q)", auth)
		case !authorized && adminPath && got != 1:
			t.Fatalf("%q without the token: limit %d", target, got)
		case got != 1 && got != maxOtherAdminBody && got != MaxConsoleFormBytes && got != MaxAdminBodyBytes:
			t.Fatalf("limit %d", got)
		}
	})
}

// TestLimitPerAddress: past its share, an address's connection is refused
// (and counted) while the listener's cap has room; closing one frees its
// place; peers of a Unix socket, which have no address, are not counted.
func TestLimitPerAddress(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "unix" {
				addr = filepath.Join(t.TempDir(), "admin.sock")
			}
			ln, err := net.Listen(network, addr)
			if err != nil {
				t.Fatal(err)
			}
			var rejected atomic.Int64
			l := LimitListener(ln, 8, func() { rejected.Add(1) }).(*limitListener)
			l.limitPerAddress(2)
			defer l.Close()
			accepted := make(chan net.Conn, 8)
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					accepted <- c
				}
			}()
			dial := func() net.Conn {
				c, err := net.Dial(network, ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			}
			want := 2
			if network == "unix" {
				want = 3
			}
			var held []net.Conn
			for range 3 {
				dial()
			}
			deadline := time.After(5 * time.Second)
			for len(held) < want {
				select {
				case c := <-accepted:
					held = append(held, c)
				case <-deadline:
					t.Fatalf("accepted %d of %d", len(held), want)
				}
			}
			if network == "unix" {
				return
			}
			for rejected.Load() != 1 {
				select {
				case <-deadline:
					t.Fatalf("rejected %d, want 1", rejected.Load())
				case <-time.After(time.Millisecond):
				}
			}
			held[0].Close()
			dial()
			select {
			case <-accepted:
			case <-deadline:
				t.Fatal("a closed connection did not free its place")
			}
		})
	}
}
