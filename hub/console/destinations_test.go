package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// addDestinationAttempts makes a destination's tables (as the destination
// runner does when it first runs) and records attempts of an event.
func addDestinationAttempts(t testing.TB, pool *pgxpool.Pool, dest string, attempts ...deststate.Attempt) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, subscriber.Migrate(ctx, pool, dest, destination.Migrations(dest)))
	for _, a := range attempts {
		a.Destination = dest
		require.NoError(t, deststate.RecordAttempt(ctx, pool, a))
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
		deststate.Attempt{Provider: "paddle", EventID: ids[0], At: at, Latency: 5 * time.Second, Outcome: deststate.OutcomeFailed,
			Error: "attempt timed out after 5s"},
		deststate.Attempt{Provider: "paddle", EventID: ids[0], At: at.Add(10 * time.Second), Status: 500, Latency: 42 * time.Millisecond,
			Outcome: deststate.OutcomeFailed, Error: "500 Internal Server Error",
			Response: `<script>alert("x")</script><img src=x onerror=alert(1)>` + "\x1b[31m" + strings.Repeat("é", 600)},
		deststate.Attempt{Provider: "paddle", EventID: ids[0], At: at.Add(40 * time.Second), Status: 204, Latency: 3200 * time.Microsecond,
			Outcome: deststate.OutcomeDelivered})
	addDestinationAttempts(t, s.pool, "crm") // a destination that never tried it
	sc, _ := s.login(readOnlyToken)
	a := s.do("GET", "/console/event?ref=paddle:"+ids[0], "", []*http.Cookie{sc})
	require.Equal(t, 200, a.status, a.body)
	page := a.body

	require.Contains(t, page, `<section class="attempts" id="attempts-billing_node" data-destination="billing_node"`)
	require.Equal(t, 3, strings.Count(page, `<tr class="attempt"`))
	require.Contains(t, page, `<tr class="attempt" data-status="0" data-outcome="failed">`)
	require.Contains(t, page, `<span class="http-status">no answer</span><span class="attempt-error">attempt timed out after 5s</span>`)
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

// timelineDestination is the destination of the browser test of the
// event page's attempt timeline (the hub's reset drops its schema).
const timelineDestination = "billing_node"

// The event page shows a destination's HTTP attempts of the event as a
// timeline: each attempt's time, answer, latency and outcome, and the
// endpoint's response as text in a capped box, never as markup.
func testBrowserDestinationTimeline(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)
	h.Deliver("paddle", "evt_timeline", "subscription.created")
	h.WaitPublished()
	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	markup := `<b id="injected">maintenance</b><script>document.title="pwned"</script>`
	addDestinationAttempts(t, h.Pool(), timelineDestination,
		deststate.Attempt{Provider: "paddle", EventID: "evt_timeline", At: at, Latency: 10 * time.Second,
			Outcome: deststate.OutcomeFailed, Error: "attempt timed out"},
		deststate.Attempt{Provider: "paddle", EventID: "evt_timeline", At: at.Add(5 * time.Second), Status: 503, Latency: 87 * time.Millisecond,
			Outcome: deststate.OutcomeFailed, Response: markup + "\n" + strings.Repeat("the endpoint is down for maintenance. ", 60)},
		deststate.Attempt{Provider: "paddle", EventID: "evt_timeline", At: at.Add(25 * time.Second), Status: 204, Latency: 12 * time.Millisecond,
			Outcome: deststate.OutcomeDelivered})

	b.signIn(consoleAdminToken, "admin")
	b.openOK("/console/event?ref=" + url.QueryEscape("paddle:evt_timeline"))
	sec := `section.attempts[data-destination="` + timelineDestination + `"]`
	require.Equal(t, 1, b.count(sec))
	require.Contains(t, b.text(sec+" h2"), timelineDestination)
	rows := sec + " tr.attempt"
	require.Equal(t, []string{"0", "503", "204"}, b.attrs(rows, "data-status"))
	require.Equal(t, []string{"failed", "failed", "delivered"}, b.attrs(rows, "data-outcome"))
	texts := b.texts(rows)
	require.Contains(t, texts[0], "no answer")
	require.Contains(t, texts[0], "attempt timed out")
	require.Contains(t, texts[0], at.Format("2006-01-02 15:04:05.000Z"))
	require.Contains(t, texts[0], "10s")
	require.Contains(t, texts[1], "87ms")
	require.Contains(t, texts[2], "12ms")
	require.Contains(t, texts[2], "delivered")

	// The endpoint's answer is text: no element of it, no script run.
	require.Zero(t, b.count("#injected"))
	require.NotEqual(t, "pwned", eval[string](b, "document.title"))
	pre := sec + " pre.response"
	require.Equal(t, 1, b.count(pre))
	shown := eval[string](b, fmt.Sprintf("document.querySelector(%s).textContent", jsString(pre)))
	require.True(t, strings.HasPrefix(shown, markup+"\n"), shown[:80])
	require.LessOrEqual(t, len(shown), deststate.MaxResponseBytes+len("…"), "capped")
	require.True(t, strings.HasSuffix(shown, "…"), "cut, and says so")
	require.True(t, eval[bool](b, fmt.Sprintf("((e) => e.scrollHeight > e.clientHeight && getComputedStyle(e).overflowY === 'auto')(document.querySelector(%s))", jsString(pre))),
		"a long response scrolls inside its box")

	// The destination is one of the event's subscribers too: it attempted
	// the event, which it has not settled (its consumer was never made).
	require.Contains(t, b.text(`#outcomes tr[data-subscriber="`+timelineDestination+`"] td.outcome`), "pending")
	b.screenshot("event-destination")
}

// The event page a read-only session sees holds no credential a receiver
// echoed into the attempt log: not in a row this version wrote, nor in one
// an older version wrote unredacted.
func TestEventPageHidesEchoedCredentials(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	now := s.clock.Now()
	ids := seed(t, s.pool, now, 1, 0)
	const (
		bearer = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.sig"
		path   = "a1B2c3D4e5F6g7H8i9J0k1L2"
		query  = "qs3cr3tt0ken99"
		sig    = "K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="
	)
	echo := `{"authorization":"Bearer ` + bearer + `","url":"https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/` + path + `?access=` + query + `","sig":"v1,` + sig + `"}`
	addDestinationAttempts(t, s.pool, "billing_node", deststate.Attempt{Provider: "paddle", EventID: ids[0],
		At: now.Add(-time.Minute), Status: 500, Outcome: deststate.OutcomeFailed, Response: echo})
	_, err := s.pool.Exec(context.Background(), `INSERT INTO billing_node.attempts (provider, event_id, attempted_at, status, latency_ms, outcome, error, response)
		VALUES ('paddle', $1, $2, 500, 1, 'failed', '', $3)`, ids[0], now.Add(-30*time.Second), echo)
	require.NoError(t, err)
	sc, _ := s.login(readOnlyToken)
	a := s.do("GET", "/console/event?ref=paddle:"+ids[0], "", []*http.Cookie{sc})
	require.Equal(t, 200, a.status, a.body)
	require.Equal(t, 2, strings.Count(a.body, `<tr class="attempt"`))
	require.Contains(t, a.body, "authorization")
	for _, secret := range []string{bearer, path, query, sig[:20]} {
		require.NotContains(t, a.body, secret)
	}
}
