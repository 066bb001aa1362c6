package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/console"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
)

// A session lasts only as long as what granted it.

const rotatedToken = "rotated-admin-token-0123456789abcdef0123456789"

// replicaOf starts another hub on h's database and stream whose
// configuration mod changes (a rotated token), sharing h's browser.
func replicaOf(t *testing.T, h *hubSystem, mod func(*service.Config)) *hubSystem {
	t.Helper()
	cfg := h.Config
	cfg.HTTPAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	mod(&cfg)
	r := testhub.Start(t, cfg, service.Deps{})
	r.WaitStream(r.JetStream(), cfg.Stream)
	return &hubSystem{Hub: r, t: t, browser: h.browser}
}

// The admin token is rotated: the session it opened is refused at its next
// action on a replica configured with the new token, and (its row gone)
// on the replica still configured with the old one; a session opened
// again with the old token is refused by that replica once it restarts
// rotated. Nothing is published by any refused action.
func TestSessionEndsWhenItsTokenIsRotated(t *testing.T) {
	t.Parallel()
	old := newHubSystem(t)
	old.deliver("evt_rotate")
	old.WaitPublished()
	ref := url.Values{"ref": {"paddle:evt_rotate"}}
	csrf := old.signIn(adminToken)

	// Before the rotation the session acts: a republish publishes a copy.
	msgs := old.StreamInfo().State.Msgs
	code, loc := old.post("/console/event/republish", ref, csrf)
	require.Equal(t, http.StatusSeeOther, code, loc)
	old.Eventually(func() bool { return old.StreamInfo().State.Msgs == msgs+1 }, "the republished copy")
	msgs++

	rotated := func(cfg *service.Config) { cfg.AdminToken = rotatedToken }
	fresh := replicaOf(t, old, rotated)
	code, body := fresh.post("/console/event/republish", ref, csrf)
	require.Equal(t, http.StatusUnauthorized, code, "refused on the rotated replica")
	require.Contains(t, body, "Your session was ended: its token is no longer configured")
	code, loc = old.post("/console/event/republish", ref, csrf)
	require.Equal(t, http.StatusSeeOther, code)
	require.Equal(t, "/console/login", loc, "and on the replica still on the old token: the session is gone")
	require.Zero(t, old.Count(`SELECT count(*) FROM console_sessions`))

	// Signed in again with the old token on the old replica, which then
	// restarts with the rotated configuration.
	csrf = old.signIn(adminToken)
	old.Stop()
	restarted := replicaOf(t, old, rotated)
	code, body = restarted.post("/console/event/republish", ref, csrf)
	require.Equal(t, http.StatusUnauthorized, code, "refused on the restarted replica")
	require.Contains(t, body, "Your session was ended")
	code, _ = restarted.page("/console/")
	require.Equal(t, http.StatusSeeOther, code)

	require.Equal(t, msgs, fresh.StreamInfo().State.Msgs, "no refused action published")
	require.Equal(t, 1, fresh.Count(`SELECT count(*) FROM audit_log WHERE action = 'republish'`), "only the republish before the rotation ran")

	// The new token signs in and acts.
	csrf = restarted.signIn(rotatedToken)
	code, loc = restarted.post("/console/event/republish", ref, csrf)
	require.Equal(t, http.StatusSeeOther, code, loc)
}

// A token keeps its session only with the role the configuration gives it
// now: swapped into the read-only slot, the admin token's session acts as
// read-only; a read-only token made the admin token acts as admin.
func TestTokenSessionFollowsItsTokensRole(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	a := newSiteOn(t, pool)
	adminCookie, adminCSRF := a.login(adminToken)
	roCookie, roCSRF := a.login(readOnlyToken)
	swapped := newSiteConfig(t, pool, fiberConfig(), func(c *console.Config) {
		c.AdminToken, c.ReadOnlyToken = readOnlyToken, adminToken
	})
	redrive := func(s *site, cookie *http.Cookie, csrf string) answer {
		return s.do("POST", "/console/dead-letters/redrive", url.Values{"csrf": {csrf}, "subscriber": {"nobody"}, "id": {"1"}}.Encode(),
			[]*http.Cookie{cookie})
	}
	for _, tc := range []struct {
		name   string
		cookie *http.Cookie
		csrf   string
		role   string
	}{
		{"admin token now read-only", adminCookie, adminCSRF, console.RoleReadOnly},
		{"read-only token now admin", roCookie, roCSRF, console.RoleAdmin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := swapped.do("GET", "/console/", "", []*http.Cookie{tc.cookie})
			require.Equal(t, http.StatusOK, home.status)
			require.Contains(t, home.body, `<span id="who">`+tc.role+`</span>`)
			act := redrive(swapped, tc.cookie, tc.csrf)
			if tc.role == console.RoleAdmin {
				require.Contains(t, act.body, "unknown subscriber", "the action ran")
			} else {
				require.Equal(t, http.StatusForbidden, act.status)
				require.Contains(t, act.body, "read-only session cannot act")
			}
		})
	}
	// The listing shows the role each had at its last request.
	var roles []string
	rows, err := pool.Query(context.Background(), `SELECT role FROM console_sessions ORDER BY created_at`)
	require.NoError(t, err)
	for rows.Next() {
		var r string
		require.NoError(t, rows.Scan(&r))
		roles = append(roles, r)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{console.RoleReadOnly, console.RoleAdmin}, roles)
	// Back on the first replica, each acts with its role there.
	require.Contains(t, redrive(a, adminCookie, adminCSRF).body, "unknown subscriber")
	require.Equal(t, http.StatusForbidden, redrive(a, roCookie, roCSRF).status)
}

// An OIDC session's role is mapped again, at every request, with the role
// rules of the replica serving it: an admin whose rule moved to the
// readers acts as a reader; one no rule names any more is refused at
// once, and their session is gone on every replica.
func TestOIDCSessionFollowsTheRoleRules(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	a := newOIDCSite(t, pool)
	ag := newAgent(t)
	require.Equal(t, http.StatusOK, ag.signIn(a, "alice").status)
	require.Contains(t, ag.home(a).body, `<span id="who">admin</span>`)
	cookie := ag.sessionCookie(a)
	require.NotNil(t, cookie)
	csrf := csrfOf(t, ag.home(a).body)
	redrive := url.Values{"csrf": {csrf}, "subscriber": {"nobody"}, "id": {"1"}}.Encode()

	downgraded := a.replica(t, func(o *console.OIDCConfig) {
		o.Admins, o.Readers = []string{"group:hookhub-admins"}, []string{"alice@example.com", "@example.org"}
	})
	home := downgraded.do("GET", "/console/", "", []*http.Cookie{cookie})
	require.Equal(t, http.StatusOK, home.status)
	require.Contains(t, home.body, `<span id="who">read-only</span>`)
	act := downgraded.do("POST", "/console/dead-letters/redrive", redrive, []*http.Cookie{cookie})
	require.Equal(t, http.StatusForbidden, act.status, "acts as a reader")

	removed := a.replica(t, func(o *console.OIDCConfig) {
		o.Admins, o.Readers = []string{"group:hookhub-admins"}, []string{"@example.org"}
	})
	act = removed.do("POST", "/console/dead-letters/redrive", redrive, []*http.Cookie{cookie})
	require.Equal(t, http.StatusUnauthorized, act.status, "refused at once")
	require.Contains(t, act.body, "Your session was ended: the role rules no longer give its operator a role")
	require.NotContains(t, act.body, "unknown subscriber")
	require.Equal(t, http.StatusSeeOther, a.do("GET", "/console/", "", []*http.Cookie{cookie}).status, "gone on every replica")
	require.Regexp(t, `action="session ended".*reason="the role rules no longer give its operator a role"`, removed.logText())

	// Without OIDC configured at all, an OIDC session is ended too.
	require.Equal(t, http.StatusOK, ag.signIn(a, "alice").status)
	cookie = ag.sessionCookie(a)
	tokenOnly := newSiteOn(t, pool)
	require.Equal(t, http.StatusUnauthorized, tokenOnly.do("GET", "/console/", "", []*http.Cookie{cookie}).status)
}

// A session without a credential binding (opened before migration 00006,
// or by an older hub during a rolling deploy) is ended at its next
// request, not kept with authority no one checks.
func TestUnboundSessionIsEnded(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := newSiteOn(t, pool)
	cookie, csrf := s.login(adminToken)
	// What an older hub writes: the columns it knows.
	_, err := pool.Exec(context.Background(), `UPDATE console_sessions SET ref = NULL, token_sum = NULL`)
	require.NoError(t, err)
	a := s.do("POST", "/console/dead-letters/redrive", url.Values{"csrf": {csrf}, "subscriber": {"nobody"}, "id": {"1"}}.Encode(), []*http.Cookie{cookie})
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.Contains(t, a.body, "it has no credential binding")
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM console_sessions`).Scan(&n))
	require.Zero(t, n)
}

var sessionRowRE = regexp.MustCompile(`<tr class="session" data-id="([0-9a-f]+)" data-name="([^"]+)" data-role="([^"]+)"( data-mine="true")?>`)

// The Sessions page lists every replica's sessions; an admin revokes one
// (planned, then confirmed): it is refused at its next request on another
// replica, and the audit trail records the revocation under the admin's
// name. A read-only session sees the list but cannot revoke.
func TestRevokeFromConsole(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	a := newSiteOn(t, pool)
	b := newSiteOn(t, pool)
	adminCookie, csrf := a.login(adminToken)
	roCookie, roCSRF := b.login(readOnlyToken)

	page := a.do("GET", "/console/sessions", "", []*http.Cookie{adminCookie})
	require.Equal(t, http.StatusOK, page.status, page.body)
	rows := sessionRowRE.FindAllStringSubmatch(page.body, -1)
	require.Len(t, rows, 2)
	require.Equal(t, "token "+tokenID(readOnlyToken), rows[0][2], "newest first")
	require.Equal(t, " data-mine=\"true\"", rows[1][4])
	roID := rows[0][1]

	// The read-only session sees the list, and cannot revoke.
	require.Equal(t, http.StatusOK, b.do("GET", "/console/sessions", "", []*http.Cookie{roCookie}).status)
	refused := b.do("POST", "/console/sessions/revoke", url.Values{"csrf": {roCSRF}, "id": {roID}}.Encode(), []*http.Cookie{roCookie})
	require.Equal(t, http.StatusForbidden, refused.status)

	plan := a.do("GET", "/console/sessions/revoke?id="+roID, "", []*http.Cookie{adminCookie})
	require.Equal(t, http.StatusOK, plan.status, plan.body)
	require.Contains(t, plan.body, `<button type="submit" id="confirm-revoke-button">Revoke session `+roID)
	require.Equal(t, http.StatusOK, b.do("GET", "/console/", "", []*http.Cookie{roCookie}).status, "a plan revokes nothing")
	done := a.do("POST", "/console/sessions/revoke", url.Values{"csrf": {csrf}, "id": {roID}}.Encode(), []*http.Cookie{adminCookie})
	require.Equal(t, http.StatusSeeOther, done.status, done.body)
	require.Equal(t, "/console/sessions?flash=revoked&n=1", done.header.Get("Location"))
	require.Equal(t, http.StatusSeeOther, b.do("GET", "/console/", "", []*http.Cookie{roCookie}).status, "refused on the other replica")

	var actor, via, target, outcome string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT actor_name, via, target, outcome FROM audit_log WHERE action = 'session.revoke'`).
		Scan(&actor, &via, &target, &outcome))
	require.Equal(t, []string{"token " + tokenID(adminToken), "console", "session " + roID, "ok"}, []string{actor, via, target, outcome})

	// Revoking what is gone is an error, recorded too.
	again := a.do("POST", "/console/sessions/revoke", url.Values{"csrf": {csrf}, "id": {roID}}.Encode(), []*http.Cookie{adminCookie})
	require.Equal(t, http.StatusNotFound, again.status)
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action = 'session.revoke' AND outcome = 'error'`).Scan(&n))
	require.Equal(t, 1, n)
}
