package console_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/console"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/server"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// newChartsSite is newSiteOn with per-provider traffic for the charts
// page, counted for providers.
func newChartsSite(t testing.TB, pool *pgxpool.Pool, providers ...string) (*site, *server.ProviderTraffic) {
	t.Helper()
	byProvider := server.NewProviderTraffic(providers)
	s := newSiteConfig(t, pool, fiber.Config{}, func(c *console.Config) { c.ProviderTraffic = byProvider.Series })
	return s, byProvider
}

// processed records that sub processed each of eventIDs at at, as the
// subscriber library does.
func processed(t testing.TB, pool *pgxpool.Pool, sub string, at time.Time, eventIDs ...string) {
	t.Helper()
	require.NoError(t, subscriber.Migrate(context.Background(), pool, sub, nil))
	for _, id := range eventIDs {
		_, err := pool.Exec(context.Background(), `INSERT INTO `+sub+`.processed_messages
			(subscriber, provider, event_id, subject, stream_seq, processed_at, outcome) VALUES ($1, 'paddle', $2, 'paddle.subscription.created', 1, $3, 'processed')`,
			sub, id, at)
		require.NoError(t, err)
	}
}

func TestChartsPage(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s, byProvider := newChartsSite(t, pool, "paddle", "stripe", `<b>evil</b>`)
	now := s.clock.Now()
	for range 90 {
		byProvider.Record(now, "paddle", 200, 3*time.Millisecond)
	}
	for range 10 {
		byProvider.Record(now, "paddle", 500, time.Second)
	}
	for range 5 {
		byProvider.Record(now.Add(-30*time.Minute), "stripe", 401, time.Millisecond)
	}
	byProvider.Record(now, "nosuch", 404, 0)
	ids := seed(t, pool, now, 6, 0)
	processed(t, pool, "credits", now, ids...)
	addDeadLetter(t, pool, "emailer", "paddle", ids[0])
	processed(t, pool, "emailer", now, ids[1:3]...)

	sc, _ := s.login(readOnlyToken)
	page := s.do("GET", "/console/charts", "", []*http.Cookie{sc})
	require.Equal(t, 200, page.status, page.body)
	body := page.body
	require.Contains(t, body, `<h2 id="ingest-fail-h">Which provider is failing?</h2>`)
	require.Contains(t, body, `Is any subscriber slow?`)
	require.Contains(t, body, `aria-current="page">Charts</a>`)
	require.Contains(t, body, `href="/console/charts?hours=1" aria-current="page"`)
	require.NotContains(t, body, "NaN")
	require.NotContains(t, body, "<b>evil</b>", "names are escaped")
	require.Contains(t, body, "&lt;b&gt;evil&lt;/b&gt;")
	require.Contains(t, body, "one replica", "the page says the ingest figures are this replica's")
	require.Equal(t, 4*2+2*2, strings.Count(body, `<svg class="spark"`), "four providers and two subscribers, two charts each")

	// Stripe's five 401s and the unknown provider's 404 are 100% failures, stripe with more first; paddle's 10% next.
	rows := regexpAll(`<tr data-provider="([^"]+)">`, body)
	require.Equal(t, []string{"stripe", "(unknown)", "paddle", "&lt;b&gt;evil&lt;/b&gt;"}, rows[:4])
	require.Contains(t, body, `<td class="fail-rate num">10.0%</td>`)
	require.Contains(t, body, `<td class="auth num">5</td>`)
	require.Contains(t, body, `1 of 1 failed (100.0%): 0 401, 1 other 4xx, 0 5xx`)
	require.Regexp(t, `<td class="p50 num">[0-9.]+ms</td>`, body)
	require.Equal(t, 60, strings.Count(sparkOf(t, body, "provider-failures", "paddle"), "<g>"), "one bar per minute")

	// Subscribers: the one with a dead letter first.
	subs := regexpAll(`<tr data-subscriber="([^"]+)">`, body)
	require.Equal(t, []string{"emailer", "credits", "emailer", "credits"}, subs)
	require.Contains(t, body, `<td class="dead-lettered num">1</td>`)
	require.Contains(t, body, `<td class="processed num">6</td>`)
	require.Contains(t, body, `<td class="fail-rate num">33.3%</td>`)
	require.Contains(t, body, `<td class="samples num">6</td>`)

	// Ranges: 6 h in 5-minute steps, 24 h in 20-minute ones; the stripe
	// failures 30 minutes ago are in.
	page = s.do("GET", "/console/charts?hours=6", "", []*http.Cookie{sc})
	require.Equal(t, 200, page.status)
	require.Contains(t, page.body, "one bar per 5 min")
	require.Equal(t, 72, strings.Count(sparkOf(t, page.body, "provider-failures", "stripe"), "<g>"))
	page = s.do("GET", "/console/charts?hours=24", "", []*http.Cookie{sc})
	require.Equal(t, 200, page.status)
	require.Contains(t, page.body, "one bar per 20 min")

	for _, bad := range []string{"0", "25", "abc", "1.5", "-3", strings.Repeat("9", 100)} {
		a := s.do("GET", "/console/charts?hours="+bad, "", []*http.Cookie{sc})
		require.Equal(t, 400, a.status, bad)
		require.Contains(t, a.body, "hours: must be a whole number of hours from 1 to 24", bad)
		require.NotContains(t, a.body, strings.Repeat("9", 50), "the input is cut short in the message")
	}
}

// An empty hub: no traffic, no subscriber; the page says so, and nothing
// is NaN.
func TestChartsPageEmpty(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s, _ := newChartsSite(t, pool, "paddle")
	sc, _ := s.login(adminToken)
	page := s.do("GET", "/console/charts?hours=24", "", []*http.Cookie{sc})
	require.Equal(t, 200, page.status, page.body)
	require.Contains(t, page.body, "No subscriber yet")
	require.Contains(t, page.body, `<tr data-provider="paddle">`)
	require.Contains(t, page.body, `<td class="fail-rate num">–</td>`)
	require.NotContains(t, page.body, "NaN")
	require.NotContains(t, page.body, "Inf")

	// A console without ingest figures still shows processing.
	plain := newSite(t)
	sc, _ = plain.login(adminToken)
	page = plain.do("GET", "/console/charts", "", []*http.Cookie{sc})
	require.Equal(t, 200, page.status, page.body)
	require.Contains(t, page.body, `id="no-ingest"`)
}

// sparkOf is the chart in the table id's row of name.
func sparkOf(t testing.TB, body, table, name string) string {
	t.Helper()
	i := strings.Index(body, `<table id="`+table+`">`)
	require.GreaterOrEqual(t, i, 0, table)
	rest := body[i:]
	j := strings.Index(rest, fmt.Sprintf(`<tr data-provider="%s">`, name))
	if j < 0 {
		j = strings.Index(rest, fmt.Sprintf(`<tr data-subscriber="%s">`, name))
	}
	require.GreaterOrEqual(t, j, 0, name)
	rest = rest[j:]
	return rest[:strings.Index(rest, "</svg>")]
}

func BenchmarkChartsPage(b *testing.B) {
	pool, _ := hubdb.Pool(b)
	s, byProvider := newChartsSite(b, pool, "clerk", "github", "paddle", "shopify", "stripe", "twilio")
	now := s.clock.Now()
	for m := range 24 * 60 {
		at := now.Add(-time.Duration(m) * time.Minute)
		for _, p := range []string{"clerk", "github", "paddle", "shopify", "stripe", "twilio"} {
			byProvider.Record(at, p, 200, time.Duration(m%50)*time.Millisecond)
			byProvider.Record(at, p, 500, 0)
		}
	}
	ids := seed(b, pool, now, 500, 0)
	for i := range 5 {
		processed(b, pool, fmt.Sprintf("sub_%d", i), now, ids...)
	}
	sc, _ := s.login(adminToken)
	b.ResetTimer()
	for b.Loop() {
		a := s.do("GET", "/console/charts?hours=24", "", []*http.Cookie{sc})
		if a.status != 200 {
			b.Fatal(a.status)
		}
	}
}

// regexpAll is every first submatch of re in s.
func regexpAll(re, s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}
