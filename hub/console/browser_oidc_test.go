package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// signInOIDC signs in through the local provider's login page in the
// browser and requires the console to greet the operator with role.
func (b *browser) signInOIDC(user, name, role string) {
	b.t.Helper()
	b.openOK("/console/login")
	b.clickOK("#sign-in-oidc")
	require.Contains(b.t, b.location(), "/login/username", "the provider's login page")
	b.setValue("#username", user)
	b.setValue("#password", opPassword)
	b.clickOK("button[type=submit]")
	b.waitUntil(`location.pathname === "/console/" && document.querySelector("#who")`, "back on the console's overview")
	require.Equal(b.t, role, b.text("#who"), "%s signed in at %s", user, b.location())
	require.Equal(b.t, name, b.text("#who-name"))
	c := b.cookie("hookhub_session")
	require.NotNil(b.t, c)
	require.True(b.t, c.HTTPOnly)
	require.Equal(b.t, "Strict", c.SameSite.String())
}

// Two operators sign in through a real OpenID Connect provider on a whole
// hub: the admin (by e-mail) acts; the read-only one (by domain) sees
// every page, no action, and is refused every action it posts.
func testBrowserOIDC(t *testing.T, s *browserSuite) {
	ro, admin := s.newBrowser(t), s.newBrowser(t)
	h := s.startHub(t)
	id := h.processedAndDead("evt_oidc", "evt_oidc_dead")
	h.failOn("evt_oidc_dead", false)
	msgs := h.StreamInfo().State.Msgs

	ro.signInOIDC("bob", "bob@example.org", "read-only")
	admin.signInOIDC("alice", "alice@example.com", "admin")

	noActionForReadOnly(t, admin, ro, "paddle:evt_oidc", func(path string) {
		require.Equal(t, "bob@example.org", ro.text("#who-name"), path)
	})

	// Every action the read-only operator posts, with its own session's
	// CSRF token, is refused.
	csrf := refusesEveryAction(t, ro, "paddle:evt_oidc", id)
	h.holds(time.Second, func() bool { return h.StreamInfo().State.Msgs == msgs }, "nothing republished or replayed")
	require.Zero(t, h.effects("evt_oidc_dead"), "nothing redriven")

	// The admin acts: a redrive of the dead letter, processed.
	admin.openOK("/console/")
	p := admin.post("/console/dead-letters/redrive", map[string]string{"csrf": admin.csrf(), "subscriber": flaky, "id": fmt.Sprint(id)})
	require.Equal(t, http.StatusOK, p.Status, p.Error)
	h.Eventually(func() bool { return h.effects("evt_oidc_dead") == 1 }, "the admin's redrive processed")

	// The log names each operator with each action.
	var refused, redriven bool
	for _, a := range h.consoleActions() {
		refused = refused || (a["action"] == "refused" && a["name"] == "bob@example.org" && a["who"] == "read-only")
		redriven = redriven || (strings.Contains(fmt.Sprint(a["action"]), "redrive") && a["name"] == "alice@example.com" && a["who"] == "admin")
	}
	require.True(t, refused, "the read-only operator's refusals are logged with their name")
	require.True(t, redriven, "the admin's redrive is logged with their name")

	// The audit page lists the admin's redrive under their name, as an
	// operator's, and each of the reader's posts under theirs, refused:
	// they ran no action.
	for _, b := range []*browser{admin, ro} {
		b.openOK("/console/audit")
		actions := b.auditedAfter(h.audited, "data-action")
		require.Greater(t, len(actions), 1)
		require.Equal(t, "redrive", actions[0])
		actors, outcomes := b.auditedAfter(h.audited, "data-actor"), b.auditedAfter(h.audited, "data-outcome")
		require.Equal(t, "alice@example.com", actors[0])
		require.Equal(t, "ok", outcomes[0])
		for i := 1; i < len(actions); i++ {
			require.Equal(t, "console.action", actions[i])
			require.Equal(t, "bob@example.org", actors[i])
			require.Equal(t, "refused", outcomes[i])
		}
	}

	// Signing out ends the session.
	out := ro.post("/console/logout", map[string]string{"csrf": csrf})
	require.Equal(t, ro.base+"/console/login", out.URL)
	require.Equal(t, ro.base+"/console/login", ro.open("/console/").URL)
}
