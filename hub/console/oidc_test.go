package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/console"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
)

// Operators sign in through the local provider's login page; each gets
// the role their e-mail, domain or group maps to, and is named in the
// header. A read-only operator is refused every action.
func TestOIDCSignIn(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := newOIDCSite(t, pool)
	page := s.do("GET", "/console/login", "", nil)
	require.Contains(t, page.body, `id="sign-in-oidc" href="/console/oidc/login"`, "the sign-in page offers single sign-on")
	require.Contains(t, page.body, `id="token"`, "and still the token")
	for _, c := range []struct{ user, role, name string }{
		{"alice", "admin", "alice@example.com"},
		{"bob", "read-only", "bob@example.org"},
		{"carol", "admin", "carol@elsewhere.test"},
		{"dora", "read-only", "Dora@Example.ORG"},
	} {
		a := newAgent(t)
		ans := a.signIn(s, c.user)
		require.Equal(t, http.StatusOK, ans.status, "%s: %s", c.user, ans.body)
		require.Contains(t, ans.body, `<meta http-equiv="refresh" content="0;url=/console/">`, c.user)
		require.NotNil(t, a.sessionCookie(s), c.user)
		home := a.home(s)
		require.Equal(t, http.StatusOK, home.status, c.user)
		require.Contains(t, home.body, `<span id="who">`+c.role+`</span>`, c.user)
		require.Contains(t, home.body, `<span id="who-name">`+c.name+`</span>`, c.user)
		require.Contains(t, s.logText(), `who=`+c.role+` token="" action=login`, c.user)
		if c.role == "read-only" {
			csrf := csrfOf(t, home.body)
			for _, p := range []string{"/console/replay/run", "/console/replay/plan", "/console/event/republish", "/console/dead-letters/redrive"} {
				resp, err := a.once.PostForm(s.URL+p, url.Values{"csrf": {csrf}, "subscriber": {"x"}, "ref": {"x"}, "id": {"1"}})
				require.NoError(t, err)
				ans := readAnswer(t, resp)
				require.Equal(t, http.StatusForbidden, ans.status, "%s %s", c.user, p)
				require.Contains(t, ans.body, "read-only session cannot act", p)
			}
		}
		// Sign-out ends the session in Postgres.
		resp, err := a.once.PostForm(s.URL+"/console/logout", url.Values{"csrf": {csrfOf(t, home.body)}})
		require.NoError(t, err)
		require.Equal(t, http.StatusSeeOther, readAnswer(t, resp).status)
		require.Equal(t, http.StatusSeeOther, a.home(s).status, "%s signed out", c.user)
	}
	require.Equal(t, 0, countRows(t, s, `SELECT count(*) FROM console_sessions`), "every session was ended")
	require.Equal(t, 0, countRows(t, s, `SELECT count(*) FROM console_oidc_logins`), "every sign-in was used up")
}

func countRows(t testing.TB, s *oidcSite, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, s.pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

// Someone the provider signs in but no rule gives a role, or whose e-mail
// it did not verify, is refused with a clear page and not signed in.
func TestOIDCNoRole(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := newOIDCSite(t, pool)
	for _, user := range []string{"erin", "mallory"} {
		a := newAgent(t)
		ans := a.signIn(s, user)
		require.Equal(t, http.StatusForbidden, ans.status, user)
		require.Contains(t, ans.body, "no console role is given to you: you are not signed in", user)
		require.Nil(t, a.sessionCookie(s), user)
		require.Equal(t, http.StatusSeeOther, a.home(s).status, user)
	}
	require.Contains(t, s.logText(), `reason="no role"`)
	require.Equal(t, 0, countRows(t, s, `SELECT count(*) FROM console_sessions`))
}

// Every way a callback can be wrong is refused and opens no session.
func TestOIDCRefused(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := newOIDCSite(t, pool)
	setLogin := func(col, v string) {
		_, err := s.pool.Exec(context.Background(), `UPDATE console_oidc_logins SET `+col+` = $1`, v)
		require.NoError(t, err)
	}
	refused := func(a *agent, ans answer, code int, msg string) {
		t.Helper()
		require.Equal(t, code, ans.status, ans.body)
		require.Contains(t, ans.body, msg)
		require.Nil(t, a.sessionCookie(s))
	}

	t.Run("state of another sign-in", func(t *testing.T) {
		a := newAgent(t)
		cb := a.login(a.start(s, ""), "alice")
		q := cb.Query()
		q.Set("state", strings.Repeat("ab", 32))
		cb.RawQuery = q.Encode()
		refused(a, a.finish(cb), http.StatusBadRequest, "state is missing or does not match")
	})
	t.Run("no state cookie (another browser)", func(t *testing.T) {
		a := newAgent(t)
		cb := a.login(a.start(s, ""), "alice")
		b := newAgent(t)
		refused(b, b.finish(cb), http.StatusBadRequest, "state is missing or does not match")
	})
	t.Run("callback replayed", func(t *testing.T) {
		a := newAgent(t)
		cb := a.login(a.start(s, ""), "alice")
		require.Equal(t, http.StatusOK, a.finish(cb).status)
		b := newAgent(t)
		u, _ := url.Parse(s.URL + "/console/oidc/")
		b.jar.SetCookies(u, []*http.Cookie{{Name: "hookhub_oidc", Value: cb.Query().Get("state"), Path: "/console/oidc/"}})
		refused(b, b.finish(cb), http.StatusBadRequest, "expired or was already used")
	})
	// Between the provider's login and the callback, something changes.
	for _, c := range []struct {
		name   string
		change func()
		code   int
		msg    string
		logged string
	}{
		{"sign-in too slow", func() { s.clock.Add(11 * time.Minute) }, http.StatusBadRequest, "expired or was already used", ""},
		{"wrong PKCE verifier", func() { setLogin("verifier", strings.Repeat("x", 43)) }, http.StatusUnauthorized,
			"did not accept the sign-in&#39;s code", ""},
		{"no PKCE verifier", func() { setLogin("verifier", "") }, http.StatusUnauthorized, "did not accept the sign-in&#39;s code", ""},
		{"other nonce", func() { setLogin("nonce", strings.Repeat("cd", 32)) }, http.StatusUnauthorized,
			"ID token is not valid for this console", "reason=nonce"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newAgent(t)
			cb := a.login(a.start(s, ""), "alice")
			c.change()
			refused(a, a.finish(cb), c.code, c.msg)
			require.Contains(t, s.logText(), c.logged)
		})
	}
	t.Run("expired ID token", func(t *testing.T) {
		s.op.setIDTokenLifetime(time.Second)
		defer s.op.setIDTokenLifetime(0)
		a := newAgent(t)
		cb := a.login(a.start(s, ""), "alice")
		s.clock.Add(time.Minute)
		refused(a, a.finish(cb), http.StatusUnauthorized, "ID token is not valid for this console")
		require.Contains(t, s.logText(), "token is expired")
	})
	// A mix-up: the operator signs in at a second provider, whose token
	// endpoint answers the console's exchange. Its token's signature is
	// checked first, against the configured issuer's JWKS (then go-oidc
	// checks iss); even signed with the configured provider's own key, a
	// token another issuer names is refused (go-oidc's iss check).
	for _, c := range []struct {
		name   string
		keysOf *testOP
		logged string
	}{
		{"ID token of another issuer", nil, "failed to verify signature"},
		{"ID token of another issuer with the issuer's key", s.op, "id token issued by a different provider"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, otherURL := listen(t)
			other := startOPKeys(t, ln, otherURL, s.URL+"/console/oidc/callback", c.keysOf)
			o, _ := url.Parse(other.URL)
			s.transport.set(func(r *http.Request) {
				if r.URL.Path == "/oauth/token" {
					r.URL.Host, r.Host = o.Host, o.Host
				}
			})
			defer s.transport.set(nil)
			a := newAgent(t)
			auth := a.start(s, "")
			auth.Host = o.Host
			refused(a, a.finish(a.login(auth, "alice")), http.StatusUnauthorized, "ID token is not valid for this console")
			require.Contains(t, s.logText(), c.logged)
		})
	}
	t.Run("ID token for another client", func(t *testing.T) {
		// The code and its token are another application's.
		s.transport.set(func(r *http.Request) {
			if r.URL.Path == "/oauth/token" {
				r.SetBasicAuth(otherClientID, "other-secret")
			}
		})
		defer s.transport.set(nil)
		a := newAgent(t)
		auth := a.start(s, "")
		q := auth.Query()
		q.Set("client_id", otherClientID)
		auth.RawQuery = q.Encode()
		refused(a, a.finish(a.login(auth, "alice")), http.StatusUnauthorized, "ID token is not valid for this console")
		require.Contains(t, s.logText(), "expected audience")
	})
	t.Run("provider refused", func(t *testing.T) {
		a := newAgent(t)
		a.start(s, "")
		u, _ := url.Parse(s.URL + "/console/oidc/callback?error=access_denied&state=x")
		refused(a, a.finish(u), http.StatusUnauthorized, "Sign-in refused by the identity provider")
	})
	require.Equal(t, 1, countRows(t, s, `SELECT count(*) FROM console_sessions`), "no refused sign-in opened a session (the replayed one's first use did)")
}

// The page a sign-in returns to is a console path of this site, whatever
// the return_to asked.
func TestOIDCNoOpenRedirect(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := newOIDCSite(t, pool)
	for ask, want := range map[string]string{
		"https://evil.example/console/":   "/console/",
		"//evil.example/console/":         "/console/",
		"/\\evil.example":                 "/console/",
		"/console//evil.example":          "/console/",
		"/console/../admin/":              "/console/",
		"/console/%2e%2e/admin/":          "/console/",
		"javascript:alert(1)":             "/console/",
		"/console/\r\nLocation: x":        "/console/",
		"/console/oidc/login":             "/console/",
		"/admin/events":                   "/console/",
		"/console/events?provider=paddle": "/console/events?provider=paddle",
	} {
		a := newAgent(t)
		ans := a.finish(a.login(a.start(s, ask), "alice"))
		require.Equal(t, http.StatusOK, ans.status, ask)
		require.Contains(t, ans.body, `content="0;url=`+strings.ReplaceAll(want, "&", "&amp;")+`"`, ask)
		require.Contains(t, ans.body, `id="continue" href="`+want+`"`, ask)
	}
}

// A hub whose provider is down starts, signs in with tokens, and says
// single sign-on is unavailable.
func TestOIDCProviderDown(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	ln, deadURL := listen(t)
	require.NoError(t, ln.Close())
	discovered := make(chan bool, 10)
	start := time.Now()
	s := newSiteConfig(t, pool, fiberConfig(), func(c *consoleConfig) {
		c.OIDC.Issuer, c.OIDC.ClientID, c.OIDC.RedirectURL, c.OIDC.Admins = deadURL, consoleClientID, "http://127.0.0.1:1/console/oidc/callback", oidcAdmins
		c.OIDC.OnDiscovery = func(ok bool) { discovered <- ok }
	})
	require.False(t, <-discovered, "the metric hears of the failure")
	require.Less(t, time.Since(start), 10*time.Second, "the console started without its provider")
	require.Contains(t, s.logText(), "OIDC discovery failed")
	s.login(adminToken)
	a := s.do("GET", "/console/oidc/login", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.Contains(t, a.body, "Single sign-on is unavailable")
}

// Sign-ins started are limited per address: each stores a row.
func TestOIDCStartsLimited(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := newOIDCSite(t, pool)
	for i := range console.MaxSignInsPerAddress {
		require.Equal(t, http.StatusSeeOther, s.do("GET", "/console/oidc/login", "", nil).status, "start %d", i+1)
	}
	a := s.do("GET", "/console/oidc/login", "", nil)
	require.Equal(t, http.StatusTooManyRequests, a.status)
	require.Equal(t, "60", a.header.Get("Retry-After"))
	require.Equal(t, console.MaxSignInsPerAddress, countRows(t, s, `SELECT count(*) FROM console_oidc_logins`))
	s.clock.Add(time.Minute + time.Second)
	require.Equal(t, http.StatusSeeOther, s.do("GET", "/console/oidc/login", "", nil).status, "a minute later")
}
