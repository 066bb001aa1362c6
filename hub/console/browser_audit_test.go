package console_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
)

// The audit trail in the browser: an operator replays,
// republishes and redrives from the console; the audit page lists those
// actions with the right names (the action, the token's fingerprint, the
// console), newest first, filters them, and exports them as JSON lines.
// Dry runs and plans are not listed; nothing on the page writes to the
// trail. A suite of its own (its own hub and Chromium), so that it runs
// alone with -run BrowserAudit.
func TestBrowserAudit(t *testing.T) {
	s := newBrowserSuite(t)
	b := s.newBrowser(t)
	h := s.startHub(t, b)
	h.startFlaky()
	var watermark int64
	require.NoError(t, h.Pool().QueryRow(t.Context(), `SELECT COALESCE(max(id), 0) FROM audit_log`).Scan(&watermark))

	h.Deliver("paddle", "evt_au1", "subscription.created")
	h.failOn("evt_au2", true)
	h.Deliver("paddle", "evt_au2", "subscription.created")
	h.Eventually(func() bool { return h.Count(`SELECT count(*) FROM flaky.dead_letters`) == 1 }, "evt_au2 dead-lettered")
	h.Eventually(func() bool { return h.effects("evt_au1") == 1 }, "evt_au1 processed")
	h.WaitPublished()
	b.signIn(consoleAdminToken, "admin")

	// A replay: its dry run (the plan), then the run.
	b.openOK("/console/replay")
	b.setValue("#replay [name=subscriber]", flaky)
	b.setValue("#replay [name=since]", "1h")
	b.clickOK("#dry-run")
	resp := b.click("#confirm-replay")
	require.Equal(t, http.StatusOK, int(resp.Status), b.errorText())
	b.waitUntil(`document.querySelector("#job") && document.querySelector("#job").dataset.state !== "running"`, "the replay job finishes")

	// A republish of one event, from its page.
	b.openOK("/console/event?ref=" + url.QueryEscape("paddle:evt_au1"))
	b.clickOK("#republish-plan")
	b.clickOK("#confirm-republish-button")
	require.Contains(t, b.text("#flash"), "republished")

	// A redrive of the dead letter, after the fix.
	h.failOn("evt_au2", false)
	b.openOK("/console/dead-letters?subscriber=flaky")
	b.clickOK(`tr.dead-letter form.redrive .redrive-button`)
	require.Contains(t, b.text("#flash"), "redrive requested for 1 dead letter(s)")

	// The audit page, from the nav.
	b.openOK("/console/")
	b.clickOK(`#nav a[href="/console/audit"]`)
	require.Equal(t, "page", eval[string](b, `document.querySelector('#nav a[href="/console/audit"]').getAttribute("aria-current")`))
	var fresh []string
	for _, id := range b.attrs("#audit tr.audit-entry", "data-id") {
		var n int64
		require.NoError(t, json.Unmarshal([]byte(id), &n))
		if n > watermark {
			fresh = append(fresh, id)
		}
	}
	require.Len(t, fresh, 3, "the replay, the republish and the redrive; not the dry run nor the plans")
	fp := "token " + tokenID(consoleAdminToken)
	require.Equal(t, []string{"redrive", "republish", "replay"}, b.attrs("#audit tr.audit-entry", "data-action")[:3], "newest first")
	require.Equal(t, []string{fp, fp, fp}, b.attrs("#audit tr.audit-entry", "data-actor")[:3])
	require.Equal(t, []string{"ok", "ok", "ok"}, b.attrs("#audit tr.audit-entry", "data-outcome")[:3])
	require.Equal(t, []string{"console", "console", "console"}, b.texts("#audit tr.audit-entry td.audit-via")[:3])
	require.Equal(t, []string{"subscriber flaky", "event paddle:evt_au1", "subscriber flaky"}, b.texts("#audit tr.audit-entry td.audit-target")[:3])
	require.Contains(t, b.text(`#audit tr.audit-entry[data-action="replay"]`), `"subscriber":"flaky"`, "the parameters")
	require.Contains(t, b.text(`#audit tr.audit-entry[data-action="republish"]`), `"published":1`, "the result")
	require.NotContains(t, b.text("#audit"), consoleAdminToken)
	b.screenshot("audit")

	// Filters.
	b.setValue("#a-action", "replay")
	b.clickOK("#apply-audit-filters")
	require.Equal(t, []string{"replay"}, b.attrs("#audit tr.audit-entry", "data-action"))
	b.openOK("/console/audit?actor=" + url.QueryEscape("token 00000000"))
	require.Equal(t, 1, b.count("#no-audit"))
	require.Equal(t, http.StatusBadRequest, int(b.open("/console/audit?since=yesterday").Status))
	require.Contains(t, b.errorText(), "since: bad time")

	// The export, as the browser downloads it (with its session).
	b.openOK("/console/audit?since=1h")
	href := eval[string](b, `document.querySelector("#audit-export").getAttribute("href")`)
	require.Equal(t, "/console/audit.jsonl?since=1h", href)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.base+href, nil)
	require.NoError(t, err)
	session := b.cookie("hookhub_session")
	require.NotNil(t, session)
	req.AddCookie(&http.Cookie{Name: session.Name, Value: session.Value})
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, res.Header.Get("Content-Disposition"), "attachment")
	var exported []hub.AuditEntry
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var e hub.AuditEntry
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), sc.Text())
		exported = append(exported, e)
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, len(exported), 3)
	require.Equal(t, "redrive", exported[0].Action)
	require.Equal(t, hub.Actor{Kind: hub.ActorToken, Name: fp, Role: "admin", Via: "console"}, exported[0].Actor)

	// No console route writes to the trail: a form posted to it (with the
	// session's CSRF token) finds nothing.
	var before int
	require.NoError(t, h.Pool().QueryRow(t.Context(), `SELECT count(*) FROM audit_log`).Scan(&before))
	for _, p := range []string{"/console/audit", "/console/audit.jsonl"} {
		got := b.post(p, map[string]string{"csrf": b.csrf(), "action": "purge", "actor": "mallory"})
		require.Equal(t, http.StatusNotFound, got.Status, p)
		b.openOK("/console/audit")
	}
	var after int
	require.NoError(t, h.Pool().QueryRow(t.Context(), `SELECT count(*) FROM audit_log`).Scan(&after))
	require.Equal(t, before, after)

	// A read-only session reads the trail too.
	b.openOK("/console/")
	b.click("#sign-out")
	b.signIn(consoleReadOnlyToken, "read-only")
	b.openOK("/console/audit")
	require.GreaterOrEqual(t, b.count("#audit tr.audit-entry"), 3)
	require.False(t, strings.Contains(b.text("#audit"), consoleReadOnlyToken))
}
