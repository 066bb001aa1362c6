package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The Sessions page: an admin sees every session, theirs
// marked, plans the revocation of another (a read-only token's, signed in
// elsewhere), confirms it; that session is refused at its next request,
// and the audit trail lists the revocation under the admin's token.
func testBrowserSessions(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t, b)
	b.signIn(consoleAdminToken, "admin")
	other := &hubSystem{Hub: h.Hub, t: t, browser: &http.Client{Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	other.signIn(consoleReadOnlyToken)
	adminName, roName := "token "+tokenID(consoleAdminToken), "token "+tokenID(consoleReadOnlyToken)

	b.openOK("/console/")
	b.clickOK(`#nav a[href="/console/sessions"]`)
	require.Equal(t, "page", eval[string](b, `document.querySelector('#nav a[href="/console/sessions"]').getAttribute("aria-current")`))
	require.Equal(t, []string{roName, adminName}, b.attrs("#sessions tr.session", "data-name"), "newest first")
	require.Equal(t, []string{"read-only", "admin"}, b.attrs("#sessions tr.session", "data-role"))
	require.Equal(t, 1, b.count(`#sessions tr.session[data-mine="true"][data-name="`+adminName+`"]`), "the admin's own is marked")
	b.screenshot("sessions")

	b.clickOK(`#sessions tr.session[data-name="` + roName + `"] a.revoke-one`)
	require.Equal(t, 1, b.count("#plan-sessions tr.planned"))
	require.Zero(t, b.count("#plan-yours"), "not the admin's own session")
	code, _ := other.page("/console/")
	require.Equal(t, http.StatusOK, code, "a plan revokes nothing")
	b.clickOK("#confirm-revoke-button")
	require.Contains(t, b.text("#flash"), "revoked 1 session(s)")
	require.Equal(t, []string{adminName}, b.attrs("#sessions tr.session", "data-name"))
	code, loc := other.page("/console/")
	require.Equal(t, http.StatusSeeOther, code, loc)

	b.openOK("/console/audit?action=session.revoke")
	require.Equal(t, []string{adminName}, b.attrs("#audit tr.audit-entry", "data-actor"))
	require.Equal(t, []string{"console"}, b.texts("#audit tr.audit-entry td.audit-via"))
	require.True(t, strings.HasPrefix(b.texts("#audit tr.audit-entry td.audit-target")[0], "session "))
}
