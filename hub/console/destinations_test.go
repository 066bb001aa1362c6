package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// addDestinationAttempts makes a destination's tables (as the destination
// runner does when it first runs) and records attempts of an event.
func addDestinationAttempts(t testing.TB, pool *pgxpool.Pool, dest string, attempts ...destination.Attempt) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, subscriber.Migrate(ctx, pool, dest, destination.Migrations(dest)))
	for _, a := range attempts {
		a.Destination = dest
		require.NoError(t, destination.RecordAttempt(ctx, pool, a))
	}
}

// The event page shows each destination's attempts as a timeline; what an
// endpoint answered is text, escaped, in a capped <pre>.
func TestEventPageDestinationTimeline(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	now := s.clock.Now()
	ids := seed(t, s.pool, now, 1, 0)
	at := now.Add(-time.Minute).Truncate(time.Millisecond)
	addDestinationAttempts(t, s.pool, "billing_node",
		destination.Attempt{Provider: "paddle", EventID: ids[0], At: at, Latency: 5 * time.Second, Outcome: destination.OutcomeFailed,
			Error: "attempt timed out after 5s"},
		destination.Attempt{Provider: "paddle", EventID: ids[0], At: at.Add(10 * time.Second), Status: 500, Latency: 42 * time.Millisecond,
			Outcome: destination.OutcomeFailed, Error: "500 Internal Server Error",
			Response: `<script>alert("x")</script><img src=x onerror=alert(1)>` + "\x1b[31m" + strings.Repeat("é", 600)},
		destination.Attempt{Provider: "paddle", EventID: ids[0], At: at.Add(40 * time.Second), Status: 204, Latency: 3200 * time.Microsecond,
			Outcome: destination.OutcomeDelivered})
	addDestinationAttempts(t, s.pool, "crm") // a destination that never tried it
	sc, _ := s.login(readOnlyToken)
	a := s.do("GET", "/console/event?ref=paddle:"+ids[0], "", []*http.Cookie{sc})
	require.Equal(t, 200, a.status, a.body)
	page := a.body

	require.Contains(t, page, `<section class="attempts" id="attempts-billing_node" data-destination="billing_node"`)
	require.Equal(t, 3, strings.Count(page, `<tr class="attempt"`))
	require.Contains(t, page, `<tr class="attempt" data-status="0" data-outcome="failed">`)
	require.Contains(t, page, `<span class="http-status">no answer</span> <span class="attempt-error">attempt timed out after 5s</span>`)
	require.Contains(t, page, `<td class="num nowrap">5s</td>`)
	require.Contains(t, page, `<span class="http-status">500</span>`)
	require.Contains(t, page, `<td class="num nowrap">42ms</td>`)
	require.Contains(t, page, `<td class="num nowrap">3.2ms</td>`)
	require.Contains(t, page, at.UTC().Format("2006-01-02 15:04:05.000Z"))
	require.Contains(t, page, `<tr class="attempt" data-status="204" data-outcome="delivered">`)
	require.Contains(t, page, `delivered</span>`)

	// The endpoint's answer: escaped, never markup; control bytes shown
	// as \xNN; cut (the store keeps 1 KiB, the page shows at most that).
	require.NotContains(t, page, "<script>alert")
	require.NotContains(t, page, "<img src=x")
	require.Contains(t, page, `<pre class="response">&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;\x1b[31m`)
	start := strings.Index(page, `<pre class="response">`)
	end := strings.Index(page[start:], `</pre>`)
	require.Less(t, end, 1400, "the response is capped")
	require.Contains(t, page[start:start+end], "…")
	require.True(t, utf8Valid(page))

	require.Contains(t, page, `<section class="attempts" id="attempts-crm" data-destination="crm"`)
	require.Contains(t, page, `<p class="small no-attempts">No attempt yet.</p>`)
	require.NotContains(t, page, `id="attempts-credits"`)
}
