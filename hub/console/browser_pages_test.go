package console_test

// The browser tests of the charts, sessions, audit, entity, bulk action
// and single sign-on pages; TestBrowser (browser_test.go) runs them.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Charts: webhooks from two providers (one refused for a bad signature)
// and a subscriber that dead-letters one event; the charts page shows a
// row and two charts per provider and for the subscriber, with their
// figures, and the range links switch to 6 and 24 hours. It is the first
// test of its lane, so on a hub no test has used: the per-provider counts
// live in the hub's memory, which startHub's reset does not clear.
func testBrowserCharts(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)
	h.startFlaky()
	h.failOn("evt_chart_p2", true)
	for i := range 3 {
		h.Deliver("paddle", fmt.Sprint("evt_chart_p", i), "subscription.created")
	}
	for i := range 2 {
		h.Deliver("clerk", fmt.Sprint("evt_chart_c", i), "user.created")
	}
	w := h.Sign("paddle", "evt_chart_bad", "subscription.created")
	w.Body = append(w.Body, ' ') // the signature no longer matches
	require.Equal(t, http.StatusUnauthorized, h.Post(w).Status)
	h.Eventually(func() bool {
		return h.Count(`SELECT count(*) FROM flaky.processed_messages`) == 2 && h.Count(`SELECT count(*) FROM flaky.dead_letters`) == 1
	}, "flaky processed two events and dead-lettered one")

	b.signIn(consoleReadOnlyToken, "read-only")
	require.Equal(t, 1, b.count(`#nav a[href="/console/charts"]`), "the nav links the charts")
	b.clickOK(`#nav a[href="/console/charts"]`)
	require.Equal(t, b.base+"/console/charts", b.location())
	require.Equal(t, "Which provider is failing?", b.text("#ingest-fail-h"))
	require.Equal(t, "Is any subscriber slow?", b.text("#proc-lat-h"))

	require.Equal(t, []string{"paddle", "clerk"}, b.attrs("#provider-failures tbody tr", "data-provider"), "paddle failed a request: first")
	require.Equal(t, "4", b.text(`#provider-failures tr[data-provider=paddle] .total`))
	require.Equal(t, "25.0%", b.text(`#provider-failures tr[data-provider=paddle] .fail-rate`))
	require.Equal(t, "1", b.text(`#provider-failures tr[data-provider=paddle] .auth`))
	require.Equal(t, "0.0%", b.text(`#provider-failures tr[data-provider=clerk] .fail-rate`))
	require.Equal(t, "2", b.text(`#provider-latency tr[data-provider=clerk] .ok`))
	require.NotEqual(t, "–", b.text(`#provider-latency tr[data-provider=clerk] .p95`), "a latency for clerk's 2xx answers")
	require.Equal(t, 4, b.count(`#provider-failures svg.spark[role=img], #provider-latency svg.spark[role=img]`))
	require.Equal(t, 60, b.count(`#provider-failures tr[data-provider=paddle] svg g`), "a bar per minute of the hour")
	// The failure bar of this minute is drawn: a rect with a height.
	require.Equal(t, 1, b.count(`#provider-failures tr[data-provider=paddle] svg rect.sauth`))
	require.Contains(t, b.attrs(`#provider-failures tr[data-provider=paddle] svg`, "aria-label")[0], "1 of 4 failed (25.0%)")

	require.Equal(t, []string{flaky}, b.attrs("#subscriber-failures tbody tr", "data-subscriber"))
	require.Equal(t, "2", b.text(`#subscriber-failures tr[data-subscriber=flaky] .processed`))
	require.Equal(t, "1", b.text(`#subscriber-failures tr[data-subscriber=flaky] .dead-lettered`))
	require.Equal(t, 1, b.count(`#subscriber-failures tr[data-subscriber=flaky] svg rect.s5xx`), "the dead letter's bar")
	require.Equal(t, "2", b.text(`#subscriber-latency tr[data-subscriber=flaky] .samples`))
	require.NotEqual(t, "–", b.text(`#subscriber-latency tr[data-subscriber=flaky] .p95`))
	require.Equal(t, 1, b.count(`#subscriber-latency tr[data-subscriber=flaky] svg rect.slat`))
	b.screenshot("charts")

	b.clickOK(`a[href="/console/charts?hours=6"]`)
	require.Equal(t, "last 6 h", b.text(`.ranges a[aria-current=page]`))
	require.Equal(t, 72, b.count(`#provider-failures tr[data-provider=paddle] svg g`))
	require.Equal(t, "25.0%", b.text(`#provider-failures tr[data-provider=paddle] .fail-rate`))
	b.clickOK(`a[href="/console/charts?hours=24"]`)
	require.Equal(t, "1", b.text(`#subscriber-failures tr[data-subscriber=flaky] .dead-lettered`))

	resp := b.open("/console/charts?hours=48")
	require.Equal(t, http.StatusBadRequest, int(resp.Status))
	require.Contains(t, b.errorText(), "hours: must be a whole number of hours from 1 to 24")
}

// The Sessions page: an admin sees every session, theirs
// marked, plans the revocation of another (a read-only token's, signed in
// elsewhere), confirms it; that session is refused at its next request,
// and the audit trail lists the revocation under the admin's token.
func testBrowserSessions(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)
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

// The audit trail in the browser: an operator replays,
// republishes and redrives from the console; the audit page lists those
// actions with the right names (the action, the token's fingerprint, the
// console), newest first, filters them, and exports them as JSON lines.
// Dry runs and plans are not listed; nothing on the page writes to the
// trail.
func testBrowserAudit(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)
	h.processedAndDead("evt_au1", "evt_au2")
	h.WaitPublished()
	b.signIn(consoleAdminToken, "admin")

	// A replay: its dry run (the plan), then the run.
	b.openOK("/console/replay")
	b.setValue("#replay [name=subscriber]", flaky)
	b.setValue("#replay [name=since]", "1h")
	b.clickOK("#dry-run")
	resp := b.click("#confirm-replay")
	b.status(http.StatusOK, resp, "click")
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
	require.Len(t, b.auditedAfter(h.audited, "data-id"), 3, "the replay, the republish and the redrive; not the dry run nor the plans")
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
	all := b.attrs("#audit tr.audit-entry", "data-action")
	require.Equal(t, slices.Repeat([]string{"replay"}, len(all)), all, "replays only")
	require.Equal(t, []string{"replay"}, b.auditedAfter(h.audited, "data-action"), "this test's one")
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

// Entity: search an entity from the Events page and see its
// events from two providers, newest first, with each subscriber's outcome.
//
// The events carry their entities at ingest through the store (the hub's
// ingest API, as a provider's extraction fills hub.Delivery.Entities);
// the running hub's relay publishes them and a real subscriber consumes
// them.
func testBrowserEntity(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)
	h.startFlaky() // takes paddle.>
	h.failOn("evt_ent_paddle_bad", true)
	ctx := context.Background()

	cus := []hub.Entity{{Kind: "customer", ID: "cus_browser"}}
	now := time.Now()
	var ds []hub.Delivery
	for i, e := range [][2]string{
		{"paddle", "evt_ent_paddle_ok"},  // processed by flaky
		{"clerk", "evt_ent_clerk"},       // a destination's attempts; flaky does not take clerk.>
		{"paddle", "evt_ent_paddle_bad"}, // dead-lettered by flaky
	} {
		ds = append(ds, hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: e[0], EventID: e[1], EventType: "subscription.created",
			Body: []byte(`{"id":"` + e[1] + `"}`), ReceivedAt: now.Add(time.Duration(i-3) * time.Second), Entities: cus})
	}
	// Another customer's event: not on the page.
	ds = append(ds, hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: "evt_ent_other",
		EventType: "subscription.created", Body: []byte(`{}`), ReceivedAt: now, Entities: []hub.Entity{{Kind: "customer", ID: "cus_other"}}})
	_, err := store.New(h.Pool()).Ingest(ctx, ds)
	require.NoError(t, err)
	h.WaitPublished()
	h.Eventually(func() bool { return h.effects("evt_ent_paddle_ok") == 1 }, "flaky processed evt_ent_paddle_ok")
	h.Eventually(func() bool {
		return h.Count(`SELECT count(*) FROM flaky.dead_letters WHERE event_id = 'evt_ent_paddle_bad'`) == 1
	}, "flaky dead-lettered evt_ent_paddle_bad")
	addDestinationAttempts(t, h.Pool(), timelineDestination,
		destination.Attempt{Provider: "clerk", EventID: "evt_ent_clerk", At: now, Status: 503, Latency: 40 * time.Millisecond,
			Outcome: destination.OutcomeFailed})

	b.signIn(consoleReadOnlyToken, "read-only")
	b.openOK("/console/events")
	b.setValue("#e-id", "cus_browser")
	b.clickOK("#entity-find")
	require.Contains(t, b.location(), "/console/entity?id=cus_browser")
	require.Equal(t, "cus_browser", b.text("#entity-id"))

	ev := `#timeline li.timeline-event`
	require.Equal(t, []string{"paddle", "clerk", "paddle"}, b.attrs(ev, "data-provider"), "both providers, newest first")
	require.Equal(t, []string{"evt_ent_paddle_bad", "evt_ent_clerk", "evt_ent_paddle_ok"}, b.attrs(ev, "data-event-id"))
	outcome := func(eventID, sub string) string {
		return b.text(ev + `[data-event-id="` + eventID + `"] tr[data-subscriber="` + sub + `"] td.outcome`)
	}
	require.Equal(t, "processed", outcome("evt_ent_paddle_ok", flaky))
	require.Equal(t, "dead-lettered", outcome("evt_ent_paddle_bad", flaky))
	require.Contains(t, b.text(ev+`[data-event-id="evt_ent_paddle_bad"] tr[data-subscriber="flaky"]`), "bug: cannot handle evt_ent_paddle_bad")
	require.Zero(t, b.count(ev+`[data-event-id="evt_ent_clerk"] tr[data-subscriber="flaky"]`), "flaky does not take clerk events")
	require.Equal(t, "pending", outcome("evt_ent_clerk", timelineDestination))
	require.Contains(t, b.text(ev+`[data-event-id="evt_ent_clerk"] tr[data-subscriber="`+timelineDestination+`"] td.answer`), "503")
	b.screenshot("entity")

	// An event's page links back to its entity.
	b.clickOK(ev + `[data-event-id="evt_ent_clerk"] a.event-link`)
	require.Equal(t, "customer cus_browser", b.text("#entities"))
	b.clickOK("#entities a.entity-link")
	require.Equal(t, 3, b.count(ev))

	// An id nobody has, and a bad one.
	b.setValue("#e-id", "cus_nobody")
	b.clickOK("#entity-find")
	require.Equal(t, 1, b.count("#no-events"))
	resp := b.open("/console/entity?id=cus%01")
	require.Equal(t, 400, int(resp.Status))
	require.Contains(t, b.errorText(), "entity: ")
	require.Contains(t, b.errorText(), "contains control characters")
}

// bystander is a second subscriber of paddle.>: a bulk replay to flaky
// must never reach it.
const bystander = "bystander"

// startBystander runs a subscriber that records one effect row per handler
// run, until the test ends.
func startBystander(h *testHub) *subscriber.Subscriber {
	h.t.Helper()
	_, err := h.Pool().Exec(h.t.Context(), "DROP SCHEMA IF EXISTS "+bystander+" CASCADE")
	require.NoError(h.t, err)
	fsys := fstest.MapFS{"00001_effects.sql": {Data: []byte(
		"-- +goose Up\nCREATE TABLE bystander.effects (event_id TEXT NOT NULL);\n-- +goose Down\nDROP TABLE bystander.effects;\n")}}
	sub, err := subscriber.New(subscriber.Config{Name: bystander, Pool: h.Pool(), JetStream: h.JetStream(), Migrations: fsys,
		MaxDeliver: 2, Backoff: []time.Duration{50 * time.Millisecond}, AckWait: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(h.t, err)
	sub.Handle("paddle.>", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		_, err := tx.Exec(ctx, `INSERT INTO bystander.effects (event_id) VALUES ($1)`, ev.EventID)
		return err
	})
	h.run(sub, bystander)
	return sub
}

// The Events page filters on the payload; "Bulk action…" on that filter
// plans a replay to flaky (dry run: nothing published), the confirmation
// runs it as a job with progress, and then flaky has processed each event
// of the set exactly once (the one it had lost is processed, the others
// skipped) while the bystander saw none of the copies.
func testBrowserPayloadFilterBulkReplay(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)
	h.startFlaky()
	by := startBystander(h)

	var set []string
	for i := range 6 {
		id := fmt.Sprintf("evt_bulk%d", i)
		cus := "ctm_other"
		if i%2 == 0 {
			cus, set = "ctm_bulk", append(set, id)
		}
		body, err := samples.Body("paddle", id, "subscription.created", []byte(`{"id":"sub_`+id+`","customer_id":"`+cus+`"}`), time.Now())
		require.NoError(t, err)
		a := h.Post(h.SignBody("paddle", id, "subscription.created", body))
		require.Equal(t, http.StatusOK, a.Status, "%s", a.Raw)
	}
	h.Eventually(func() bool {
		return h.Count(`SELECT count(*) FROM flaky.effects`) == 6 && h.Count(`SELECT count(*) FROM bystander.effects`) == 6
	}, "both subscribers process everything")
	// A bulk action takes published events only, and a subscriber may
	// process an event before the relay records its publication.
	h.Eventually(func() bool {
		return h.Count(`SELECT count(*) FROM processed_webhook_events WHERE stream_seq IS NOT NULL`) == 6
	}, "every event published")
	// flaky "never processed" evt_bulk2: its effect and processed row gone.
	lost := "evt_bulk2"
	_, err := h.Pool().Exec(t.Context(), `DELETE FROM flaky.effects WHERE event_id = $1`, lost)
	require.NoError(t, err)
	_, err = h.Pool().Exec(t.Context(), `DELETE FROM flaky.processed_messages WHERE event_id = $1`, lost)
	require.NoError(t, err)
	byStats := by.Stats()

	b.signIn(consoleAdminToken, "admin")
	b.openOK("/console/events")
	b.setValue("#f-since", "1h")
	b.setValue("#f-where1", "data.customer_id=ctm_bulk")
	b.clickOK("#apply-filters")
	require.Equal(t, []string{"evt_bulk4", "evt_bulk2", "evt_bulk0"}, b.attrs("tr.event", "data-event-id"), "the payload filter, newest first")
	require.Zero(t, b.count("#scan-truncated"))
	b.screenshot("events-payload-filter")

	// A path that is not one is refused with ops' message.
	b.setValue("#f-where1", "data..customer_id=x")
	b.click("#apply-filters")
	require.Contains(t, b.errorText(), "is not a payload path")
	b.setValue("#f-where1", "data.customer_id=ctm_bulk")
	b.clickOK("#apply-filters")

	msgs := h.StreamInfo().State.Msgs
	b.clickOK("#bulk-action")
	b.setValue("#b-action", "replay")
	b.setValue("#b-subscriber", flaky)
	b.setValue("#b-rate", "20")
	b.clickOK("#bulk-plan")
	require.Equal(t, 3, b.number("#plan-matched"))
	require.Equal(t, 3, b.number("#plan-eligible"))
	require.Equal(t, 1, b.number("#plan-to-process"))
	require.Equal(t, 2, b.number("#plan-skip"))
	require.Equal(t, []string{"evt_bulk4", "evt_bulk2", "evt_bulk0"}, b.attrs("#plan-sample tr.event", "data-event-id"))
	require.Equal(t, 1, b.count("form#confirm.action #confirm-bulk"))
	b.screenshot("bulk-plan")
	require.Equal(t, msgs, h.StreamInfo().State.Msgs, "the plan published nothing")

	resp := b.click("#confirm-bulk")
	b.status(http.StatusOK, resp, "click")
	require.Contains(t, resp.URL, b.base+"/console/bulk/jobs/")
	b.waitUntil(`document.querySelector("#job") && document.querySelector("#job").dataset.state === "done"`, "the bulk job finishes")
	require.Equal(t, 3, b.number("#result-published"))
	require.Equal(t, 1, b.number("#result-processed"))
	require.Equal(t, 2, b.number("#result-skipped"))
	require.Zero(t, b.number("#result-unsettled"))
	require.Zero(t, b.count("#cancel-bulk"), "a finished job has no Cancel")
	b.screenshot("bulk-job")

	for _, id := range set {
		require.Equal(t, 1, h.effects(id), "flaky processed %s exactly once", id)
	}
	require.Equal(t, 6, h.Count(`SELECT count(*) FROM flaky.effects`), "nothing outside the set")
	require.Equal(t, msgs+3, h.StreamInfo().State.Msgs, "three copies, on flaky's replay subjects")
	holds(t, 500*time.Millisecond, func() bool {
		return h.Count(`SELECT count(*) FROM bystander.effects`) == 6 && by.Stats() == byStats
	}, "the bystander saw none of the copies")

	// Cancel: a slow bulk (1 a second) stops publishing when cancelled.
	_, err = h.Pool().Exec(t.Context(), `DELETE FROM flaky.processed_messages WHERE event_id = ANY($1)`, set)
	require.NoError(t, err)
	b.openOK("/console/bulk?since=1h&where1=data.customer_id%3Dctm_bulk&action=replay&subscriber=flaky&rate=1")
	require.Equal(t, 3, b.number("#plan-to-process"))
	resp = b.click("#confirm-bulk")
	b.status(http.StatusOK, resp, "click")
	b.clickOK("#cancel-bulk")
	b.waitUntil(`document.querySelector("#job") && document.querySelector("#job").dataset.state === "cancelled"`, "the bulk job is cancelled")
	require.Less(t, b.number("#result-published"), 3)
	published := h.StreamInfo().State.Msgs
	holds(t, 1500*time.Millisecond, func() bool { return h.StreamInfo().State.Msgs == published }, "nothing published after the cancel")
	require.Equal(t, byStats, by.Stats(), "the bystander still saw nothing")

	// A read-only session sees the plan but no button, and its POSTs are
	// refused.
	ro := s.newBrowser(t)
	ro.signIn(consoleReadOnlyToken, "read-only")
	msgs = h.StreamInfo().State.Msgs
	ro.openOK("/console/bulk?since=1h&where1=data.customer_id%3Dctm_bulk&action=replay&subscriber=flaky")
	require.Equal(t, 3, ro.number("#plan-matched"))
	require.Zero(t, ro.count("#confirm-bulk, #cancel-bulk"))
	csrf := ro.csrf()
	jobID := resp.URL[len(b.base+"/console/bulk/jobs/"):]
	for _, c := range []struct {
		path string
		form map[string]string
	}{
		{"/console/bulk/run", map[string]string{"since": "1h", "where1": "data.customer_id=ctm_bulk", "action": "replay", "subscriber": flaky}},
		{"/console/bulk/jobs/" + jobID + "/cancel", map[string]string{}},
	} {
		c.form["csrf"] = csrf
		p := ro.post(c.path, c.form)
		require.Equal(t, http.StatusForbidden, p.Status, "POST %s: %s", c.path, p.Error)
		require.Contains(t, p.Error, "read-only", c.path)
		ro.openOK("/console/")
	}
	require.Equal(t, msgs, h.StreamInfo().State.Msgs, "nothing published for the read-only session")

	// The trail: the cancelled run says who cancelled it (once the job
	// has stopped), and each refused POST of the read-only session is
	// there, as refused.
	cancelled := `SELECT error FROM audit_log WHERE id > $1 AND action = 'bulk.replay' AND outcome = 'cancelled'`
	h.Eventually(func() bool { return h.Count(`SELECT count(*) FROM (`+cancelled+`) c`, h.audited) == 1 }, "the cancelled run is audited")
	var cancelledBy string
	require.NoError(t, h.Pool().QueryRow(t.Context(), cancelled, h.audited).Scan(&cancelledBy))
	require.Contains(t, cancelledBy, "cancelled by token ")
	require.Contains(t, cancelledBy, "(admin, console)")
	require.Equal(t, 2, h.Count(`SELECT count(*) FROM audit_log WHERE id > $1 AND outcome = 'refused' AND actor_role = 'read-only'
		AND action = 'console.action' AND target IN ('/console/bulk/run', '/console/bulk/jobs/`+jobID+`/cancel')`, h.audited))
}

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
	holds(t, time.Second, func() bool { return h.StreamInfo().State.Msgs == msgs }, "nothing republished or replayed")
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
