package backfill_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/backfill/fakeapi"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/buildinfo"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// loggedEngine is h.engine() logging to the returned buffer.
func (h *hubEnv) loggedEngine() (*backfill.Engine, *hubtest.SyncBuffer) {
	var buf hubtest.SyncBuffer
	st := store.New(h.pool)
	e, err := backfill.New(backfill.Config{Store: st, Ingester: st, Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(h.t, err)
	return e, &buf
}

// requirePrintable checks that text shows neither key nor any part of an
// Authorization header's credentials, and is bounded, printable UTF-8.
func requirePrintable(t *testing.T, text, key string) {
	t.Helper()
	require.NotContains(t, text, key)
	require.NotContains(t, text, key[:12], "not even the key's start")
	require.NotContains(t, text, "Bearer "+key[:3])
	require.True(t, utf8.ValidString(text), "%q", text)
	require.False(t, strings.ContainsFunc(text, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }), "%q", text)
	require.NotContains(t, text, "X-Injected: 1\n")
}

// A gateway in front of the API that echoes the request's headers in its
// error page (401, 400, or a 502 retried until the retries run out) puts
// the key in neither the run's error nor the log: the error shows the
// start of the page, cleaned (no NUL, control characters or broken
// UTF-8), bounded, with the credentials hidden.
func TestAPIErrorTextHidesTheKey(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	h.stripeEvents(2)
	for _, c := range []struct {
		name, key string
		status    int
		arm       func(n, status int)
		want      string
	}{
		{"stripe", stripeKey, 400, h.stripe.EchoHeaders, "answered 400"},
		{"stripe", stripeKey, 502, func(n, status int) {
			for i := range 6 {
				h.stripe.EchoHeaders(n+i, status)
			}
		}, "answered 502 after 5 retries"},
		{"paddle", paddleKey, 401, h.paddle.EchoHeaders, "check HUB_PADDLE_API_KEY"},
	} {
		t.Run(c.name+"/"+http.StatusText(c.status), func(t *testing.T) {
			var hits int
			if c.name == "stripe" {
				hits = len(h.stripe.Hits())
			} else {
				hits = len(h.paddle.Hits())
			}
			c.arm(hits+1, c.status)
			src := h.source(c.name, 0)
			backfill.SetRetrySleep(src, func(ctx context.Context, _ time.Duration) error { return ctx.Err() })
			e, logs := h.loggedEngine()
			_, err := e.Run(context.Background(), src, backfill.Request{Since: time.Now().Add(-time.Hour)})
			require.Error(t, err)
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, "[redacted]", "the echoed header is shown, hidden")
			requirePrintable(t, err.Error(), c.key)
			require.Less(t, len(err.Error()), 1024, "the page's start only")
			requirePrintable(t, logs.String(), c.key)
		})
	}
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_events`))
}

// A redirect off the API's origin (scheme, host and port of the base URL)
// is refused with ErrRedirect: the server there receives no request (so
// never the key), and its answer, a fabricated event, is not ingested. A
// redirect within the origin is followed.
func TestRedirectOffOriginRefused(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	ids, _ := h.stripeEvents(2)
	sink := &fakeapi.Sink{}
	sinkSrv := httptest.NewServer(sink)
	t.Cleanup(sinkSrv.Close)
	otherHost := strings.Replace(sinkSrv.URL, "127.0.0.1", "localhost", 1)
	for i, c := range []struct {
		name, target string
		status       int
	}{
		{"same host, another port", sinkSrv.URL, http.StatusFound},
		{"another host", otherHost, http.StatusTemporaryRedirect},
		{"another scheme", strings.Replace(h.cfg.BackfillSetting("stripe", backfill.SettingAPIURL), "http://", "https://", 1), http.StatusMovedPermanently},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.stripe.Redirect(i+1, c.status, c.target)
			e, logs := h.loggedEngine()
			_, err := e.Run(context.Background(), h.source("stripe", 0), backfill.Request{Since: time.Now().Add(-time.Hour)})
			require.ErrorIs(t, err, backfill.ErrRedirect)
			require.ErrorContains(t, err, "not followed")
			requirePrintable(t, err.Error(), stripeKey)
			requirePrintable(t, logs.String(), stripeKey)
		})
	}
	require.Empty(t, sink.Requests(), "nothing reached the other server")
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_events`))

	// Within the origin: followed, with the key, and the run completes.
	n := len(h.stripe.Hits())
	h.stripe.Redirect(n+1, http.StatusTemporaryRedirect, h.cfg.BackfillSetting("stripe", backfill.SettingAPIURL))
	res, err := h.engine().Run(context.Background(), h.source("stripe", 0), backfill.Request{Since: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.Equal(t, int64(len(ids)), res.Ingested)
	hits := h.stripe.Hits()[n:]
	require.Len(t, hits, 2)
	require.Equal(t, []int{307, 200}, []int{hits[0].Status, hits[1].Status})
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_events WHERE event_id = 'evt_fabricated'`))
}

// GitHub's source refuses an off-origin redirect too, for listing and
// redelivering alike (its client is built the same way).
func TestGitHubRedirectOffOriginRefused(t *testing.T) {
	t.Parallel()
	sink := &fakeapi.Sink{}
	sinkSrv := httptest.NewServer(sink)
	t.Cleanup(sinkSrv.Close)
	var uas []string
	var mu sync.Mutex
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		uas = append(uas, r.UserAgent())
		mu.Unlock()
		http.Redirect(w, r, sinkSrv.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(proxy.Close)
	src, err := backfill.NewGitHub(backfill.GitHubConfig{BaseURL: proxy.URL, Token: githubToken, Hook: "repos/octo/hello/hooks/1"})
	require.NoError(t, err)
	_, err = src.List(context.Background(), time.Now().Add(-time.Hour), time.Now(), "")
	require.ErrorIs(t, err, backfill.ErrRedirect)
	require.NotContains(t, err.Error(), githubToken)
	err = src.Redeliver(context.Background(), backfill.Event{ID: "g", OccurredAt: time.Now()})
	require.ErrorIs(t, err, backfill.ErrRedirect)
	require.Empty(t, sink.Requests())
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{buildinfo.UserAgent("backfill"), buildinfo.UserAgent("backfill")}, uas)
}

// Every request says who sends it: hookhub/<version> (+backfill), the
// version `hub version` prints.
func TestUserAgent(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	h.stripeEvents(1)
	h.paddleEvents(1, 0)
	h.githubEvents(1, func(int) bool { return false })
	for _, name := range []string{"stripe", "paddle", "github"} {
		_, err := h.engine().Run(context.Background(), h.source(name, 0), backfill.Request{Since: time.Now().Add(-time.Hour), DryRun: true})
		require.NoError(t, err, name)
	}
	want := "hookhub/" + buildinfo.Read().Version + " (+backfill)"
	require.Equal(t, "hookhub/dev (+backfill)", want)
	for _, hit := range append(h.stripe.Hits(), h.paddle.Hits()...) {
		require.Equal(t, want, hit.UserAgent, hit.Path)
	}
	require.NotEmpty(t, h.github.Requests())
	for _, r := range h.github.Requests() {
		require.Equal(t, want, r.Header.Get("User-Agent"), r.Path)
	}
}

// Base URLs: https anywhere, http only to a loopback host (the key would
// cross the network in clear); Stripe's documented base URL with /v1 (the
// source appends it) requests /v1/events, not /v1/v1/events.
func TestBaseURLRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url string
		err string
	}{
		{"https://api.stripe.com", ""},
		{"https://api.stripe.com/v1", ""},
		{"http://127.0.0.1:12111", ""},
		{"http://localhost:12111/", ""},
		{"http://[::1]:12111", ""},
		{"http://api.stripe.com", "HUB_STRIPE_API_URL is \"http://api.stripe.com\": plain http"},
		{"http://10.0.0.7:8080", "plain http"},
		{"http://localhost.evil.example", "plain http"},
		{"https://u:p@api.stripe.com", "without credentials"},
		{"ftp://api.stripe.com", "absolute https URL"},
	} {
		_, err := backfill.NewStripe(backfill.StripeConfig{BaseURL: c.url, Key: stripeKey, Names: service.BackfillNames("stripe")})
		if c.err == "" {
			require.NoError(t, err, c.url)
			require.NoError(t, backfill.CheckAPIURL(c.url, "HUB_X"), c.url)
			continue
		}
		require.ErrorContains(t, err, c.err, c.url)
		require.ErrorContains(t, backfill.CheckAPIURL(c.url, "HUB_X"), "HUB_X", c.url)
		require.NotContains(t, err.Error(), ":p@")
	}

	fake := fakeapi.NewStripe(stripeKey)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	body, err := samples.Body("stripe", "evt_v1", "invoice.paid", nil, time.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.NoError(t, fake.Add(body))
	for _, base := range []string{srv.URL + "/v1", srv.URL + "/v1/"} {
		src, err := backfill.NewStripe(backfill.StripeConfig{BaseURL: base, Key: stripeKey})
		require.NoError(t, err)
		page, err := src.List(context.Background(), time.Now().Add(-time.Hour), time.Now(), "")
		require.NoError(t, err, base)
		require.Len(t, page.Events, 1)
	}
	for _, hit := range fake.Hits() {
		require.Equal(t, "/v1/events", hit.Path)
	}
}

// `hub serve`'s periodic backfill logs why it could not take an event (an
// id of 304 bytes, an id with a NUL, an event without a type), not "empty";
// and takes a Paddle event dated far in the future as the webhook path
// does: accepted, without its time (the webhook of another such event is
// accepted the same way). Its log never shows a key, even one an event id
// echoes.
func TestServeBackfillLogsReasonsAndTakesFutureEvents(t *testing.T) {
	t.Parallel()
	var logs hubtest.SyncBuffer
	h := newHubEnv(t, func(c *service.Config) {
		c.BackfillInterval = time.Hour
		c.SetBackfillSetting("github", backfill.SettingToken, "")
		c.SetBackfillSetting("github", backfill.SettingHook, "")
	})
	created := time.Now().Add(-time.Hour).Unix()
	for _, raw := range []string{
		`{"id":"evt_` + strings.Repeat("x", 300) + `","object":"event","created":` + itoa(created) + `,"type":"invoice.paid","data":{"object":{}}}`,
		`{"id":"evt_nul\u0000x","object":"event","created":` + itoa(created) + `,"type":"invoice.paid","data":{"object":{}}}`,
		`{"id":"evt_notype","object":"event","created":` + itoa(created) + `,"data":{"object":{}}}`,
		// An id echoing the key, whose type cannot form a subject: archived
		// FAILED and logged with its id, the key hidden.
		`{"id":"evt_` + stripeKey + `","object":"event","created":` + itoa(created) + `,"type":"bad type","data":{"object":{}}}`,
	} {
		require.NoError(t, h.stripe.Add([]byte(raw)))
	}
	future := time.Now().Add(90 * 24 * time.Hour).UTC().Format(time.RFC3339)
	entity := func(id string) []byte {
		return []byte(`{"event_id":"` + id + `","event_type":"subscription.created","occurred_at":"` + future + `","data":{"id":"sub_1"}}`)
	}
	require.NoError(t, h.paddle.Add(entity("evt_01future0000000000000000")))

	h.startLogged(&logs)
	// The webhook path: accepted, no time kept.
	webhook := entity("evt_01future0000000000000001")
	var m map[string]any
	require.NoError(t, json.Unmarshal(webhook, &m))
	m["notification_id"] = "ntf_01future"
	body, err := json.Marshal(m)
	require.NoError(t, err)
	require.Equal(t, 200, h.webhook("paddle", "", body).status)

	require.Eventually(t, func() bool {
		return h.count(`SELECT count(*) FROM webhook_events WHERE provider = 'paddle' AND event_id = 'evt_01future0000000000000000' AND origin = 'api'`) == 1
	}, 30*time.Second, 20*time.Millisecond, "the future Paddle event is backfilled; logs:\n%s", logs.String())
	require.Equal(t, 2, h.count(`SELECT count(*) FROM webhook_events WHERE provider = 'paddle' AND occurred_at IS NULL`), "both paths drop the implausible time")
	// The run's summary (it names every failure) is its last line.
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), `could not be ingested" component=backfill provider=stripe`)
	}, 30*time.Second, 20*time.Millisecond, "%s", logs.String())
	require.Equal(t, 2, strings.Count(logs.String(), `msg="backfill: an event the api listed has no usable id"`), "%s", logs.String())
	require.Equal(t, 1, strings.Count(logs.String(), `msg="backfill: the api's copy of the event is malformed"`), "%s", logs.String())
	out := logs.String()
	require.Contains(t, out, "id is longer than 255 bytes")
	require.Contains(t, out, "id contains control characters")
	require.Contains(t, out, "body has no type")
	require.NotContains(t, out, `err=empty`)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "event_id=evt_[redacted]") }, 30*time.Second, 20*time.Millisecond, "%s", logs.String())
	out = logs.String()
	require.NotContains(t, out, stripeKey)
	require.NotContains(t, out, paddleKey)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// startLogged runs the hub, its log written to logs, until the test ends.
func (h *hubEnv) startLogged(logs *hubtest.SyncBuffer) {
	h.t.Helper()
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hub := testhub.Start(h.t, h.cfg, service.Deps{Registry: h.registry, Logger: logger})
	h.base = hub.URL
	hub.WaitStream(h.js, h.cfg.Stream)
}

// An occurred_at the webhook path would drop (far ahead, before 2000) is
// dropped by the listing too: the event is kept, without a time, and a
// 1990 date does not end the paging as an event older than since would.
func TestParsePaddleImplausibleTimes(t *testing.T) {
	t.Parallel()
	ev := func(id, at string) string {
		return `{"event_id":"` + id + `","event_type":"subscription.created","occurred_at":"` + at + `","data":{}}`
	}
	now := time.Now()
	since, until := now.Add(-time.Hour), now
	in := `{"data":[` + ev("evt_3", now.Add(400*24*time.Hour).UTC().Format(time.RFC3339)) + `,` +
		ev("evt_2", "1990-01-01T00:00:00Z") + `,` + ev("evt_1", now.Add(-time.Minute).UTC().Format(time.RFC3339)) +
		`],"meta":{"pagination":{"per_page":3,"next":"https://api.paddle.com/events?after=evt_1","has_more":true}}}`
	page, err := backfill.ParsePaddleList([]byte(in), since, until)
	require.NoError(t, err)
	require.Len(t, page.Events, 3)
	require.True(t, page.Events[0].OccurredAt.IsZero())
	require.True(t, page.Events[1].OccurredAt.IsZero())
	require.False(t, page.Events[2].OccurredAt.IsZero())
	require.Equal(t, "evt_1", page.Next, "paging goes on")

	page, err = backfill.ParseStripeList([]byte(`{"object":"list","data":[{"id":"evt_9","object":"event","created":4102444800,"type":"a.b"}],"has_more":false}`))
	require.NoError(t, err)
	require.True(t, page.Events[0].OccurredAt.IsZero(), "2100 is not plausible")
}
