package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/subscribers/destination"
)

// ingestEntityEvents archives one event per provider about the entities
// given, received a minute apart up to now, the way the hub does, and
// marks them published (stream sequences 1, 2, ...).
func ingestEntityEvents(t testing.TB, pool *pgxpool.Pool, now time.Time, es []hub.Entity, events ...[2]string) {
	t.Helper()
	ctx := context.Background()
	st := store.New(pool)
	var ds []hub.Delivery
	for i, e := range events {
		ds = append(ds, hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: e[0], EventID: e[1], EventType: "customer.updated",
			Body: []byte(`{"id":"` + e[1] + `"}`), ReceivedAt: now.Add(-time.Duration(len(events)-i) * time.Minute), Entities: es})
	}
	_, err := st.Ingest(ctx, ds)
	require.NoError(t, err)
	rows, err := st.Claim(ctx, 1000, time.Hour)
	require.NoError(t, err)
	var res []hub.PublishResult
	for i, r := range rows {
		res = append(res, hub.PublishResult{ArchiveID: r.ArchiveID, Seq: uint64(i + 1)})
	}
	require.NoError(t, st.RecordPublished(ctx, res))
}

// The entity page lists the events about an id across providers, newest
// first and paged, each with every subscriber's outcome and a
// destination's last HTTP attempt; the event page links its entities to
// it; a bad id is refused with the ops message, and shown escaped.
func TestEntityPage(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	now := s.clock.Now()
	cus := []hub.Entity{{Kind: "customer", ID: "cus_page"}, {Kind: "user", ID: "user_<b>1</b>"}}
	var events [][2]string
	for i := range 54 {
		p := "paddle"
		if i%2 == 1 {
			p = "clerk"
		}
		events = append(events, [2]string{p, "evt_ent_" + string(rune('a'+i/26)) + string(rune('a'+i%26))})
	}
	ingestEntityEvents(t, s.pool, now, cus, events...)
	addDeadLetter(t, s.pool, "flaky", "paddle", "evt_ent_ca") // the newest paddle event
	addDestinationAttempts(t, s.pool, "billing",
		destination.Attempt{Provider: "clerk", EventID: "evt_ent_cb", At: now.Add(-time.Second), Status: 500, Outcome: destination.OutcomeFailed},
		destination.Attempt{Provider: "clerk", EventID: "evt_ent_cb", At: now, Status: 503, Outcome: destination.OutcomeFailed})
	sc, _ := s.login(readOnlyToken)

	a := s.do("GET", "/console/entity?id=cus_page", "", []*http.Cookie{sc})
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, 50, strings.Count(a.body, `<li class="timeline-event"`))
	require.Contains(t, a.body, `data-provider="paddle" data-event-id="evt_ent_ca"`)
	require.Contains(t, a.body, `data-provider="clerk" data-event-id="evt_ent_cb"`)
	require.Less(t, strings.Index(a.body, `evt_ent_cb"`), strings.Index(a.body, `evt_ent_ca"`), "newest first")
	require.Contains(t, a.body, `data-subscriber="flaky" data-outcome="dead_lettered"`)
	require.Contains(t, a.body, `data-subscriber="billing" data-outcome="none" data-destination="true"`)
	require.Contains(t, a.body, `<span class="http-status">503</span>`)
	require.NotContains(t, a.body, `<span class="http-status">500</span>`, "only the last attempt")
	require.Contains(t, a.body, `href="/console/entity?id=user_%3cb%3e1%3c%2fb%3e"`)
	require.NotContains(t, a.body, "<b>1</b>")
	i := strings.Index(a.body, `id="next-page" href="`)
	require.Positive(t, i)
	next := html.UnescapeString(a.body[i+len(`id="next-page" href="`):])
	next = next[:strings.IndexByte(next, '"')]
	a = s.do("GET", next, "", []*http.Cookie{sc})
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, 4, strings.Count(a.body, `<li class="timeline-event"`))
	require.NotContains(t, a.body, `id="next-page"`)

	// The event page links to the entity pages.
	a = s.do("GET", "/console/event?ref=paddle:evt_ent_aa", "", []*http.Cookie{sc})
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `<a class="entity-link" href="/console/entity?id=cus_page">customer <span class="id">cus_page</span></a>`)

	// The events page: a search box for the entity page, and a filter.
	a = s.do("GET", "/console/events?entity=cus_page&provider=clerk", "", []*http.Cookie{sc})
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `<form id="entity-search" method="get" action="/console/entity"`)
	require.Contains(t, a.body, `id="entity-timeline" href="/console/entity?id=cus_page"`)
	require.Equal(t, 27, strings.Count(a.body, `<tr class="event" data-provider="clerk"`))

	for _, c := range []struct {
		query, want string
	}{
		{"id=", "entity: required: an entity id, e.g. cus_123"},
		{"id=" + url.QueryEscape("cus\x01<x>"), "contains control characters"},
		{"id=" + strings.Repeat("x", 256), "entity: longer than 255 bytes (256)"},
		{"id=cus_page&before=nonsense", "before: "},
	} {
		a = s.do("GET", "/console/entity?"+c.query, "", []*http.Cookie{sc})
		require.Equal(t, http.StatusBadRequest, a.status, c.query)
		require.Contains(t, html.UnescapeString(a.body), c.want, c.query)
		require.NotContains(t, a.body, "<x>")
	}
	a = s.do("GET", "/console/entity", "", []*http.Cookie{sc})
	require.Equal(t, http.StatusOK, a.status)
	require.Contains(t, a.body, `<form id="entity-search"`)
	a = s.do("GET", "/console/entity?id=cus_nobody", "", []*http.Cookie{sc})
	require.Equal(t, http.StatusOK, a.status)
	require.Contains(t, a.body, `<p id="no-events">No event about <span class="id">cus_nobody</span>.</p>`)
}
