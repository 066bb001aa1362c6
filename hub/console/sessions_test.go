package console_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
)

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
