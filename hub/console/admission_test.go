package console_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/ops"
)

// While the expensive reads running hold the whole read pool, the
// console answers a payload filter, the charts and an audit export 429
// with a Retry-After, and the same pages once the pool is free.
func TestConsoleReadsRefused429WithRetryAfter(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	sc, _ := s.login(readOnlyToken)
	cookies := []*http.Cookie{sc}
	pages := []string{
		"/console/events?since=1h&where1=" + url.QueryEscape("data.customer=cus_1"),
		"/console/charts",
		"/console/audit.jsonl",
	}
	var held []*ops.Permit
	for range ops.DefaultReadSlots {
		p, err := s.ops.Admit(ops.PoolReads, "test", ops.Cost{})
		require.NoError(t, err)
		held = append(held, p)
	}
	for _, page := range pages {
		a := s.do("GET", page, "", cookies)
		require.Equal(t, http.StatusTooManyRequests, a.status, "%s: %s", page, a.body)
		require.Equal(t, "5", a.header.Get(fiber.HeaderRetryAfter), page)
		require.Contains(t, a.body, "expensive reads", page)
	}
	for _, p := range held {
		p.Release()
	}
	for _, page := range pages {
		a := s.do("GET", page, "", cookies)
		require.Equal(t, http.StatusOK, a.status, "%s: %s", page, a.body)
		require.Empty(t, a.header.Get(fiber.HeaderRetryAfter), page)
	}
}

// A payload filter over exactly its longest range, since 7d, is
// answered by the Events page and planned by the bulk page, on a clock
// that moves between its readings ("now" is taken once); a day more is
// refused.
func TestConsolePayloadFilterSince7d(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.clock.setTick(time.Millisecond)
	sc, _ := s.login(adminToken)
	cookies := []*http.Cookie{sc}
	where := url.QueryEscape("data.customer=cus_1")
	a := s.do("GET", "/console/events?since=7d&where1="+where, "", cookies)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.NotContains(t, a.body, `role="alert"`)
	a = s.do("GET", "/console/bulk?action=republish&since=7d&where1="+where, "", cookies)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `id="plan"`)
	a = s.do("GET", "/console/events?since=8d&where1="+where, "", cookies)
	require.Equal(t, http.StatusBadRequest, a.status, a.body)
	require.Contains(t, a.body, "at most 7d")
}

var backToEvents = regexp.MustCompile(`<a href="([^"]*)">Back to the events</a>`)

// The bulk page's "Back to the events" link is the Events page of the
// same filter: its query escaped once, every field kept.
func TestConsoleBulkBackLinkKeepsTheFilter(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	sc, _ := s.login(adminToken)
	q := url.Values{"provider": {"paddle"}, "type": {"subscription.created"}, "since": {"2h"}, "where1": {"data.customer=cus 1&x"}}
	a := s.do("GET", "/console/bulk?"+q.Encode(), "", []*http.Cookie{sc})
	require.Equal(t, http.StatusOK, a.status, a.body)
	m := backToEvents.FindStringSubmatch(a.body)
	require.NotNil(t, m, "the bulk page links back to the events")
	u, err := url.Parse(html.UnescapeString(m[1]))
	require.NoError(t, err)
	require.Equal(t, "/console/events", u.Path)
	got := u.Query()
	for k, v := range q {
		require.Equal(t, v, got[k], "%s is kept (%s)", k, m[1])
	}
	back := s.do("GET", u.RequestURI(), "", []*http.Cookie{sc})
	require.Equal(t, http.StatusOK, back.status, back.body)
	require.Contains(t, back.body, `value="paddle"`, "the events page shows the filter")
}
