package console_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Charts: webhooks from two providers (one refused for a bad signature)
// and a subscriber that dead-letters one event; the charts page shows a
// row and two charts per provider and for the subscriber, with their
// figures, and the range links switch to 6 and 24 hours. It runs first in
// the suite: the per-provider counts live in the hub's memory, which
// startHub's reset does not clear.
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
