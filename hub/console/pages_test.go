package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
)

func TestPagesRender(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	now := s.clock.Now()
	ids := seed(t, s.pool, now, 5, 9) // the first event delivered 10 times
	addDeadLetter(t, s.pool, "credits", "paddle", ids[1])
	s.traffic.Record(now.Add(-2*time.Minute), 200)
	s.traffic.Record(now.Add(-2*time.Minute), 401)
	s.traffic.Record(now.Add(-time.Minute), 503)
	sc, _ := s.login(adminToken)
	get := func(p string) string {
		t.Helper()
		a := s.do("GET", p, "", []*http.Cookie{sc})
		require.Equal(t, 200, a.status, "%s: %s", p, a.body)
		require.Equal(t, "text/html; charset=utf-8", a.header.Get("Content-Type"))
		require.Equal(t, "no-store", a.header.Get("Cache-Control"))
		require.Contains(t, a.header.Get("Content-Security-Policy"), "default-src 'none'")
		return a.body
	}

	home := get("/console/")
	require.Contains(t, home, `<svg id="traffic-chart" role="img" aria-label="Webhook deliveries per minute over the last hour: 1 answered 2xx, 1 4xx, 1 5xx`)
	require.Contains(t, home, `<p class="big" id="backlog">1</p>`, "the unpublished event")
	require.Contains(t, home, `id="oldest-pending"`)
	require.Contains(t, home, `<p class="big" id="stream-state">ok</p>`)
	require.Contains(t, home, `<tr data-subscriber="credits">`)
	require.Regexp(t, `<td class="dead-letters num"><a [^>]*>1</a>`, home)
	require.Regexp(t, `<ul id="attention">\s*<li class="critical">Stream: JetStream not connected`, home, "most urgent first")
	require.Contains(t, home, "credits: 1 dead letter(s)")

	events := get("/console/events")
	require.Equal(t, 5, strings.Count(events, `<tr class="event"`))
	require.Contains(t, events, `<form id="filters" method="get"`)
	require.Contains(t, events, `id="apply-filters"`)
	require.Regexp(t, `<tr class="event" data-provider="paddle" data-event-id="`+ids[4]+`" data-status="PENDING">`, events, "newest first")
	require.Contains(t, events, `<a class="event-link" href="/console/event?ref=paddle:`+ids[0]+`"`)
	require.NotContains(t, events, `id="next-page"`)

	// Paging: two at a time, through every event once.
	var seen []string
	next := "/console/events?limit=2"
	for next != "" {
		page := get(next)
		for _, m := range regexp.MustCompile(`data-event-id="([^"]+)"`).FindAllStringSubmatch(page, -1) {
			seen = append(seen, m[1])
		}
		next = ""
		if m := regexp.MustCompile(`<a id="next-page" href="([^"]+)"`).FindStringSubmatch(page); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	require.Equal(t, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, seen)

	// Filters.
	require.Equal(t, 1, strings.Count(get("/console/events?event_id="+ids[2]), `<tr class="event"`))
	require.Equal(t, 1, strings.Count(get("/console/events?provider=paddle&event_id="+ids[2]), `<tr class="event"`))
	require.Equal(t, 9, strings.Count(get("/console/events?status=SKIPPED&limit=100"), `<tr class="event"`))
	require.Equal(t, 1, strings.Count(get("/console/events?status=pending"), `<tr class="event"`))
	require.Equal(t, 4, strings.Count(get("/console/events?provider=paddle&type=subscription.created&status=PROCESSED"), `<tr class="event"`))
	require.Contains(t, get("/console/events?provider=clerk"), `<p id="no-events">`)
	require.Contains(t, get("/console/events?since=1h&until=2030-01-01"), `<tr class="event"`)

	ev := get("/console/event?ref=paddle:" + ids[0])
	require.Equal(t, 10, strings.Count(ev, `<tr class="delivery"`))
	require.Equal(t, 9, strings.Count(ev, `<tr class="delivery" data-status="SKIPPED">`))
	require.Contains(t, ev, `<code class="signature">ts=1;h1=abab`)
	require.Contains(t, ev, `<pre id="body-pretty" class="body">{`+"\n"+`  &#34;event_id&#34;`)
	require.Contains(t, ev, `<pre id="body-raw" class="body">{&#34;event_id&#34;:`)
	require.Contains(t, ev, `id="stream-seq"`)
	require.Contains(t, ev, `<p id="republish" class="action"><a id="republish-plan" class="button" href="/console/event/republish?ref=paddle%3a`+ids[0]+`">`,
		"republish is planned first: a link, not a form that acts")
	plan := get("/console/event/republish?ref=paddle:" + ids[0])
	require.Contains(t, plan, `<p class="big" id="plan-republish">1</p>`)
	require.Contains(t, plan, `<form id="confirm-republish" class="action" method="post" action="/console/event/republish">`)
	require.Contains(t, plan, `<input type="hidden" name="ref" value="paddle:`+ids[0]+`">`)
	require.Contains(t, ev, `<tr data-subscriber="credits">`)
	require.Contains(t, get("/console/event?ref=paddle:"+ids[1]), `<td class="outcome" data-outcome="dead_lettered">dead-lettered</td>`)

	dl := get("/console/dead-letters")
	require.Contains(t, dl, `<form id="pick-subscriber" method="get"`)
	require.Regexp(t, `<tr class="dead-letter" data-id="\d+" data-event-id="`+ids[1]+`">`, dl)
	require.Contains(t, dl, `<form class="action redrive" method="post" action="/console/dead-letters/redrive">`)
	require.Contains(t, dl, `class="redrive-button"`)
	require.Contains(t, dl, `<a id="redrive-all" class="button" href="/console/dead-letters/redrive?subscriber=credits">Redrive all 1 waiting…</a>`,
		"redrive all is planned first: a link, not a form that acts")
	var dlID int64
	require.NoError(t, s.pool.QueryRow(t.Context(), `SELECT id FROM credits.dead_letters`).Scan(&dlID))
	plan = get("/console/dead-letters/redrive?subscriber=credits")
	require.Contains(t, plan, `<p class="big" id="plan-redrive">1</p>`)
	require.Contains(t, plan, `<form id="confirm-redrive" class="action" method="post" action="/console/dead-letters/redrive">`)
	require.Contains(t, plan, fmt.Sprintf(`<input type="hidden" name="ids" value="%d">`, dlID))
	require.Contains(t, plan, fmt.Sprintf(`<tr class="planned" data-id="%d" data-event-id="%s">`, dlID, ids[1]))
	var requested int
	require.NoError(t, s.pool.QueryRow(t.Context(), `SELECT count(*) FROM credits.dead_letters WHERE redrive_requested_at IS NOT NULL`).Scan(&requested))
	require.Zero(t, requested, "showing the plans did nothing")
	require.Contains(t, dl, "handler failed: boom")

	rp := get("/console/replay")
	require.Contains(t, rp, `<form id="replay" class="action filters" method="post" action="/console/replay/plan">`)
	require.Contains(t, rp, `id="dry-run"`)
	require.Contains(t, rp, `value="24h"`)

	css := s.do("GET", "/console/static/console.css", "", nil)
	require.Equal(t, 200, css.status)
	require.Contains(t, css.header.Get("Content-Type"), "text/css")
	require.Contains(t, css.body, ".table-wrap")
}

// TestHostileBodies: an archived body with NUL bytes, broken UTF-8 and
// markup renders escaped and readable.
func TestHostileBodies(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	st := store.New(s.pool)
	for id, body := range map[string][]byte{
		"evt_nul":    []byte("{\"a\":\"x\"}\x00\xff\xfe<script>alert(1)</script>"),
		"evt_markup": []byte(`{"html":"</pre><script>alert(1)</script>","nul":"\u0000"}`),
		"evt_form":   []byte("Body=hi&From=%2B1\r\n\x1b[31m\\x00"),
	} {
		_, err := st.Ingest(context.Background(), []hub.Delivery{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "twilio", EventID: id,
			EventType: "message.received", Body: body, Payload: []byte(`{"note":"form"}`), Signature: "<b>sig</b>", ReceivedAt: time.Now()}})
		require.NoError(t, err)
	}
	sc, _ := s.login(adminToken)
	for _, id := range []string{"evt_nul", "evt_markup", "evt_form"} {
		a := s.do("GET", "/console/event?ref=twilio:"+id, "", []*http.Cookie{sc})
		require.Equal(t, 200, a.status, a.body)
		require.NotContains(t, a.body, "<script>")
		require.NotContains(t, a.body, "<b>sig")
		require.NotContains(t, a.body, "\x00")
		require.NotContains(t, a.body, "\x1b")
		require.True(t, utf8Valid(a.body), id)
	}
	a := s.do("GET", "/console/event?ref=twilio:evt_nul", "", []*http.Cookie{sc})
	require.Contains(t, a.body, `\x00\xff\xfe&lt;script&gt;`)
	a = s.do("GET", "/console/event?ref=twilio:evt_form", "", []*http.Cookie{sc})
	require.Contains(t, a.body, `\x1b[31m\x5cx00`, "an escape-like text stays unambiguous")
}

func TestBadInputs(t *testing.T) {
	t.Parallel()
	s, ids, sc, csrf := signedInSite(t, 2, 0, adminToken)
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/console/events?limit=abc", 400, "limit"},
		{"/console/events?limit=0", 400, "limit"},
		{"/console/events?limit=10001", 400, "limit"},
		{"/console/events?status=DONE", 400, "status"},
		{"/console/events?since=yesterday", 400, "since"},
		{"/console/events?since=2h&until=3h", 400, "until"},
		{"/console/events?before=nope", 400, "before"},
		{"/console/events?provider=a.b", 400, "provider"},
		{"/console/events?type=%00", 400, "type"},
		{"/console/events?event_id=%ff", 400, "event_id"},
		{"/console/events?event_id=" + strings.Repeat("x", 300), 400, "event_id"},
		{"/console/events?provider=a&provider=b", 400, "more than once"},
		{"/console/events?provider=%zz", 400, "percent"},
		{"/console/event", 400, "ref"},
		{"/console/event?ref=nocolon", 400, "ref"},
		{"/console/event?ref=paddle:nothere", 404, "no event"},
		{"/console/event?ref=" + uuid.NewString(), 404, "archive id"},
		{"/console/dead-letters?subscriber=nobody", 404, "unknown subscriber"},
		{"/console/dead-letters?subscriber=%00", 400, "subscriber"},
		{"/console/replay/jobs/0123456789abcdef", 404, "replay job"},
		{"/console/dead-letters/redrive?subscriber=nobody", 404, "unknown subscriber"},
		{"/console/event/republish?ref=garbage", 400, "ref"},
		{"/console/event/republish?ref=paddle:nothere", 404, "no event"},
		{"/console/event/republish?ref=paddle:" + ids[1], 404, "nothing matched"}, // not published: nothing to republish
		{"/console/replay/jobs/..%2F..", 404, "replay job"},
		{"/console/nowhere", 404, "No such page"},
	} {
		a := s.do("GET", tc.path, "", []*http.Cookie{sc})
		require.Equal(t, tc.status, a.status, "%s: %s", tc.path, a.body)
		require.Regexp(t, `<p id="error" role="alert">[^<]*`+regexp.QuoteMeta(tc.want), a.body, tc.path)
	}
	for _, tc := range []struct {
		path   string
		form   url.Values
		status int
		want   string
	}{
		{"/console/dead-letters/redrive", url.Values{"subscriber": {"credits"}, "id": {"x"}}, 400, "id"},
		{"/console/dead-letters/redrive", url.Values{"subscriber": {"credits"}, "id": {"-3"}}, 400, "id"},
		{"/console/dead-letters/redrive", url.Values{"subscriber": {"credits"}}, 400, "exactly one"},
		{"/console/dead-letters/redrive", url.Values{"subscriber": {"credits"}, "id": {"1"}, "all": {"1"}}, 400, "exactly one"},
		{"/console/dead-letters/redrive", url.Values{"subscriber": {"credits"}, "all": {"yes"}}, 400, "all"},
		{"/console/dead-letters/redrive", url.Values{"subscriber": {"credits"}, "id": {"999999"}}, 404, "no dead letter"},
		{"/console/dead-letters/redrive", url.Values{"subscriber": {"credits"}, "all": {"1"}}, 400, "through its plan"},
		{"/console/dead-letters/redrive", url.Values{"subscriber": {"credits"}, "ids": {"1,1"}}, 400, "twice"},
		{"/console/dead-letters/redrive", url.Values{"subscriber": {"credits"}, "ids": {"1,x"}}, 400, "ids"},
		{"/console/dead-letters/redrive", url.Values{"subscriber": {"credits"}, "ids": {"1,"}}, 400, "ids"},
		{"/console/dead-letters/redrive", url.Values{"subscriber": {"credits"}, "ids": {manyIDs(501)}}, 400, "more than 500"},
		{"/console/dead-letters/redrive", url.Values{"subscriber": {"credits"}, "id": {"1"}, "ids": {"1"}}, 400, "exactly one"},
		{"/console/dead-letters/redrive", url.Values{"subscriber": {"x\x00"}, "id": {"1"}}, 400, "subscriber"},
		{"/console/event/republish", url.Values{"ref": {"garbage"}}, 400, "event"},
		{"/console/event/republish", url.Values{"ref": {"paddle:" + ids[0]}}, 503, "JetStream"},
		{"/console/replay/plan", url.Values{"subscriber": {"credits"}}, 400, "since"},
		{"/console/replay/plan", url.Values{"subscriber": {""}, "since": {"1h"}}, 400, "subscriber"},
		{"/console/replay/plan", url.Values{"subscriber": {"credits"}, "since": {"1h"}, "subject": {"a..b"}}, 400, "subject"},
		{"/console/replay/plan", url.Values{"subscriber": {"credits"}, "since": {"soon"}}, 400, "since"},
		{"/console/replay/plan", url.Values{"subscriber": {"credits"}, "since": {"1h"}}, 503, "JetStream"},
		{"/console/replay/run", url.Values{"subscriber": {"credits"}, "since": {"1h"}, "until": {"2h"}}, 400, "until"},
	} {
		tc.form.Set("csrf", csrf)
		a := s.do("POST", tc.path, tc.form.Encode(), []*http.Cookie{sc})
		require.Equal(t, tc.status, a.status, "%s %v: %s", tc.path, tc.form, a.body)
		require.Regexp(t, `<p id="error" role="alert">[^<]*`+regexp.QuoteMeta(tc.want), a.body, "%s %v", tc.path, tc.form)
	}
	// Not a form, too large, repeated fields.
	a := s.do("POST", "/console/dead-letters/redrive", "csrf="+csrf+"&all=1&subscriber=credits", []*http.Cookie{sc}, "Content-Type", "application/json")
	require.Equal(t, 400, a.status)
	a = s.do("POST", "/console/dead-letters/redrive", "csrf="+csrf+"&x="+strings.Repeat("a", 20<<10), []*http.Cookie{sc})
	require.Equal(t, 400, a.status)
	require.Contains(t, a.body, "too large")
	a = s.do("POST", "/console/dead-letters/redrive", "csrf="+csrf+"&csrf="+csrf+"&all=1&subscriber=credits", []*http.Cookie{sc})
	require.Equal(t, 400, a.status)
}

// manyIDs is "1,2,...,n".
func manyIDs(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(ids, ",")
}
