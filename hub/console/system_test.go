package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

const paddleSecret = "pdl_ntfset_01consoletest000000000000000000_ConsoleTestSecret000000"

// hubSystem is a whole hub (hub/service) with its console on the admin
// listener, and a subscriber "flaky" whose handler can be broken.
type hubSystem struct {
	*testhub.Hub
	t       *testing.T
	broken  atomic.Bool
	browser *http.Client
	sub     *subscriber.Subscriber
}

func newHubSystem(t *testing.T) *hubSystem {
	t.Helper()
	hub := testhub.New(t, service.Deps{}, func(cfg *service.Config) {
		cfg.AdminAddr = "127.0.0.1:0"
		cfg.SetSecrets("paddle", paddleSecret)
		cfg.AdminToken, cfg.ConsoleReadOnlyToken = adminToken, readOnlyToken
	})
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	h := &hubSystem{Hub: hub, t: t, browser: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	pool, js := hub.Pool(), hub.JetStream()

	// The flaky subscriber: one effect row per handler run; fails while
	// broken.
	name := "flaky"
	migrations := fstest.MapFS{"00001_effects.sql": {Data: []byte(fmt.Sprintf(
		"-- +goose Up\nCREATE TABLE %[1]s.effects (event_id TEXT NOT NULL);\n-- +goose Down\nDROP TABLE %[1]s.effects;\n", name))}}
	sub, err := subscriber.New(subscriber.Config{Name: name, Pool: pool, JetStream: js, MaxDeliver: 2, Migrations: migrations,
		Backoff: []time.Duration{50 * time.Millisecond}, AckWait: 2 * time.Second, RedriveInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		if h.broken.Load() {
			return fmt.Errorf("bug: cannot handle %s", ev.EventID)
		}
		_, err := tx.Exec(ctx, "INSERT INTO flaky.effects (event_id) VALUES ($1)", ev.EventID)
		return err
	})
	subCtx, stop := context.WithCancel(context.Background())
	subDone := make(chan error, 1)
	go func() { subDone <- sub.Run(subCtx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-subDone)
	})
	require.Eventually(t, func() bool { return sub.Healthy() == nil }, 20*time.Second, 10*time.Millisecond)
	h.sub = sub
	return h
}

// deliver signs and POSTs a Paddle subscription.created event.
func (h *hubSystem) deliver(eventID string) {
	h.t.Helper()
	h.Deliver("paddle", eventID, "subscription.created")
}

func (h *hubSystem) effects(eventID string) int {
	h.t.Helper()
	return h.Count("SELECT count(*) FROM flaky.effects WHERE event_id = $1", eventID)
}

// page GETs a console page as the browser.
func (h *hubSystem) page(path string) (int, string) {
	h.t.Helper()
	resp, err := h.browser.Get(h.AdminURL + path)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp.StatusCode, string(b)
}

// post submits a console form as the browser, with the page's CSRF token.
func (h *hubSystem) post(path string, form url.Values, csrf string) (int, string) {
	h.t.Helper()
	form.Set("csrf", csrf)
	req, err := http.NewRequest(http.MethodPost, h.AdminURL+path, strings.NewReader(form.Encode()))
	require.NoError(h.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", h.AdminURL)
	resp, err := h.browser.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusSeeOther {
		return resp.StatusCode, resp.Header.Get("Location")
	}
	return resp.StatusCode, string(b)
}

func (h *hubSystem) signIn(token string) string {
	h.t.Helper()
	jar, err := cookiejar.New(nil) // a fresh browser
	require.NoError(h.t, err)
	h.browser.Jar = jar
	_, login := h.page("/console/login")
	code, loc := h.post("/console/login", url.Values{"token": {token}}, csrfOf(h.t, login))
	require.Equal(h.t, http.StatusSeeOther, code)
	require.Equal(h.t, "/console/", loc)
	_, home := h.page("/console/")
	return csrfOf(h.t, home)
}

// processedEventPage waits until flaky has processed a Paddle event and
// its page shows its stream sequence, and returns the page.
func (h *hubSystem) processedEventPage(eventID string) string {
	h.t.Helper()
	require.Eventually(h.t, func() bool { return h.effects(eventID) == 1 }, 20*time.Second, 20*time.Millisecond)
	var ev string
	require.Eventually(h.t, func() bool {
		_, ev = h.page("/console/event?ref=paddle:" + eventID)
		return regexp.MustCompile(`<dd id="stream-seq">\d+</dd>`).MatchString(ev)
	}, 20*time.Second, 50*time.Millisecond)
	return ev
}

func count(t *testing.T, re, s string) int {
	t.Helper()
	return len(regexp.MustCompile(re).FindAllString(s, -1))
}

// TestConsoleOnAWholeHub: the console of a running hub shows what happened
// and its actions act through hub/ops: redrive, republish, replay.
func TestConsoleOnAWholeHub(t *testing.T) {
	t.Parallel()
	h := newHubSystem(t)

	// Only on the admin listener.
	resp, err := http.Get(h.URL + "/console/login")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	csrf := h.signIn(adminToken)

	// An event delivered 10 times shows 10 deliveries, processed once.
	for range 10 {
		h.deliver("evt_ten")
	}
	ev := h.processedEventPage("evt_ten")
	require.Equal(t, 10, count(t, `<tr class="delivery"`, ev))
	require.Regexp(t, `<td class="outcome" data-outcome="processed">processed</td>`, ev)
	require.Contains(t, ev, `<code class="signature">ts=`)

	// A dead letter, redriven from the page, is processed once.
	h.broken.Store(true)
	h.deliver("evt_dead")
	require.Eventually(t, func() bool {
		_, p := h.page("/console/dead-letters?subscriber=flaky")
		return strings.Contains(p, `data-event-id="evt_dead"`)
	}, 20*time.Second, 50*time.Millisecond)
	h.broken.Store(false)
	_, dl := h.page("/console/dead-letters?subscriber=flaky")
	m := regexp.MustCompile(`<tr class="dead-letter" data-id="(\d+)" data-event-id="evt_dead">`).FindStringSubmatch(dl)
	require.NotNil(t, m)
	code, loc := h.post("/console/dead-letters/redrive", url.Values{"subscriber": {"flaky"}, "id": {m[1]}}, csrf)
	require.Equal(t, http.StatusSeeOther, code, loc)
	_, dl = h.page(loc)
	require.Contains(t, dl, `<div id="flash" role="status">Done: redrive requested for 1 dead letter(s)`)
	require.Eventually(t, func() bool { return h.effects("evt_dead") == 1 }, 20*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		_, p := h.page("/console/event?ref=paddle:evt_dead")
		return strings.Contains(p, `data-outcome="processed_after_redrive"`)
	}, 20*time.Second, 50*time.Millisecond)

	// A replay: the dry run changes nothing, the run processes only what
	// was not processed.
	h.broken.Store(true)
	h.deliver("evt_missed")
	require.Eventually(t, func() bool {
		var n int
		_ = h.Pool().QueryRow(context.Background(), "SELECT count(*) FROM flaky.dead_letters WHERE event_id = 'evt_missed'").Scan(&n)
		return n == 1
	}, 20*time.Second, 50*time.Millisecond)
	h.broken.Store(false)
	code, plan := h.post("/console/replay/plan", url.Values{"subscriber": {"flaky"}, "since": {"1h"}}, csrf)
	require.Equal(t, 200, code, plan)
	require.Contains(t, plan, `<p class="big" id="plan-matched">3</p>`)
	require.Contains(t, plan, `<p class="big" id="plan-deliver">1</p>`)
	require.Contains(t, plan, `<p class="big" id="plan-skip">2</p>`)
	require.Contains(t, plan, `<form id="confirm" class="action" method="post" action="/console/replay/run">`)
	holds(t, 300*time.Millisecond, func() bool { return h.effects("evt_missed") == 0 }, "the dry run changed nothing")
	form := url.Values{}
	for _, f := range []string{"subscriber", "since", "until", "subject"} {
		fm := regexp.MustCompile(`<input type="hidden" name="` + f + `" value="([^"]*)">`).FindStringSubmatch(plan)
		require.NotNil(t, fm, f)
		form.Set(f, fm[1])
	}
	code, loc = h.post("/console/replay/run", form, csrf)
	require.Equal(t, http.StatusSeeOther, code, loc)
	require.Regexp(t, `^/console/replay/jobs/[0-9a-f]{16}$`, loc)
	var job string
	require.Eventually(t, func() bool {
		_, job = h.page(loc)
		return strings.Contains(job, `data-state="done"`)
	}, 60*time.Second, 100*time.Millisecond)
	require.Contains(t, job, `<progress id="progress"`)
	require.Contains(t, job, `<dd id="result-processed">1</dd>`)
	require.Contains(t, job, `<dd id="result-skipped">2</dd>`)
	require.Contains(t, job, `<dd id="result-delivered">3</dd>`)
	require.Contains(t, job, `<dd id="result-unsettled">0</dd>`)
	require.Equal(t, 1, h.effects("evt_missed"))
	require.Equal(t, 1, h.effects("evt_ten"))
	require.Equal(t, 1, h.effects("evt_dead"))

	// Republish: every subscriber gets a copy and skips it.
	skipped := h.sub.Stats().SkippedDuplicate
	code, loc = h.post("/console/event/republish", url.Values{"ref": {"paddle:evt_ten"}}, csrf)
	require.Equal(t, http.StatusSeeOther, code, loc)
	_, ev = h.page(loc)
	require.Contains(t, ev, `<div id="flash" role="status">Done: republished`)
	require.Eventually(t, func() bool { return h.sub.Stats().SkippedDuplicate == skipped+1 }, 20*time.Second, 50*time.Millisecond, "flaky skips the copy")
	require.Equal(t, 1, h.effects("evt_ten"))

	// The overview: stream ok, the traffic chart counted the deliveries.
	_, home := h.page("/console/")
	require.Contains(t, home, `<p class="big" id="stream-state">ok</p>`)
	require.Contains(t, home, `answered 2xx`)
	require.Regexp(t, `over the last hour: 1[2-9] answered 2xx`, home)
	require.Contains(t, home, `<tr data-subscriber="flaky">`)
	// evt_missed's dead letter stays until redriven (the replay processed
	// its event; a redrive would skip it).
	require.Regexp(t, `<ul id="attention">\s*<li class="warning"><a href="/console/dead-letters\?subscriber=flaky">flaky: 1 dead letter`, home)

	// The read-only token looks but cannot act.
	ro := h.signIn(readOnlyToken)
	_, home = h.page("/console/")
	require.Contains(t, home, `<span id="who">read-only</span>`)
	code, body := h.post("/console/replay/plan", url.Values{"subscriber": {"flaky"}, "since": {"1h"}}, ro)
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "read-only")
	// The refusal is in the audit trail, with the session's actor.
	require.Equal(t, 1, h.Count(`SELECT count(*) FROM audit_log WHERE action = 'console.action' AND outcome = 'refused'
		AND target = '/console/replay/plan' AND actor_role = 'read-only' AND via = 'console' AND error LIKE '%read-only%'`))
}

// The event page lists only the subscribers whose consumer takes the
// event's subject, and says "not published" for an event that is not on
// the stream instead of calling every subscriber pending.
func TestEventPageSubscribersTakingTheSubject(t *testing.T) {
	t.Parallel()
	h := newHubSystem(t)
	// A subscriber that only takes clerk events (its tables and consumer,
	// not running).
	require.NoError(t, subscriber.Migrate(t.Context(), h.Pool(), "clerkonly", nil))
	_, err := h.JetStream().CreateOrUpdateConsumer(t.Context(), schema.DefaultStream, jetstream.ConsumerConfig{Durable: "clerkonly",
		AckPolicy: jetstream.AckExplicitPolicy, FilterSubjects: []string{"clerk.>", schema.ReplaySubject("clerkonly", "clerk.>")}})
	require.NoError(t, err)
	h.signIn(adminToken)

	h.deliver("evt_taken")
	ev := h.processedEventPage("evt_taken")
	require.Contains(t, ev, `<tr data-subscriber="flaky">`)
	require.Contains(t, ev, `data-outcome="processed"`)
	require.NotContains(t, ev, `data-subscriber="clerkonly"`, "clerkonly does not take paddle events")

	// FAILED: its type cannot form a subject; never published.
	h.Deliver("paddle", "evt_never", "subscription created")
	code, ev := h.page("/console/event?ref=paddle:evt_never")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, ev, `<dd id="stream-seq">not published (it never will be)</dd>`)
	require.NotContains(t, ev, `data-subscriber=`)
	require.NotContains(t, ev, "pending")
	require.Contains(t, ev, `id="no-subscribers">Not published: no subscriber has received this event.`)
}
