package admin

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/hookhub/hookhub/hub/console"
)

const testAdminToken = "admin-token-0123456789abcdef0123456789"

func adminLimitServer() *Server {
	return &Server{cfg: Config{Token: testAdminToken}, tokenSum: sha256.Sum256([]byte(testAdminToken))}
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
		{"/admin/replay", bearer, MaxBodyBytes},
		{"/admin/replay", "bearer   " + testAdminToken, MaxBodyBytes},
		{"/metrics", bearer, MaxBodyBytes}, // the token's holder may do anything
		{"/admin/replay", "", 1},
		{"/admin", "", 1},
		{"/admin?x=1", "", 1},
		{"/ADMIN/replay", "", 1},
		{"/admin/replay", "Bearer " + testAdminToken + "x", 1},
		{"/admin/replay", "Basic " + testAdminToken, 1},
		{"/administrator", "", 1}, // the /admin group's middleware runs for it (a plain prefix)
		{"/admin;x/replay", "", 1},
		{"/admin%2Freplay", "", 1},
		{"/console/login", "", console.MaxFormBytes},
		{"/Console/login", "", console.MaxFormBytes},
		{"/console", "", console.MaxFormBytes},
		{"/consoles", "", console.MaxFormBytes},
		{"//admin/replay", "", maxOtherBody}, // the router finds no route
		{"/%61dmin/replay", "", maxOtherBody},
		{"/metrics", "", maxOtherBody},
		{"/debug/pprof/symbol", "", maxOtherBody},
		{"http://hub/admin/replay", "", 1}, // absolute form: routed to /admin/replay
		{"HTTPS://hub:1/ADMIN", "", 1},
		{"http://hub/console/login", "", console.MaxFormBytes},
		{"", "", maxOtherBody},
	}
	for _, tc := range cases {
		t.Run(tc.uri+" "+tc.auth, func(t *testing.T) {
			got := s.bodyLimit(requestHeader(tc.uri, tc.auth))
			if got.MaxRequestBodySize != tc.want || got.ReadTimeout != bodyTimeout {
				t.Fatalf("got %d, %s; want %d, %s", got.MaxRequestBodySize, got.ReadTimeout, tc.want, bodyTimeout)
			}
		})
	}
	// Without an admin token nothing is authorized, and /admin/ is no
	// route: the default limit.
	off := &Server{}
	if got := off.bodyLimit(requestHeader("/admin/replay", "Bearer ")); got.MaxRequestBodySize != maxOtherBody {
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
		got := s.bodyLimit(h).MaxRequestBodySize
		authorized := s.authorized(h.Peek(fasthttp.HeaderAuthorization))
		// What the router matches: the parsed URI's path, as fiber takes it.
		var u fasthttp.URI
		_ = u.Parse(nil, h.RequestURI())
		target := strings.ToLower(string(u.PathOriginal()))
		adminPath := strings.HasPrefix(target, "/admin")
		switch {
		case authorized && got != MaxBodyBytes:
			t.Fatalf("authorized: limit %d", got)
		case !authorized && got == MaxBodyBytes:
			t.Fatalf("the admin API's limit without the token (%q)", auth)
		case !authorized && adminPath && got != 1:
			t.Fatalf("%q without the token: limit %d", target, got)
		case got != 1 && got != maxOtherBody && got != console.MaxFormBytes && got != MaxBodyBytes:
			t.Fatalf("limit %d", got)
		}
	})
}
