package console_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/console"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/internal/hubtest"
)

func TestSignInAndOut(t *testing.T) {
	t.Parallel()
	s := newSite(t)

	a := s.do("GET", "/console/", "", nil)
	require.Equal(t, http.StatusSeeOther, a.status)
	require.Equal(t, "/console/login", a.header.Get("Location"))

	page := s.do("GET", "/console/login", "", nil)
	require.Equal(t, 200, page.status)
	for _, want := range []string{`<form id="login" method="post" action="/console/login">`, `id="token"`, `name="token"`, `id="sign-in"`} {
		require.Contains(t, page.body, want)
	}
	lc := cookieOf(page, "hookhub_login")
	require.NotNil(t, lc)

	// A wrong token: 401 and the form again.
	a = s.do("POST", "/console/login", url.Values{"token": {"not-the-token"}, "csrf": {csrfOf(t, page.body)}}.Encode(), []*http.Cookie{lc})
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.Regexp(t, `<p id="error" role="alert">[^<]*wrong token`, a.body)
	require.Nil(t, cookieOf(a, "hookhub_session"))

	// The right one: a session cookie, HttpOnly and SameSite=Strict.
	a = s.do("POST", "/console/login", url.Values{"token": {adminToken}, "csrf": {csrfOf(t, page.body)}}.Encode(), []*http.Cookie{lc})
	require.Equal(t, http.StatusSeeOther, a.status)
	require.Equal(t, "/console/", a.header.Get("Location"))
	sc := cookieOf(a, "hookhub_session")
	require.NotNil(t, sc)
	require.True(t, sc.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, sc.SameSite)
	require.Equal(t, "/console/", sc.Path)
	require.False(t, sc.Secure, "plain HTTP")
	require.Len(t, sc.Value, 64)

	home := s.do("GET", "/console/", "", []*http.Cookie{sc})
	require.Equal(t, 200, home.status)
	require.Contains(t, home.body, `<span id="who">admin</span>`)
	require.Contains(t, home.body, `id="sign-out"`)
	require.Contains(t, home.body, `<nav id="nav"`)
	require.Contains(t, home.body, `<main id="main">`)

	// Signing out needs the CSRF token too.
	a = s.do("POST", "/console/logout", "", []*http.Cookie{sc})
	require.Equal(t, http.StatusForbidden, a.status)
	require.Regexp(t, `id="error" role="alert">[^<]*CSRF`, a.body)
	a = s.do("POST", "/console/logout", url.Values{"csrf": {csrfOf(t, home.body)}}.Encode(), []*http.Cookie{sc})
	require.Equal(t, http.StatusSeeOther, a.status)
	require.Equal(t, "/console/login", a.header.Get("Location"))
	require.Equal(t, http.StatusSeeOther, s.do("GET", "/console/", "", []*http.Cookie{sc}).status, "the session is gone")

	// The log names the role and the token's fingerprint, never the token.
	log := s.logText()
	require.Contains(t, log, "console action")
	require.Contains(t, log, "action=login")
	require.Contains(t, log, "action=logout")
	require.Contains(t, log, "action=\"login failed\"")
	require.NotContains(t, log, adminToken)
	require.NotContains(t, log, "not-the-token")
	require.Regexp(t, `who=admin token=[0-9a-f]{8} action=login`, log)
}

func TestSecureCookieBehindHTTPS(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	page := s.do("GET", "/console/login", "", nil, "X-Forwarded-Proto", "https")
	lc := cookieOf(page, "hookhub_login")
	require.True(t, lc.Secure)
	a := s.do("POST", "/console/login", url.Values{"token": {adminToken}, "csrf": {csrfOf(t, page.body)}}.Encode(), []*http.Cookie{lc}, "X-Forwarded-Proto", "https")
	require.Equal(t, http.StatusSeeOther, a.status)
	require.True(t, cookieOf(a, "hookhub_session").Secure)
}

func TestLoginCSRF(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	page := s.do("GET", "/console/login", "", nil)
	lc := cookieOf(page, "hookhub_login")
	for name, tc := range map[string]struct {
		form    url.Values
		cookies []*http.Cookie
		header  []string
	}{
		"no csrf field":   {url.Values{"token": {adminToken}}, []*http.Cookie{lc}, nil},
		"no login cookie": {url.Values{"token": {adminToken}, "csrf": {csrfOf(t, page.body)}}, nil, nil},
		"wrong csrf":      {url.Values{"token": {adminToken}, "csrf": {strings.Repeat("0", 32)}}, []*http.Cookie{lc}, nil},
		"cross-site":      {url.Values{"token": {adminToken}, "csrf": {csrfOf(t, page.body)}}, []*http.Cookie{lc}, []string{"Sec-Fetch-Site", "cross-site"}},
		"foreign origin":  {url.Values{"token": {adminToken}, "csrf": {csrfOf(t, page.body)}}, []*http.Cookie{lc}, []string{"Origin", "https://evil.example"}},
	} {
		a := s.do("POST", "/console/login", tc.form.Encode(), tc.cookies, tc.header...)
		require.Equal(t, http.StatusForbidden, a.status, name)
		require.Contains(t, a.body, "CSRF", name)
		require.Nil(t, cookieOf(a, "hookhub_session"), name)
	}
}

func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	page := s.do("GET", "/console/login", "", nil)
	lc := cookieOf(page, "hookhub_login")
	form := func(token string) string {
		return url.Values{"token": {token}, "csrf": {csrfOf(t, page.body)}}.Encode()
	}
	for i := range console.MaxFailedSignIns {
		require.Equal(t, http.StatusUnauthorized, s.do("POST", "/console/login", form("guess"), []*http.Cookie{lc}).status, "attempt %d", i+1)
	}
	a := s.do("POST", "/console/login", form("guess"), []*http.Cookie{lc})
	require.Equal(t, http.StatusTooManyRequests, a.status)
	require.Equal(t, "60", a.header.Get("Retry-After"))
	require.Contains(t, a.body, `id="error"`)
	// Even the right token waits out the minute.
	require.Equal(t, http.StatusTooManyRequests, s.do("POST", "/console/login", form(adminToken), []*http.Cookie{lc}).status)
	s.clock.Add(61 * time.Second)
	require.Equal(t, http.StatusSeeOther, s.do("POST", "/console/login", form(adminToken), []*http.Cookie{lc}).status)
}

// TestCrossSiteSignInsDoNotLockOut: sign-in forms another site makes an
// operator's browser post (cross-site, without the login CSRF token, or
// unreadable) check no token and do not count as failed sign-ins: the
// operators behind that address can still sign in. On the old code they
// counted, and the address was answered 429 for the minute.
func TestCrossSiteSignInsDoNotLockOut(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	page := s.do("GET", "/console/login", "", nil)
	lc := cookieOf(page, "hookhub_login")
	guess := url.Values{"token": {"guess"}, "csrf": {csrfOf(t, page.body)}}.Encode()
	for i := range 3 * console.MaxFailedSignIns {
		var a answer
		switch i % 3 {
		case 0: // a form on another site, with no login cookie (SameSite)
			a = s.do("POST", "/console/login", url.Values{"token": {"guess"}}.Encode(), nil, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
		case 1: // a fetch from another site that carries the cookie anyway
			a = s.do("POST", "/console/login", guess, []*http.Cookie{lc}, "Origin", "https://evil.example")
		default: // an unreadable body
			a = s.do("POST", "/console/login", "token=%zz", []*http.Cookie{lc}, "Sec-Fetch-Site", "cross-site")
		}
		require.NotEqual(t, http.StatusTooManyRequests, a.status, "attempt %d", i+1)
		require.Nil(t, cookieOf(a, "hookhub_session"))
	}
	sc, _ := s.login(adminToken)
	require.NotNil(t, sc)
}

func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	sc, _ := s.login(adminToken)
	// Idle for less than SessionIdle: still signed in, and the clock of
	// idleness restarts.
	for range 3 {
		s.clock.Add(console.SessionIdle - time.Minute)
		require.Equal(t, 200, s.do("GET", "/console/events", "", []*http.Cookie{sc}).status)
	}
	// Idle past it: signed out.
	s.clock.Add(console.SessionIdle + time.Second)
	a := s.do("GET", "/console/events", "", []*http.Cookie{sc})
	require.Equal(t, http.StatusSeeOther, a.status)
	require.Equal(t, "/console/login", a.header.Get("Location"))

	// Active all along, but past SessionLifetime: signed out too.
	sc, _ = s.login(adminToken)
	for elapsed := time.Duration(0); elapsed < console.SessionLifetime-30*time.Minute; elapsed += 30 * time.Minute {
		s.clock.Add(30 * time.Minute)
		require.Equal(t, 200, s.do("GET", "/console/", "", []*http.Cookie{sc}).status)
	}
	s.clock.Add(31 * time.Minute)
	require.Equal(t, http.StatusSeeOther, s.do("GET", "/console/", "", []*http.Cookie{sc}).status)
}

// actionRE finds an element of class "action".
var actionRE = regexp.MustCompile(`class="([^"]* )?action( [^"]*)?"`)

func TestReadOnly(t *testing.T) {
	t.Parallel()
	s, ids, sc, csrf := signedInSite(t, 3, 1, readOnlyToken)
	pages := []string{"/console/", "/console/events", "/console/event?ref=paddle:" + ids[0], "/console/dead-letters?subscriber=credits", "/console/replay"}
	for _, p := range pages {
		a := s.do("GET", p, "", []*http.Cookie{sc})
		require.Equal(t, 200, a.status, p)
		require.Contains(t, a.body, `<span id="who">read-only</span>`, p)
		require.NotRegexp(t, actionRE, a.body, "%s shows an action to a read-only session", p)
	}
	// The admin sees them.
	asc, _ := s.login(adminToken)
	for _, p := range pages[2:] {
		require.Regexp(t, actionRE, s.do("GET", p, "", []*http.Cookie{asc}).body, p)
	}
	// Every POST but sign-out is refused, CSRF token or not.
	for _, p := range []string{"/console/event/republish", "/console/dead-letters/redrive", "/console/replay/plan", "/console/replay/run"} {
		for _, form := range []string{url.Values{"csrf": {csrf}, "subscriber": {"credits"}, "all": {"1"}, "ref": {"paddle:" + ids[0]}}.Encode(), ""} {
			a := s.do("POST", p, form, []*http.Cookie{sc})
			require.Equal(t, http.StatusForbidden, a.status, p)
			require.Regexp(t, `id="error" role="alert">[^<]*read-only`, a.body, p)
		}
	}
	var requested int
	require.NoError(t, s.pool.QueryRow(t.Context(), `SELECT count(*) FROM credits.dead_letters WHERE redrive_requested_at IS NOT NULL`).Scan(&requested))
	require.Zero(t, requested)
	require.Contains(t, s.logText(), `who=read-only`)
	require.Equal(t, http.StatusSeeOther, s.do("POST", "/console/logout", url.Values{"csrf": {csrf}}.Encode(), []*http.Cookie{sc}).status)
}

func TestCSRFRefused(t *testing.T) {
	t.Parallel()
	s, _, sc, csrf := signedInSite(t, 2, 0, adminToken)
	for name, tc := range map[string]struct {
		form   url.Values
		header []string
	}{
		"missing":        {url.Values{"subscriber": {"credits"}, "all": {"1"}}, nil},
		"wrong":          {url.Values{"subscriber": {"credits"}, "all": {"1"}, "csrf": {strings.Repeat("a", 64)}}, nil},
		"cross-site":     {url.Values{"subscriber": {"credits"}, "all": {"1"}, "csrf": {csrf}}, []string{"Sec-Fetch-Site", "cross-site"}},
		"foreign origin": {url.Values{"subscriber": {"credits"}, "all": {"1"}, "csrf": {csrf}}, []string{"Origin", "http://evil.example"}},
		"null origin":    {url.Values{"subscriber": {"credits"}, "all": {"1"}, "csrf": {csrf}}, []string{"Origin", "null"}},
	} {
		a := s.do("POST", "/console/dead-letters/redrive", tc.form.Encode(), []*http.Cookie{sc}, tc.header...)
		require.Equal(t, http.StatusForbidden, a.status, name)
		require.Regexp(t, `id="error" role="alert">[^<]*CSRF`, a.body, name)
	}
	// Another session's token is no good either.
	_, other := s.login(adminToken)
	require.Equal(t, http.StatusForbidden, s.do("POST", "/console/dead-letters/redrive",
		url.Values{"subscriber": {"credits"}, "all": {"1"}, "csrf": {other}}.Encode(), []*http.Cookie{sc}).status)
	var requested int
	require.NoError(t, s.pool.QueryRow(t.Context(), `SELECT count(*) FROM credits.dead_letters WHERE redrive_requested_at IS NOT NULL`).Scan(&requested))
	require.Zero(t, requested)

	// Same origin with the token: done.
	var id int64
	require.NoError(t, s.pool.QueryRow(t.Context(), `SELECT id FROM credits.dead_letters`).Scan(&id))
	a := s.do("POST", "/console/dead-letters/redrive", url.Values{"subscriber": {"credits"}, "ids": {fmt.Sprint(id)}, "csrf": {csrf}}.Encode(),
		[]*http.Cookie{sc}, "Origin", "http://example.com", "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusSeeOther, a.status, a.body)
	loc, err := url.Parse(a.header.Get("Location"))
	require.NoError(t, err)
	page := s.do("GET", loc.String(), "", []*http.Cookie{sc})
	require.Contains(t, page.body, `<div id="flash" role="status">Done: redrive requested for 1 dead letter(s)`)
	require.Regexp(t, `who=admin token=[0-9a-f]{8} action=redrive .*subscriber=credits`, s.logText())
}

// The session and sign-in cookies are browser-session cookies: no Expires,
// no Max-Age (the browser forgets them when it closes; the server ends the
// session after SessionLifetime or SessionIdle).
func TestCookiesEndWithTheBrowser(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	page := s.do("GET", "/console/login", "", nil)
	a := s.do("POST", "/console/login", url.Values{"token": {adminToken}, "csrf": {csrfOf(t, page.body)}}.Encode(),
		[]*http.Cookie{cookieOf(page, "hookhub_login")})
	require.Equal(t, http.StatusSeeOther, a.status)
	for _, c := range []struct {
		name string
		a    answer
	}{{"hookhub_login", page}, {"hookhub_session", a}} {
		var raw string
		for _, h := range c.a.header.Values("Set-Cookie") {
			if strings.HasPrefix(h, c.name+"=") {
				raw = h
			}
		}
		require.NotEmpty(t, raw, c.name)
		lower := strings.ToLower(raw)
		require.NotContains(t, lower, "expires=", "%s: %s", c.name, raw)
		require.NotContains(t, lower, "max-age=", "%s: %s", c.name, raw)
		require.Contains(t, lower, "httponly", c.name)
		require.Contains(t, lower, "samesite=strict", c.name)
	}
}

// signInAs posts the sign-in form from an address (X-Forwarded-For: the
// site's ProxyHeader) and returns the answer.
func (s *site) signInAs(token, addr string, lc *http.Cookie, csrf string) answer {
	s.t.Helper()
	return s.do("POST", "/console/login", url.Values{"token": {token}, "csrf": {csrf}}.Encode(), []*http.Cookie{lc},
		"X-Forwarded-For", addr)
}

// Read-only sign-ins past the cap of sessions per role (paced by the
// sign-in limits) end only read-only sessions: the admin's session keeps
// working. The short form lowers the console's cap to 50 (80 sign-ins:
// the cap's logic is the same at any size); the long form (HOOKHUB_SOAK=1)
// keeps MaxSessions and signs in 1,200 times. The sign-ins of one minute
// share their creation time on the test's clock, so the sign-ins past the
// cap are at least a minute's worth: the first minute's sessions all end.
func TestReadOnlySignInsLeaveAdminSignedIn(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	limit := hubtest.Scale(t, 50, console.MaxSessions)
	console.SetMaxSessions(s.cn, limit)
	admin, adminCSRF := s.login(adminToken)
	page := s.do("GET", "/console/login", "", nil)
	lc, csrf := cookieOf(page, "hookhub_login"), csrfOf(t, page.body)
	var first, last *http.Cookie
	for ok := 0; ok < limit+max(limit/5, console.MaxSignInsPerAddress); {
		a := s.signInAs(readOnlyToken, "192.0.2.1", lc, csrf)
		if a.status == http.StatusTooManyRequests {
			require.Nil(t, cookieOf(a, "hookhub_session"), "a refused sign-in opens no session")
			s.clock.Add(time.Minute + time.Second)
			continue
		}
		require.Equal(t, http.StatusSeeOther, a.status, a.body)
		ok++
		last = cookieOf(a, "hookhub_session")
		if first == nil {
			first = last
		}
	}
	home := s.do("GET", "/console/", "", []*http.Cookie{admin})
	require.Equal(t, http.StatusOK, home.status, "the admin is still signed in")
	require.Contains(t, home.body, `<span id="who">admin</span>`)
	act := s.do("POST", "/console/dead-letters/redrive",
		url.Values{"csrf": {adminCSRF}, "subscriber": {"nobody"}, "id": {"1"}}.Encode(), []*http.Cookie{admin})
	require.NotEqual(t, http.StatusSeeOther, act.status, "the admin's action is not sent to sign in")
	require.NotEqual(t, http.StatusForbidden, act.status, "the admin may still act: %s", act.body)
	require.Contains(t, act.body, "unknown subscriber", "the action ran (and named the unknown subscriber)")
	// The read-only token ended its own oldest sessions.
	require.Equal(t, http.StatusSeeOther, s.do("GET", "/console/", "", []*http.Cookie{first}).status, "the first read-only session was ended")
	require.Equal(t, http.StatusOK, s.do("GET", "/console/", "", []*http.Cookie{last}).status, "the last read-only session works")
}

// Successful sign-ins are limited per address and per role; the roles
// count apart.
func TestSignInRateLimitOnSuccess(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := newSiteWith(t, pool, fiber.Config{ProxyHeader: fiber.HeaderXForwardedFor})
	page := s.do("GET", "/console/login", "", nil)
	lc, csrf := cookieOf(page, "hookhub_login"), csrfOf(t, page.body)

	// Per address.
	for i := range console.MaxSignInsPerAddress {
		require.Equal(t, http.StatusSeeOther, s.signInAs(adminToken, "192.0.2.1", lc, csrf).status, "sign-in %d", i+1)
	}
	a := s.signInAs(adminToken, "192.0.2.1", lc, csrf)
	require.Equal(t, http.StatusTooManyRequests, a.status)
	require.Equal(t, "60", a.header.Get("Retry-After"))
	require.Contains(t, a.body, "Too many sign-ins")
	require.Nil(t, cookieOf(a, "hookhub_session"))
	require.Equal(t, http.StatusSeeOther, s.signInAs(adminToken, "192.0.2.2", lc, csrf).status, "another address may")

	// Per role, across addresses.
	n := console.MaxSignInsPerAddress + 1
	for addr := 3; n < console.MaxSignInsPerRole; addr++ {
		for range min(console.MaxSignInsPerAddress, console.MaxSignInsPerRole-n) {
			require.Equal(t, http.StatusSeeOther, s.signInAs(adminToken, fmt.Sprintf("192.0.2.%d", addr), lc, csrf).status, "admin sign-in %d", n+1)
			n++
		}
	}
	a = s.signInAs(adminToken, "198.51.100.1", lc, csrf)
	require.Equal(t, http.StatusTooManyRequests, a.status, "the admin role's sign-ins this minute are used up")
	require.Nil(t, cookieOf(a, "hookhub_session"))
	require.Equal(t, http.StatusSeeOther, s.signInAs(readOnlyToken, "198.51.100.1", lc, csrf).status, "the read-only role counts apart")
	require.Contains(t, s.logText(), `reason="too many sign-ins"`)

	// A minute later, signed in again.
	s.clock.Add(time.Minute + time.Second)
	require.Equal(t, http.StatusSeeOther, s.signInAs(adminToken, "192.0.2.1", lc, csrf).status)
}

// A session lives in Postgres: a second console on the same database (a
// replica) accepts it, and so does a console started after the first
// stopped (a restart). Signing out on one ends it on all. Only the
// session id's SHA-256 is stored.
func TestSessionsAcrossReplicasAndRestart(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	first := newSiteOn(t, pool)
	cookie, csrf := first.login(adminToken)
	replica := newSiteOn(t, pool)
	home := replica.do("GET", "/console/", "", []*http.Cookie{cookie})
	require.Equal(t, http.StatusOK, home.status, "the replica knows the session")
	require.Equal(t, csrf, csrfOf(t, home.body), "with its CSRF token")
	act := replica.do("POST", "/console/dead-letters/redrive", url.Values{"csrf": {csrf}, "subscriber": {"nobody"}, "id": {"1"}}.Encode(), []*http.Cookie{cookie})
	require.Contains(t, act.body, "unknown subscriber", "an action on the replica runs")

	// Restart: the first console stops; a new one takes the session.
	require.NoError(t, first.app.Shutdown())
	require.NoError(t, first.cn.Stop(context.Background()))
	restarted := newSiteOn(t, pool)
	require.Equal(t, http.StatusOK, restarted.do("GET", "/console/", "", []*http.Cookie{cookie}).status, "the session survived the restart")

	// The database holds the id's hash, never the id.
	var hash []byte
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT id_hash FROM console_sessions`).Scan(&hash))
	sum := sha256.Sum256([]byte(cookie.Value))
	require.Equal(t, sum[:], hash)
	var leaked int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM console_sessions t WHERE strpos(t::text, $1) > 0`, cookie.Value).Scan(&leaked))
	require.Zero(t, leaked, "the session id is not stored")

	// Sign-out on one ends it on every replica.
	out := restarted.do("POST", "/console/logout", url.Values{"csrf": {csrf}}.Encode(), []*http.Cookie{cookie})
	require.Equal(t, http.StatusSeeOther, out.status)
	require.Equal(t, http.StatusSeeOther, replica.do("GET", "/console/", "", []*http.Cookie{cookie}).status)
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM console_sessions`).Scan(&n))
	require.Zero(t, n, "sign-out deleted the row")
}

// An OIDC sign-in started on one replica finishes on another (the
// provider's redirect reaches any replica), and the session works on
// both.
func TestOIDCAcrossReplicas(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	a := newOIDCSite(t, pool)
	b := a.replica(t)
	ag := newAgent(t)
	cb := ag.login(ag.start(a, ""), "alice")
	bu, _ := url.Parse(b.URL)
	cb.Host = bu.Host // the load balancer sends the callback to replica b
	ans := ag.finish(cb)
	require.Equal(t, http.StatusOK, ans.status, ans.body)
	for _, s := range []*oidcSite{a, b} {
		home := ag.home(s)
		require.Equal(t, http.StatusOK, home.status)
		require.Contains(t, home.body, `<span id="who-name">alice@example.com</span>`)
	}
}
