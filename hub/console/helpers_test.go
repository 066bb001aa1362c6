package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/console"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/server"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

const (
	adminToken    = "admin-token-0123456789abcdef0123456789abcdef"
	readOnlyToken = "readonly-token-0123456789abcdef0123456789abcd"
)

// clock is a test's clock, moved by hand, and by tick at each reading
// when tick is set (a clock that runs: admission_test.go).
type clock struct {
	mu   sync.Mutex
	t    time.Time
	tick time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.tick)
	return c.t
}

func (c *clock) setTick(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick = d
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// site is a console mounted on a fiber app, over ops on a real database
// (no stream: database-only operations).
type site struct {
	t       testing.TB
	app     *fiber.App
	cn      *console.Console
	pool    *pgxpool.Pool
	clock   *clock
	ops     *ops.Ops
	traffic *server.Traffic
	log     *strings.Builder
	logMu   sync.Mutex
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func newSite(t testing.TB) *site {
	t.Helper()
	pool, _ := hubdb.Pool(t)
	return newSiteOn(t, pool)
}

func newSiteOn(t testing.TB, pool *pgxpool.Pool) *site {
	t.Helper()
	return newSiteWith(t, pool, fiber.Config{})
}

// newSiteWith is newSiteOn with the fiber app's configuration (e.g. a
// ProxyHeader, so that a test can sign in from many addresses).
func newSiteWith(t testing.TB, pool *pgxpool.Pool, fc fiber.Config) *site {
	t.Helper()
	return newSiteConfig(t, pool, fc, nil)
}

// newSiteConfig is newSiteWith with the console's configuration changed by
// mod (when not nil) before it starts.
func newSiteConfig(t testing.TB, pool *pgxpool.Pool, fc fiber.Config, mod func(*console.Config)) *site {
	t.Helper()
	s := &site{t: t, pool: pool, clock: &clock{t: time.Now()}, traffic: server.NewTraffic(), log: &strings.Builder{}}
	logger := newLogger(lockedWriter{&s.logMu, s.log})
	o := ops.New(ops.Config{Archive: store.New(pool), Subscribers: pool, Now: s.clock.Now})
	s.ops = o
	cfg := console.Config{AdminToken: adminToken, ReadOnlyToken: readOnlyToken, Operator: o,
		Sessions: store.New(pool), StreamState: func() string { return "ok" }, Traffic: s.traffic.Minutes, Logger: logger, Now: s.clock.Now}
	if mod != nil {
		mod(&cfg)
	}
	cn, err := console.New(cfg)
	require.NoError(t, err)
	require.NoError(t, cn.Start(context.Background()))
	s.cn = cn
	t.Cleanup(func() { _ = cn.Stop(context.Background()) })
	fc.DisableStartupMessage = true
	s.app = fiber.New(fc)
	cn.Mount(s.app)
	return s
}

func (s *site) logText() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.log.String()
}

// answer is a response read whole.
type answer struct {
	status int
	header http.Header
	body   string
}

// do sends a request with the given cookies.
func (s *site) do(method, target, body string, cookies []*http.Cookie, header ...string) answer {
	s.t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := s.app.Test(req, -1)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// csrfOf finds a page's CSRF token.
func csrfOf(t testing.TB, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	require.NotNil(t, m, "no csrf field in page")
	return m[1]
}

func cookieOf(a answer, name string) *http.Cookie {
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// login signs in with token and returns the session cookie and the CSRF
// token of the overview.
func (s *site) login(token string) (*http.Cookie, string) {
	s.t.Helper()
	page := s.do("GET", "/console/login", "", nil)
	require.Equal(s.t, 200, page.status)
	lc := cookieOf(page, "hookhub_login")
	require.NotNil(s.t, lc)
	a := s.do("POST", "/console/login", url.Values{"token": {token}, "csrf": {csrfOf(s.t, page.body)}}.Encode(), []*http.Cookie{lc})
	require.Equal(s.t, http.StatusSeeOther, a.status, a.body)
	sc := cookieOf(a, "hookhub_session")
	require.NotNil(s.t, sc)
	home := s.do("GET", "/console/", "", []*http.Cookie{sc})
	require.Equal(s.t, 200, home.status, home.body)
	return sc, csrfOf(s.t, home.body)
}

// seed archives events the way the hub does: n first deliveries of
// provider paddle, received a second apart up to now, and dups
// duplicates of the first. All but the last are published.
func seed(t testing.TB, pool *pgxpool.Pool, now time.Time, n, dups int) []string {
	t.Helper()
	ctx := context.Background()
	st := store.New(pool)
	var ids []string
	var ds []hub.Delivery
	for i := range n {
		id := "evt_seed_" + uuid.NewString()[:8]
		ids = append(ids, id)
		ds = append(ds, hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: id, EventType: "subscription.created",
			Body:      []byte(`{"event_id":"` + id + `","event_type":"subscription.created","data":{"n":` + string(rune('0'+i%10)) + `}}`),
			Signature: "ts=1;h1=" + strings.Repeat("ab", 32), ReceivedAt: now.Add(-time.Duration(n-i) * time.Second)})
	}
	_, err := st.Ingest(ctx, ds)
	require.NoError(t, err)
	for range dups {
		d := ds[0]
		d.ArchiveID = uuid.Must(uuid.NewV7())
		d.ReceivedAt = now
		_, err := st.Ingest(ctx, []hub.Delivery{d})
		require.NoError(t, err)
	}
	rows, err := st.Claim(ctx, 100_000, time.Hour)
	require.NoError(t, err)
	var res []hub.PublishResult
	for i, r := range rows {
		if r.EventID != ids[len(ids)-1] {
			res = append(res, hub.PublishResult{ArchiveID: r.ArchiveID, Seq: uint64(i + 1)})
		}
	}
	require.NoError(t, st.RecordPublished(ctx, res))
	return ids
}

// addDeadLetter makes a subscriber's tables (as the subscriber library
// does when it first runs) and writes one dead letter of an event.
// signedInSite is a new site with n events (and dups duplicate deliveries,
// as seed), a dead letter of credits for the first, and a session signed
// in with token: its cookie and CSRF token.
func signedInSite(t testing.TB, n, dups int, token string) (s *site, ids []string, sc *http.Cookie, csrf string) {
	t.Helper()
	s = newSite(t)
	ids = seed(t, s.pool, s.clock.Now(), n, dups)
	addDeadLetter(t, s.pool, "credits", "paddle", ids[0])
	sc, csrf = s.login(token)
	return s, ids, sc, csrf
}

func addDeadLetter(t testing.TB, pool *pgxpool.Pool, sub, provider, eventID string) {
	t.Helper()
	require.NoError(t, subscriber.Migrate(context.Background(), pool, sub, nil))
	_, err := pool.Exec(context.Background(), `INSERT INTO `+sub+`.dead_letters (subscriber, provider, event_id, subject, stream_seq, error, attempts, data, headers, created_at)
		VALUES ($1, $2, $3, 'paddle.subscription.created', 1, 'handler failed: boom', 5, '\x7b7d', '{}', now())`, sub, provider, eventID)
	require.NoError(t, err)
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }
