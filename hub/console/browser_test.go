package console_test

// The acceptance tests of the console, in a real headless
// Chromium (Debian's package, driven with chromedp) against a whole hub on
// real Postgres and an embedded JetStream server. Run them with
//
//	go test -race -run Browser ./hub/console/
//
// Without chromium they are skipped, unless HOOKHUB_REQUIRE_BROWSER=1 (as
// in .ci/run). HOOKHUB_SCREENSHOTS=dir saves a full-page PNG of each page
// (hub/console/screenshots/ holds those docs/console.md shows).

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// republishButton is the republish plan's confirmation button.
const republishButton = `#confirm-republish-button`

// TestBrowser runs every browser test of the console on one Chromium
// process and browserHubs hubs (a browser suite): each test in its own
// browser contexts, on a hub no other test is using, reset to empty, with
// event ids of its own. Run one alone with -run 'TestBrowser/Replay'.
// browserHubs lanes take the tests in the order below, each lane on its
// own hub, one test at a time: Charts is the first test of its lane (see
// testBrowserCharts). The suite runs beside the package's other tests.
func TestBrowser(t *testing.T) {
	t.Parallel()
	s := newBrowserSuite(t)
	tests := make(chan browserTest, len(browserTests))
	for _, c := range browserTests {
		tests <- c
	}
	close(tests)
	var lanes sync.WaitGroup
	for _, h := range s.hubs {
		lanes.Go(func() {
			for c := range tests {
				t.Run(c.name, func(t *testing.T) { c.test(t, s.on(h)) })
			}
		})
	}
	lanes.Wait()
}

// browserTest is a test of the browser suite.
type browserTest struct {
	name string
	test func(*testing.T, *browserSuite)
}

// browserTests are the suite's tests, Charts first (see
// testBrowserCharts), the longest next.
var browserTests = []browserTest{
	{"Charts", testBrowserCharts},
	{"ReadOnly", testBrowserReadOnly},
	{"OIDC", testBrowserOIDC},
	{"EventsFilter", testBrowserEventsFilter},
	{"BulkReplay", testBrowserPayloadFilterBulkReplay},
	{"CSRF", testBrowserCSRF},
	{"Audit", testBrowserAudit},
	{"ConfirmActions", testBrowserConfirmActions},
	{"Replay", testBrowserReplay},
	{"RedriveDeadLetter", testBrowserRedriveDeadLetter},
	{"WrongToken", testBrowserWrongToken},
	{"Entity", testBrowserEntity},
	{"SignIn", testBrowserSignIn},
	{"EventsLayout", testBrowserEventsLayout},
	{"EventDeliveredTenTimes", testBrowserEventDeliveredTenTimes},
	{"DestinationTimeline", testBrowserDestinationTimeline},
	{"Sessions", testBrowserSessions},
}

// Sign in with the admin token: a session cookie (HttpOnly,
// SameSite=Strict, scoped to /console/), the header names the role, and
// signing out ends the session on the server, not just in the browser.
func testBrowserSignIn(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	s.startHub(t)

	// Without a session every page leads to the sign-in form.
	for _, path := range []string{"/console/", "/console/events", "/console/dead-letters", "/console/replay"} {
		resp := b.open(path)
		require.Equal(t, http.StatusOK, int(resp.Status), path)
		require.Equal(t, b.base+"/console/login", resp.URL, "%s without a session", path)
	}
	require.Equal(t, 1, b.count(`form#login[method=post i][action="/console/login"]`))
	require.Equal(t, "password", eval[string](b, `document.querySelector("#token").type`))
	require.Equal(t, 1, b.count(`#login input[type=hidden][name=csrf]`), "the sign-in form has a CSRF token")
	require.Nil(t, b.cookie("hookhub_session"))
	b.screenshot("login")

	b.setValue("#token", consoleAdminToken)
	resp := b.click("#sign-in")
	b.status(http.StatusOK, resp, "click")
	require.Equal(t, b.base+"/console/", resp.URL)
	require.Equal(t, "admin", b.text("#who"))
	for _, href := range []string{"/console/", "/console/events", "/console/dead-letters", "/console/replay"} {
		require.Equal(t, 1, b.count(fmt.Sprintf(`#nav a[href=%q]`, href)), "nav link %s", href)
	}
	require.Equal(t, 1, b.count(`svg#traffic-chart[role=img]`), "the overview's traffic chart")
	require.Equal(t, 1, b.count("#sign-out"))

	session := b.cookie("hookhub_session")
	require.NotNil(t, session, "no session cookie after sign-in")
	require.True(t, session.HTTPOnly, "HttpOnly")
	require.Equal(t, network.CookieSameSiteStrict, session.SameSite)
	require.Equal(t, "/console/", session.Path)
	require.False(t, session.Secure, "plain HTTP: not Secure (the browser would drop it)")
	require.GreaterOrEqual(t, len(session.Value), 32, "a random session id")
	require.True(t, session.Session, "a browser-session cookie (no Expires or Max-Age): it ends with the browser")

	// Every page is reachable with the session.
	for _, path := range []string{"/console/events", "/console/dead-letters", "/console/replay"} {
		b.openOK(path)
		require.Equal(t, "admin", b.text("#who"), path)
	}

	// Sign out: back to the form, and the old cookie is worthless.
	resp = b.click("#sign-out")
	require.Equal(t, b.base+"/console/login", resp.URL)
	if c := b.cookie("hookhub_session"); c != nil {
		require.Empty(t, c.Value, "the session cookie is cleared")
	}
	resp = b.open("/console/")
	require.Equal(t, b.base+"/console/login", resp.URL, "signed out")
	_, err := chromedp.Call(b.ctx, network.SetCookie, network.SetCookieParams{
		Name: session.Name, Value: session.Value, URL: b.base + "/console/", Path: "/console/",
		HTTPOnly: new(true), SameSite: network.CookieSameSiteStrict})
	require.NoError(t, err)
	resp = b.open("/console/")
	require.Equal(t, b.base+"/console/login", resp.URL, "a signed-out session id is refused by the server")
}

// A wrong token is refused: 401, an error on the form, no session.
func testBrowserWrongToken(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)

	for _, token := range []string{"wrong", consoleAdminToken + "x", strings.ToUpper(consoleAdminToken), consoleReadOnlyToken[:len(consoleReadOnlyToken)-1]} {
		b.openOK("/console/login")
		b.setValue("#token", token)
		resp := b.click("#sign-in")
		b.status(http.StatusUnauthorized, resp, "token %q", token)
		require.Contains(t, b.text("#error"), "wrong token", "token %q", token)
		require.Equal(t, "alert", eval[string](b, `document.querySelector("#error").getAttribute("role")`))
		require.Zero(t, b.count("#who"), "token %q: no session header", token)
		if c := b.cookie("hookhub_session"); c != nil {
			require.Empty(t, c.Value, "token %q: no session cookie", token)
		}
		resp = b.open("/console/")
		require.Equal(t, b.base+"/console/login", resp.URL, "token %q: still signed out", token)
	}
	// The failures are logged, naming the token only by its hash prefix
	// (startHub's cleanup checks that no token is in the log).
	failed := 0
	for _, a := range h.consoleActions() {
		if strings.Contains(fmt.Sprint(a["action"]), "login") && a["token"] != tokenID(consoleAdminToken) {
			failed++
		}
	}
	require.GreaterOrEqual(t, failed, 4, "a console action line per failed sign-in: %v", h.consoleActions())
}

// The events list filters by provider, type, status, time range and event
// id, and pages newest first with #next-page.
func testBrowserEventsFilter(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)

	before := time.Now().Add(-time.Second).UTC()
	// In order of receipt; the list shows them newest first.
	type ev struct{ provider, id, typ, status string }
	seed := []ev{
		{"paddle", "evt_f1", "subscription.created", "PROCESSED"},
		{"paddle", "evt_f2", "subscription.created", "PROCESSED"},
		{"clerk", "msg_f3", "user.created", "PROCESSED"},
		{"paddle", "evt_f4", "subscription.updated", "PROCESSED"},
		{"paddle", "evt_f5", "subscription created", "FAILED"}, // no subject can hold a space
		{"clerk", "msg_f6", "user.deleted", "PROCESSED"},
		{"paddle", "evt_f7", "subscription.created", "PROCESSED"},
	}
	for _, e := range seed {
		h.Deliver(e.provider, e.id, e.typ)
	}
	h.Deliver("paddle", "evt_f2", "subscription.created") // a duplicate: SKIPPED, not listed by default
	h.WaitPublished()
	newestFirst := func(keep func(ev) bool) []string {
		var ids []string
		for _, e := range slices.Backward(seed) {
			if keep(e) {
				ids = append(ids, e.id)
			}
		}
		return ids
	}
	all := newestFirst(func(ev) bool { return true })

	b.signIn(consoleAdminToken, "admin")
	b.openOK("/console/events")
	require.Equal(t, all, b.attrs("tr.event", "data-event-id"), "every first delivery, newest first")
	var statuses []string
	for _, e := range slices.Backward(seed) {
		statuses = append(statuses, e.status)
	}
	require.Equal(t, statuses, b.attrs("tr.event", "data-status"))
	require.Zero(t, b.count("#next-page"), "one page")
	require.Equal(t, 1, b.count(`#events a.event-link[href="/console/event?ref=paddle:evt_f1"]`), "rows link to the event")

	// Through the form, one filter at a time.
	cases := []struct {
		field, value string
		want         []string
		statuses     []string // when set: the rows' data-status
	}{
		{"provider", "clerk", []string{"msg_f6", "msg_f3"}, nil},
		{"type", "subscription.created", []string{"evt_f7", "evt_f2", "evt_f1"}, nil},
		{"status", "FAILED", []string{"evt_f5"}, []string{"FAILED"}},
		{"status", "SKIPPED", []string{"evt_f2"}, []string{"SKIPPED"}},
		{"event_id", "evt_f4", []string{"evt_f4"}, nil},
		{"until", before.Format(time.RFC3339), nil, nil},
		{"since", before.Format(time.RFC3339), all, nil},
		{"event_id", "evt_nope", nil, nil},
	}
	for _, c := range cases {
		b.openOK("/console/events")
		b.setValue(fmt.Sprintf("#filters [name=%s]", c.field), c.value)
		b.clickOK("#apply-filters")
		require.Contains(t, b.location(), c.field+"="+url.QueryEscape(c.value), "the filter is in the URL (bookmarkable)")
		got := b.attrs("tr.event", "data-event-id")
		if len(c.want) == 0 {
			require.Empty(t, got, "%s=%s", c.field, c.value)
			require.Equal(t, 1, b.count("#no-events"), "%s=%s: says so when nothing matches", c.field, c.value)
			continue
		}
		require.Equal(t, c.want, got, "%s=%s", c.field, c.value)
		if c.statuses != nil {
			require.Equal(t, c.statuses, b.attrs("tr.event", "data-status"), "%s=%s", c.field, c.value)
		}
		if c.field == "provider" {
			require.Equal(t, []string{"clerk", "clerk"}, b.attrs("tr.event", "data-provider"))
		}
	}
	// Filters combine.
	b.openOK("/console/events?provider=paddle&status=PROCESSED&type=subscription.created")
	require.Equal(t, []string{"evt_f7", "evt_f2", "evt_f1"}, b.attrs("tr.event", "data-event-id"))

	// Paging: pages of 3, newest first, no row twice, the filter kept.
	pages := func(path string, size int) [][]string {
		b.openOK(path)
		var out [][]string
		for {
			rows := b.attrs("tr.event", "data-event-id")
			require.LessOrEqual(t, len(rows), size, "page %d of %s", len(out)+1, path)
			out = append(out, rows)
			if b.count("#next-page") == 0 {
				return out
			}
			require.Less(t, len(out), 10, "paging does not end")
			b.clickOK("#next-page")
		}
	}
	got := pages("/console/events?limit=3", 3)
	require.Equal(t, [][]string{all[0:3], all[3:6], all[6:7]}, got)
	paddle := newestFirst(func(e ev) bool { return e.provider == "paddle" })
	got = pages("/console/events?provider=paddle&limit=2", 2)
	require.Equal(t, paddle, slices.Concat(got...), "the provider filter holds on every page")
	require.Len(t, got, 3)
}

// An event delivered 10 times (the provider retried the same signed
// webhook) shows 10 deliveries: the first and nine duplicates, each with its
// signature header, and the exact body.
func testBrowserEventDeliveredTenTimes(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)
	h.startFlaky()

	w := h.Sign("paddle", "evt_ten", "subscription.created")
	for i := range 10 {
		a := h.Post(w)
		require.Equal(t, http.StatusOK, a.Status, "delivery %d: %s", i+1, a.Raw)
		require.Equal(t, i > 0, a.Idempotent(), "delivery %d", i+1)
	}
	h.WaitPublished()
	h.Eventually(func() bool { return h.effects("evt_ten") == 1 }, "flaky processes evt_ten")
	var seq int64
	require.NoError(t, h.Pool().QueryRow(t.Context(),
		`SELECT stream_seq FROM processed_webhook_events WHERE provider = 'paddle' AND event_id = 'evt_ten'`).Scan(&seq))

	b.signIn(consoleAdminToken, "admin")
	b.openOK("/console/event?ref=" + url.QueryEscape("paddle:evt_ten"))
	require.Contains(t, b.text("h1"), "paddle")
	require.Contains(t, b.text("h1"), "evt_ten")
	require.Equal(t, 10, b.count("#deliveries tr.delivery"), "10 deliveries")
	statuses := b.attrs("#deliveries tr.delivery", "data-status")
	slices.Sort(statuses)
	require.Equal(t, append([]string{"PROCESSED"}, slices.Repeat([]string{"SKIPPED"}, 9)...), statuses)
	sig := w.Header.Get("Paddle-Signature")
	require.NotEmpty(t, sig)
	require.Equal(t, slices.Repeat([]string{sig}, 10), b.texts("#deliveries tr.delivery code.signature"),
		"each delivery's signature header")
	require.Contains(t, b.text("#stream-seq"), fmt.Sprint(seq))
	require.Equal(t, string(w.Body), eval[string](b, `document.querySelector("#body-raw").textContent`), "the exact body")
	require.Contains(t, eval[string](b, `document.querySelector("#body-pretty").textContent`), "\n  ", "indented JSON")
	require.Contains(t, b.text(`#outcomes tr[data-subscriber="flaky"] td.outcome`), "processed")
	require.Equal(t, 1, b.count(`#republish.action a#republish-plan`), "admin may republish (through its plan)")
	b.screenshot("event")
}

// A dead-lettered event is redriven from the dead letters page after the
// fix, and processed exactly once.
func testBrowserRedriveDeadLetter(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)
	h.Deliver("clerk", "msg_other", "user.created") // flaky does not consume clerk
	id := h.processedAndDead("evt_ok", "evt_dead")

	b.signIn(consoleAdminToken, "admin")
	// The overview points at the stuck subscriber.
	h.Eventually(func() bool {
		b.openOK("/console/")
		return b.text(`#subscribers tr[data-subscriber="flaky"] td.dead-letters`) == "1"
	}, "the overview counts flaky's dead letter")
	require.Contains(t, strings.Join(b.texts("#attention li"), "\n"), flaky, "attention names the subscriber with a dead letter")
	require.Zero(t, b.count("#attention li.all-clear"))
	require.Equal(t, "ok", b.text("#stream-state"))
	b.screenshot("overview")

	// The fix is deployed; the operator redrives from the page.
	h.failOn("evt_dead", false)
	b.openOK("/console/dead-letters?subscriber=flaky")
	row := fmt.Sprintf(`tr.dead-letter[data-id="%d"]`, id)
	require.Equal(t, 1, b.count(row))
	require.Equal(t, "evt_dead", eval[string](b, fmt.Sprintf(`document.querySelector(%s).dataset.eventId`, jsString(row))))
	require.Contains(t, b.text(row), "bug: cannot handle evt_dead", "the error")
	require.Equal(t, 1, b.count("#redrive-all"))
	b.screenshot("dead-letters")
	require.Zero(t, h.effects("evt_dead"))

	b.clickOK(row + " form.redrive .redrive-button")
	require.Contains(t, b.text("#flash"), "redrive requested for 1 dead letter(s)")
	h.Eventually(func() bool {
		return h.Count(`SELECT count(*) FROM flaky.dead_letters WHERE id = $1 AND redriven_at IS NOT NULL`, id) == 1
	}, "the dead letter is marked redriven")
	require.Equal(t, 1, h.effects("evt_dead"), "processed once")
	require.Equal(t, 1, h.Count(`SELECT count(*) FROM flaky.processed_messages WHERE event_id = 'evt_dead' AND dead_letter_id = $1`, id))
	// And stays processed once: nothing else redelivers it.
	holds(t, 2*time.Second, func() bool { return h.effects("evt_dead") == 1 }, "still processed once")
	require.Equal(t, 1, h.effects("evt_ok"))

	// The action is logged with who did it.
	found := false
	for _, a := range h.consoleActions() {
		if strings.Contains(fmt.Sprint(a["action"]), "redrive") && a["who"] == "admin" && a["token"] == tokenID(consoleAdminToken) {
			found = true
		}
	}
	require.True(t, found, "a console action line for the redrive: %v", h.consoleActions())
}

// A replay's dry run shows the plan and changes nothing; its confirmation
// processes only the events the subscriber had not processed.
func testBrowserReplay(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)
	h.startFlaky()

	ids := []string{"evt_r0", "evt_r1", "evt_r2", "evt_r3", "evt_r4", "evt_r5"}
	for _, id := range ids {
		h.Deliver("paddle", id, "subscription.created")
	}
	h.Eventually(func() bool { return h.Count(`SELECT count(*) FROM flaky.effects`) == len(ids) }, "flaky processes everything")
	// Two events were "never processed": their side effects and processed
	// rows are gone (as if the handler had been a no-op by mistake).
	lost := []string{"evt_r1", "evt_r4"}
	_, err := h.Pool().Exec(t.Context(), `DELETE FROM flaky.effects WHERE event_id = ANY($1)`, lost)
	require.NoError(t, err)
	_, err = h.Pool().Exec(t.Context(), `DELETE FROM flaky.processed_messages WHERE event_id = ANY($1)`, lost)
	require.NoError(t, err)
	msgs := h.StreamInfo().State.Msgs
	processedRows := h.Count(`SELECT count(*) FROM flaky.processed_messages`)

	b.signIn(consoleAdminToken, "admin")
	b.openOK("/console/replay")
	b.setValue("#replay [name=subscriber]", flaky)
	b.setValue("#replay [name=since]", "1h")
	b.clickOK("#dry-run")
	require.Equal(t, len(ids), b.number("#plan-matched"), "matched")
	require.Equal(t, len(lost), b.number("#plan-deliver"), "would deliver: not yet processed")
	require.Equal(t, len(ids)-len(lost), b.number("#plan-skip"), "would skip: already processed")
	require.Equal(t, 1, b.count("form#confirm.action #confirm-replay"))
	b.screenshot("replay-plan")

	// The dry run changed nothing.
	holds(t, time.Second, func() bool { return h.StreamInfo().State.Msgs == msgs }, "the dry run published nothing")
	require.Equal(t, processedRows, h.Count(`SELECT count(*) FROM flaky.processed_messages`))
	require.Equal(t, len(ids)-len(lost), h.Count(`SELECT count(*) FROM flaky.effects`))

	resp := b.click("#confirm-replay")
	b.status(http.StatusOK, resp, "click")
	require.Contains(t, resp.URL, b.base+"/console/replay/jobs/")
	b.waitUntil(`document.querySelector("#job") && document.querySelector("#job").dataset.state === "done"`, "the replay job finishes")
	require.Equal(t, 1, b.count("progress#progress"))
	require.Equal(t, len(lost), b.number("#result-processed"))
	require.Equal(t, len(ids)-len(lost), b.number("#result-skipped"))
	require.Zero(t, b.number("#result-dead-lettered"))
	require.Zero(t, b.number("#result-unsettled"))
	b.screenshot("replay-job")

	for _, id := range ids {
		require.Equal(t, 1, h.effects(id), "%s processed exactly once", id)
	}
	require.Equal(t, len(ids), h.Count(`SELECT count(*) FROM flaky.processed_messages`))
}

// A state-changing form posted without its CSRF token (or with a wrong one)
// is refused with 403 and does nothing; the same form intact works.
func testBrowserCSRF(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)
	h.Deliver("paddle", "evt_csrf", "subscription.created")
	h.WaitPublished()
	msgs := h.StreamInfo().State.Msgs

	// The sign-in form too (login CSRF).
	b.openOK("/console/login")
	b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#login input[name=csrf]').remove()`))
	b.setValue("#token", consoleAdminToken)
	resp := b.click("#sign-in")
	b.status(http.StatusForbidden, resp, "sign-in without CSRF")
	require.Contains(t, b.text("#error"), "CSRF")
	require.Nil(t, b.cookie("hookhub_session"), "no session")

	b.signIn(consoleAdminToken, "admin")
	event := "/console/event?ref=" + url.QueryEscape("paddle:evt_csrf")
	plan := "/console/event/republish?ref=" + url.QueryEscape("paddle:evt_csrf")
	for _, tamper := range []string{
		`document.querySelector('#confirm-republish input[name=csrf]').remove()`,
		`document.querySelector('#confirm-republish input[name=csrf]').value = 'A'.repeat(43)`,
		`document.querySelector('#confirm-republish input[name=csrf]').value = ''`,
	} {
		b.openOK(plan)
		b.do(chromedp.Evaluate[chromedp.Void](tamper))
		resp := b.click(republishButton)
		b.status(http.StatusForbidden, resp, "%s", tamper)
		require.Contains(t, b.text("#error"), "CSRF", tamper)
	}
	// Forms a script on the page builds without the token are refused too.
	for _, path := range []string{"/console/event/republish", "/console/replay/plan", "/console/replay/run",
		"/console/dead-letters/redrive", "/console/logout"} {
		b.openOK(event)
		p := b.post(path, map[string]string{"ref": "paddle:evt_csrf", "subscriber": "nobody", "since": "1h", "all": "1"})
		require.Equal(t, http.StatusForbidden, p.Status, "POST %s without csrf: %s", path, p.Error)
		require.Contains(t, p.Error, "CSRF", path)
	}
	holds(t, time.Second, func() bool { return h.StreamInfo().State.Msgs == msgs }, "nothing was republished")
	b.openOK("/console/")
	require.Equal(t, "admin", b.text("#who"), "the refused sign-out left the session alone")

	// The untouched form works: it was the token that was missing.
	b.openOK(plan)
	b.clickOK(republishButton)
	require.Contains(t, b.text("#flash"), "republished")
	h.Eventually(func() bool { return h.StreamInfo().State.Msgs == msgs+1 }, "the intact form republishes")
}

// The read-only token sees every page and no action, and its POSTs are
// refused even with a valid CSRF token of its own session.
func testBrowserReadOnly(t *testing.T, s *browserSuite) {
	ro := s.newBrowser(t)
	admin := s.newBrowser(t)
	h := s.startHub(t)
	id := h.processedAndDead("evt_ro", "evt_ro_dead")
	h.failOn("evt_ro_dead", false)
	msgs := h.StreamInfo().State.Msgs

	admin.signIn(consoleAdminToken, "admin")
	ro.signIn(consoleReadOnlyToken, "read-only")
	noActionForReadOnly(t, admin, ro, "paddle:evt_ro", func(path string) {
		require.Equal(t, "read-only", ro.text("#who"), path)
		require.Zero(t, ro.count(".redrive-button, #redrive-all, #republish, #dry-run, #confirm-replay, #confirm-republish, #confirm-redrive"), path)
		if strings.HasPrefix(path, "/console/dead-letters?") {
			require.Equal(t, 1, ro.count(`tr.dead-letter`), "the read-only token sees the dead letter")
		}
	})

	// Its POSTs, with a valid CSRF token from its own session.
	csrf := refusesEveryAction(t, ro, "paddle:evt_ro", id)
	holds(t, time.Second, func() bool { return h.StreamInfo().State.Msgs == msgs }, "nothing republished or replayed")
	require.Equal(t, 1, h.Count(`SELECT count(*) FROM flaky.dead_letters WHERE redrive_requested_at IS NULL AND redriven_at IS NULL`),
		"no redrive requested")
	require.Zero(t, h.effects("evt_ro_dead"))

	// The same token signs out with it: the CSRF token was valid.
	p := ro.post("/console/logout", map[string]string{"csrf": csrf})
	require.Equal(t, ro.base+"/console/login", p.URL, "sign-out: %d %s", p.Status, p.Error)
	resp := ro.open("/console/")
	require.Equal(t, ro.base+"/console/login", resp.URL, "signed out")
}

// layout measures the events table in the browser: whether it fits its
// box, and the tallest event id link.
type layout struct {
	ScrollWidth, ClientWidth int     // of the table's scrolling box
	IDHeight                 float64 // the tallest event id link, px
	LineHeight               float64 // of an event id link, px
	StatusVisible            bool    // every row's status is inside the box and the viewport
	ViewportWidth            int
}

func (b *browser) eventsLayout() layout {
	b.t.Helper()
	return eval[layout](b, `(() => {
		const wrap = document.querySelector('#events').closest('.table-wrap');
		const box = wrap.getBoundingClientRect();
		let idHeight = 0, line = 0, visible = true;
		for (const a of document.querySelectorAll('#events a.event-link')) {
			idHeight = Math.max(idHeight, a.getBoundingClientRect().height);
			line = parseFloat(getComputedStyle(a).lineHeight);
		}
		for (const s of document.querySelectorAll('#events tr.event .status')) {
			const r = s.getBoundingClientRect();
			visible = visible && r.width > 0 && r.left >= box.left && r.right <= box.right && r.right <= window.innerWidth;
		}
		return {ScrollWidth: wrap.scrollWidth, ClientWidth: wrap.clientWidth, IDHeight: idHeight, LineHeight: line,
			StatusVisible: visible, ViewportWidth: window.innerWidth};
	})()`)
}

// The events table fits a laptop's width even when a row carries a long
// error and a long event id (both cut with an ellipsis, whole in their
// title and on the event page); on a phone the status column is on screen.
func testBrowserEventsLayout(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)

	longID := "evt_" + strings.Repeat("0123456789abcdef", 12) // 196 characters
	longType := "subscription." + strings.Repeat("unbrokentoken", 8) + " created"
	h.Deliver("paddle", "evt_l1", "subscription.created")
	h.Deliver("clerk", "msg_l2", "user.created")
	h.Deliver("paddle", longID, "subscription.updated")
	h.Deliver("paddle", "evt_l3_failed", longType) // FAILED, its error quotes the type
	h.Deliver("paddle", "evt_l4", "subscription.created")
	h.WaitPublished()

	b.signIn(consoleAdminToken, "admin")
	b.openOK("/console/events")
	failed := `tr.event[data-event-id="evt_l3_failed"]`
	require.Equal(t, "FAILED", b.attrs(failed, "data-status")[0])
	errText := eval[string](b, `document.querySelector('tr.event[data-event-id="evt_l3_failed"] .cell-error').getAttribute('title')`)
	require.Contains(t, errText, strings.Repeat("unbrokentoken", 8), "the whole error is the cell's title")
	require.Equal(t, []string{"paddle:" + longID}, b.attrs(fmt.Sprintf(`tr.event[data-event-id=%q] a.event-link`, longID), "title"),
		"the whole id is the link's title")

	b.screenshot("events")
	l := b.eventsLayout()
	require.Equal(t, laptopWidth, l.ViewportWidth)
	require.LessOrEqual(t, l.ScrollWidth, l.ClientWidth, "at %d px the events table fits: %+v", laptopWidth, l)
	require.LessOrEqual(t, l.IDHeight, 1.5*l.LineHeight, "an event id takes one line: %+v", l)
	require.True(t, l.StatusVisible, "%+v", l)
	// The stream sequence column is on screen.
	require.True(t, eval[bool](b, `[...document.querySelectorAll('#events tr.event td:last-child')].every(
		(td) => td.getBoundingClientRect().right <= td.closest('.table-wrap').getBoundingClientRect().right + 0.5)`))

	// The event page shows the whole id, and its deliveries table fits
	// too, a long error included.
	fits := `((w) => w.scrollWidth <= w.clientWidth)(document.querySelector('#deliveries').closest('.table-wrap'))`
	b.openOK("/console/event?ref=" + url.QueryEscape("paddle:"+longID))
	require.Equal(t, longID, b.text("h1 .id"))
	require.True(t, eval[bool](b, fits), "the deliveries table fits at %d px", laptopWidth)
	b.openOK("/console/event?ref=" + url.QueryEscape("paddle:evt_l3_failed"))
	require.Contains(t, b.text("#deliveries td.error-cell"), strings.Repeat("unbrokentoken", 8), "the whole error")
	require.True(t, eval[bool](b, fits), "the deliveries table fits at %d px with a long error", laptopWidth)

	// A phone.
	b.do(chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateMobile, chromedp.EmulateScale(1)))
	b.openOK("/console/events")
	b.screenshot("events-phone")
	l = b.eventsLayout()
	require.Equal(t, phoneWidth, l.ViewportWidth)
	require.True(t, l.StatusVisible, "at %d px every row's status is on screen: %+v", phoneWidth, l)
	require.LessOrEqual(t, l.ScrollWidth, l.ClientWidth, "at %d px the events table fits: %+v", phoneWidth, l)
	require.LessOrEqual(t, l.IDHeight, 1.5*l.LineHeight, "%+v", l)
	b.do(chromedp.EmulateViewport(laptopWidth, laptopHeight))
}

// "Republish" and "Redrive all" act only once confirmed: the first click
// shows the plan (what, how many, which ids) and changes nothing; the
// confirmation does it, once.
func testBrowserConfirmActions(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)
	h.startFlaky()

	h.Deliver("paddle", "evt_rp", "subscription.created")
	h.failOn("evt_d1", true)
	h.failOn("evt_d2", true)
	h.Deliver("paddle", "evt_d1", "subscription.created")
	h.Deliver("paddle", "evt_d2", "subscription.created")
	h.Eventually(func() bool { return h.Count(`SELECT count(*) FROM flaky.dead_letters`) == 2 }, "two dead letters")
	h.Eventually(func() bool { return h.effects("evt_rp") == 1 }, "evt_rp processed")
	h.WaitPublished()
	msgs := h.StreamInfo().State.Msgs
	b.signIn(consoleAdminToken, "admin")

	// Republish: the event page's button shows the plan.
	b.openOK("/console/event?ref=" + url.QueryEscape("paddle:evt_rp"))
	b.clickOK("#republish-plan")
	require.Contains(t, b.location(), "/console/event/republish?")
	require.Equal(t, 1, b.number("#plan-republish"))
	require.Equal(t, "paddle:evt_rp", b.text("#plan-ref"))
	require.Equal(t, 1, b.number("#plan-subscribers"), "flaky takes its subject")
	require.Equal(t, []string{"paddle:evt_rp"}, b.attrs(`#confirm-republish input[name=ref]`, "value"), "the confirmation carries the plan")
	b.screenshot("republish-plan")
	holds(t, time.Second, func() bool { return h.StreamInfo().State.Msgs == msgs }, "the plan published nothing")
	b.clickOK("#confirm-republish-button")
	require.Contains(t, b.text("#flash"), "republished")
	h.Eventually(func() bool { return h.StreamInfo().State.Msgs == msgs+1 }, "the confirmation republishes")
	holds(t, time.Second, func() bool { return h.StreamInfo().State.Msgs == msgs+1 }, "once")
	require.Equal(t, 1, h.effects("evt_rp"), "flaky skipped the copy")

	// Redrive all: the dead letters page's button shows the plan.
	h.failOn("evt_d1", false)
	h.failOn("evt_d2", false)
	b.openOK("/console/dead-letters?subscriber=flaky")
	b.clickOK("#redrive-all")
	require.Equal(t, 2, b.number("#plan-redrive"))
	require.ElementsMatch(t, []string{"evt_d1", "evt_d2"}, b.attrs("#plan-letters tr.planned", "data-event-id"))
	ids := b.attrs("#plan-letters tr.planned", "data-id")
	require.Equal(t, []string{strings.Join(ids, ",")}, b.attrs(`#confirm-redrive input[name=ids]`, "value"), "the confirmation carries the plan's ids")
	b.screenshot("redrive-plan")
	holds(t, time.Second, func() bool {
		return h.Count(`SELECT count(*) FROM flaky.dead_letters WHERE redrive_requested_at IS NOT NULL`) == 0
	}, "the plan requested nothing")
	require.Zero(t, h.effects("evt_d1")+h.effects("evt_d2"))
	b.clickOK("#confirm-redrive-button")
	require.Contains(t, b.text("#flash"), "redrive requested for 2 dead letter(s)")
	h.Eventually(func() bool { return h.effects("evt_d1") == 1 && h.effects("evt_d2") == 1 }, "both redriven")
	holds(t, time.Second, func() bool { return h.effects("evt_d1") == 1 && h.effects("evt_d2") == 1 }, "each once")
}
