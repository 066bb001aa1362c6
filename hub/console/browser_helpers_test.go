package console_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/migrations"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// The tokens and secrets of the hubs these tests start.
const (
	consoleAdminToken    = "console-admin-token-0123456789abcdef0123456789"
	consoleReadOnlyToken = "console-read-only-token-0123456789abcdef01234"
	browserPaddleSecret  = "pdl_ntfset_01console00000000000000000000_ConsoleTestSecret0000000"
	browserClerkSecret   = "whsec_dGVzdC1zZWNyZXQtZm9yLWhvb2todWItdGVzdHMh"
)

// Environment variables of the browser tests.
const (
	// envChromePath names the browser binary; default: chromium on PATH.
	envChromePath = "CHROME_PATH"
	// envRequireBrowser=1 (set by .ci/run) fails the tests when the
	// browser is missing instead of skipping them.
	envRequireBrowser = "HOOKHUB_REQUIRE_BROWSER"
	// envScreenshots names a directory: the tests save a full-page PNG of
	// each page there (for docs/console.md).
	envScreenshots = "HOOKHUB_SCREENSHOTS"
)

// Timeouts for a loaded 2-core machine: generous, they only bound a hang.
const (
	stepTimeout = 60 * time.Second // one browser step (a navigation, a click, a query)
	waitTimeout = 90 * time.Second // a condition the hub or a subscriber must reach
)

// laptopWidth and phoneWidth are the viewport widths of the screenshots.
const (
	laptopWidth  = 1280
	laptopHeight = 900
	phoneWidth   = 390
	phoneHeight  = 844
)

// chromePath finds the browser, or skips the test (fails it when
// HOOKHUB_REQUIRE_BROWSER=1).
func chromePath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(envChromePath); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		missingBrowser(t, fmt.Sprintf("%s=%s does not exist", envChromePath, p))
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		missingBrowser(t, "chromium is not on PATH (apt-get install chromium, or set "+envChromePath+")")
	}
	return p
}

func missingBrowser(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(envRequireBrowser) == "1" {
		t.Fatalf("browser test: %s, and %s=1", why, envRequireBrowser)
	}
	t.Skipf("browser test skipped: %s (set %s=1 to make this a failure)", why, envRequireBrowser)
}

// browserSuite is what the browser tests share: one headless Chromium
// process, started once by TestBrowser, and browserHubs hubs (each on its
// own database and JetStream server, with the OpenID Connect provider its
// console signs operators in with). The suite's tests run in browserHubs
// lanes at once, each lane on a hub of its own, one test after another
// (TestBrowser): never two tests on one hub. Each test opens its own tabs,
// each in a browser context of its own (a fresh profile: no cookies), and
// starts on its lane's hub reset to empty (startHub); the ids of its
// events are its own.
type browserSuite struct {
	chrome context.Context // the Chromium process's first tab
	hubs   []*suiteHub
	// The hub of the lane this copy was made for (on); nil in the suite
	// itself.
	*suiteHub
}

// browserHubs is how many hubs the suite starts, so how many of its tests
// run at once.
const browserHubs = 2

// suiteHub is one of the suite's hubs, with its log.
type suiteHub struct {
	hub  *testhub.Hub
	logs *hubtest.SyncBuffer
}

// newBrowserSuite starts Chromium, then the suite's hubs, for t and its
// subtests. Chromium first: without it the tests are skipped at once.
func newBrowserSuite(t *testing.T) *browserSuite {
	t.Helper()
	s := &browserSuite{chrome: startChromium(t)}
	for range browserHubs {
		s.hubs = append(s.hubs, startSuiteHub(t))
	}
	return s
}

// on is the suite as the tests of a lane see it: on hub h.
func (s *browserSuite) on(h *suiteHub) *browserSuite {
	return &browserSuite{chrome: s.chrome, hubs: s.hubs, suiteHub: h}
}

// startSuiteHub starts one hub of the suite and the provider its console
// signs operators in with.
func startSuiteHub(t *testing.T) *suiteHub {
	t.Helper()
	s := &suiteHub{logs: &hubtest.SyncBuffer{}}
	// The admin listener's address is fixed first: the provider must know
	// the console's callback before the hub starts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	adminAddr := ln.Addr().String()
	require.NoError(t, ln.Close())
	callback := "http://" + adminAddr + "/console/oidc/callback"
	opLn, opURL := listen(t)
	startOP(t, opLn, opURL, callback)

	_, url := hubdb.Pool(t)
	n := hubtest.JetStream(t)
	cfg := testhub.Config(t, url, n.URL())
	cfg.AdminAddr = adminAddr
	cfg.AdminToken, cfg.ConsoleReadOnlyToken = consoleAdminToken, consoleReadOnlyToken
	cfg.SetSecrets("paddle", browserPaddleSecret)
	cfg.SetSecrets("clerk", browserClerkSecret)
	cfg.BatchCommitters, cfg.RelayWorkers = 2, 2
	cfg.ConsoleOIDCIssuer, cfg.ConsoleOIDCClientID, cfg.ConsoleOIDCClientSecret = opURL, consoleClientID, consoleClientSecret
	cfg.ConsoleOIDCRedirectURL, cfg.ConsoleOIDCAdmins, cfg.ConsoleOIDCReaders = callback, oidcAdmins, oidcReaders
	logger := slog.New(slog.NewJSONHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// Registered before the hub's own cleanup, so it runs after the hub
	// has stopped: no log line may carry a token.
	t.Cleanup(func() {
		out := s.logs.String()
		require.NotContains(t, out, consoleAdminToken, "the admin token was logged")
		require.NotContains(t, out, consoleReadOnlyToken, "the read-only token was logged")
	})
	s.hub = testhub.Start(t, cfg, service.Deps{Logger: logger})
	require.Equal(t, "http://"+adminAddr, s.hub.AdminURL)
	s.hub.WaitStream(s.hub.JetStream(), cfg.Stream)
	return s
}

// startChromium starts the browser process, closed when t ends.
func startChromium(t *testing.T) context.Context {
	t.Helper()
	path := chromePath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(laptopWidth, laptopHeight),
		chromedp.DisableGPU,
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("font-render-hinting", "none"),
	)
	if os.Geteuid() == 0 {
		// Chromium's sandbox refuses to run as root.
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	openTab(t, ctx, "start "+path)
	return ctx
}

// openTab makes the first call on a chromedp context, which starts its
// browser or opens its tab and binds the tab's life to ctx: a first call
// under a step's timeout would close the tab when the step ends. It must
// not hang the test forever either.
func openTab(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx) }()
	select {
	case err := <-done:
		require.NoError(t, err, what)
	case <-time.After(2 * stepTimeout):
		t.Fatalf("%s: not done within %s", what, 2*stepTimeout)
	}
}

// browser is one Chromium tab driven through chromedp.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string // the console's origin, e.g. http://127.0.0.1:4711
}

// newBrowser opens a tab for the test in a browser context of its own (a
// fresh profile: no cookies) of the suite's Chromium, closed when the test
// ends. A test that needs two sessions at once opens two.
func (s *browserSuite) newBrowser(t *testing.T) *browser {
	t.Helper()
	ctx, cancel := chromedp.NewContext(s.chrome, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	openTab(t, ctx, "open a tab")
	b := &browser{t: t, ctx: ctx, base: s.hub.AdminURL}
	b.do(chromedp.EmulateViewport(laptopWidth, laptopHeight))
	return b
}

// step is a context for one browser step.
func (b *browser) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, stepTimeout)
}

// do runs actions that return nothing.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, actions...))
}

// run runs one browser step and returns its result.
func run[T any](b *browser, action chromedp.Action[T], what string) T {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	require.NoError(b.t, err, what)
	return v
}

// eval evaluates a JavaScript expression on the page.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	return run(b, chromedp.Evaluate[T](expr), "evaluate "+expr)
}

// load runs steps that load a document (a click on a link or a button, a
// form's submission) and returns its final response (after redirects).
func (b *browser) load(what string, steps ...chromedp.Action[chromedp.Void]) *network.Response {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, steps...)
	require.NoError(b.t, err, what)
	require.NotNil(b.t, resp, "%s: no document loaded", what)
	return resp
}

// open navigates to a console path and returns the document's final
// response (after redirects).
func (b *browser) open(path string) *network.Response {
	b.t.Helper()
	resp := run(b, chromedp.NavigateResponse(b.base+path), "open "+path)
	require.NotNil(b.t, resp, "open %s: no response", path)
	return resp
}

// openOK opens a path and requires a 200 page.
func (b *browser) openOK(path string) {
	b.t.Helper()
	resp := b.open(path)
	b.status(http.StatusOK, resp, "GET %s (now at %s)", path, resp.URL)
}

// click clicks the first element sel matches, waits for the document the
// click loads (a form submission, a link) and returns its final response.
func (b *browser) click(sel string) *network.Response {
	b.t.Helper()
	return b.load("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// clickOK clicks and requires the loaded page to answer 200.
func (b *browser) clickOK(sel string) {
	b.t.Helper()
	resp := b.click(sel)
	b.status(http.StatusOK, resp, "click %s (now at %s)", sel, resp.URL)
}

// status requires a loaded document's status; the failure message ends
// with the page's #error (read only then: it is one more browser step).
func (b *browser) status(want int, resp *network.Response, msg string, args ...any) {
	b.t.Helper()
	if int(resp.Status) != want {
		require.Equal(b.t, want, int(resp.Status), "%s: %s", fmt.Sprintf(msg, args...), b.errorText())
	}
}

// setValue sets the value of an input or a select.
func (b *browser) setValue(sel, value string) {
	b.t.Helper()
	b.do(chromedp.SetValue(chromedp.CSS(sel), value, chromedp.NodeReady))
}

// count counts the elements sel matches, without waiting.
func (b *browser) count(sel string) int {
	b.t.Helper()
	return eval[int](b, fmt.Sprintf("document.querySelectorAll(%s).length", jsString(sel)))
}

// text is the trimmed text content of the first element sel matches, ""
// when there is none (no waiting).
func (b *browser) text(sel string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf("((e) => e ? e.textContent.trim() : '')(document.querySelector(%s))", jsString(sel)))
}

// texts are the trimmed texts of every element sel matches.
func (b *browser) texts(sel string) []string {
	b.t.Helper()
	return eval[[]string](b, fmt.Sprintf("Array.from(document.querySelectorAll(%s), (e) => e.textContent.trim())", jsString(sel)))
}

// attrs are the values of one attribute of every element sel matches.
func (b *browser) attrs(sel, name string) []string {
	b.t.Helper()
	return eval[[]string](b, fmt.Sprintf("Array.from(document.querySelectorAll(%s), (e) => e.getAttribute(%s) || '')",
		jsString(sel), jsString(name)))
}

// number is the whole number the first element sel matches shows.
func (b *browser) number(sel string) int {
	b.t.Helper()
	s := b.text(sel)
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	require.NoError(b.t, err, "%s shows %q, not a number", sel, s)
	return n
}

// errorText is the page's #error message, for failure messages.
func (b *browser) errorText() string {
	ctx, cancel := b.step()
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		"((e) => e ? '#error: ' + e.textContent.trim() : 'no #error; page starts: ' + document.body.innerText.slice(0, 300))(document.querySelector('#error'))"))
	if err != nil {
		return "(page unreadable: " + err.Error() + ")"
	}
	return s
}

// location is the page's URL.
func (b *browser) location() string {
	b.t.Helper()
	return eval[string](b, "location.href")
}

// waitUntil re-evaluates a JavaScript condition until it is true, across
// page reloads (a page that refreshes itself).
func (b *browser) waitUntil(cond, msg string) {
	b.t.Helper()
	deadline := time.After(waitTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		select {
		case <-tick.C:
		case <-deadline:
			b.t.Fatalf("%s: %s still false after %s (last error: %v); %s", msg, cond, waitTimeout, last, b.errorText())
		}
	}
}

// cookie is the browser's cookie of that name for the console, nil if
// there is none.
func (b *browser) cookie(name string) *network.Cookie {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.base + "/console/"}})
	require.NoError(b.t, err)
	for _, c := range res.Cookies {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// signIn signs in with a token and requires the overview to greet the role.
func (b *browser) signIn(token, role string) {
	b.t.Helper()
	b.openOK("/console/login")
	b.setValue("#token", token)
	b.clickOK("#sign-in")
	require.Equal(b.t, role, b.text("#who"), "signed in as %s at %s", role, b.location())
}

// auditedAfter is an attribute of each row of the audit page newer than
// entry after (the suite's tests share the trail), newest first.
func (b *browser) auditedAfter(after int64, attr string) []string {
	b.t.Helper()
	return eval[[]string](b, fmt.Sprintf(`Array.from(document.querySelectorAll("#audit tr.audit-entry")).
		filter((e) => Number(e.dataset.id) > %d).map((e) => e.getAttribute(%s) || "")`, after, jsString(attr)))
}

// csrf is the CSRF token of the page's first form that has one.
func (b *browser) csrf() string {
	b.t.Helper()
	v := eval[string](b, "((e) => e ? e.value : '')(document.querySelector('form input[name=csrf]'))")
	require.NotEmpty(b.t, v, "no csrf input on %s", b.location())
	return v
}

// posted is the answer to a form POST built by a script on the page.
type posted struct {
	Status int    // the final document's (after redirects)
	URL    string // the final document's
	Error  string // its #error text
}

// post builds a form on the page and submits it, as a script on the
// console's own origin could (the console's Content-Security-Policy keeps
// fetch from connecting anywhere, but form-action 'self' lets forms post):
// the POST goes with the page's cookies, Origin and Sec-Fetch-Site. It
// returns the document the browser ends up on (redirects followed).
func (b *browser) post(path string, fields map[string]string) posted {
	b.t.Helper()
	raw, err := json.Marshal(fields)
	require.NoError(b.t, err)
	expr := fmt.Sprintf(`(() => {
		const f = document.createElement("form");
		f.method = "post";
		f.action = %s;
		for (const [name, value] of Object.entries(%s)) {
			const i = document.createElement("input");
			i.type = "hidden";
			i.name = name;
			i.value = value;
			f.appendChild(i);
		}
		document.body.appendChild(f);
		f.submit();
	})()`, jsString(path), raw)
	resp := b.load("POST "+path, chromedp.Evaluate[chromedp.Void](expr))
	return posted{Status: int(resp.Status), URL: resp.URL, Error: b.text("#error")}
}

// screenshot saves a full-page PNG of the current page as name.png in
// $HOOKHUB_SCREENSHOTS, if set.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	dir := screenshotDir(b.t)
	if dir == "" {
		return
	}
	ctx, cancel := b.step()
	defer cancel()
	// Fonts and layout settle before the picture.
	_, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void]("document.fonts.ready", chromedp.EvalAwaitPromise))
	require.NoError(b.t, err)
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err, "screenshot %s", name)
	buf, err = shrinkPNG(buf)
	require.NoError(b.t, err, "screenshot %s", name)
	require.NoError(b.t, os.MkdirAll(dir, 0o755))
	require.NoError(b.t, os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644))
}

// screenshotDir is $HOOKHUB_SCREENSHOTS, a relative path taken from the
// module's root (where the go command was most likely run), "" when unset.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envScreenshots)
	if dir == "" || filepath.IsAbs(dir) {
		return dir
	}
	wd, err := os.Getwd() // the package's directory under go test
	require.NoError(t, err)
	for root := wd; ; root = filepath.Dir(root) {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return filepath.Join(root, dir)
		}
		if filepath.Dir(root) == root {
			return filepath.Join(wd, dir)
		}
	}
}

// phoneScreenshot saves the current page at phone width, then restores the
// laptop viewport.
func (b *browser) phoneScreenshot(name string) {
	b.t.Helper()
	if os.Getenv(envScreenshots) == "" {
		return
	}
	b.do(chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateMobile, chromedp.EmulateScale(1)))
	b.do(chromedp.Reload())
	b.screenshot(name)
	b.do(chromedp.EmulateViewport(laptopWidth, laptopHeight))
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

// testHub is the shared hub as one test sees it: testhub's helpers
// report to the test, plus the flaky subscriber the test may start.
type testHub struct {
	*testhub.Hub
	t    *testing.T
	logs *hubtest.SyncBuffer
	// audited is the last audit trail entry before the test: the trail is
	// append-only, so a test reads only the entries after it.
	audited int64

	mu      sync.Mutex
	failing map[string]bool // event ids the flaky subscriber fails on
}

// startHub gives the test the shared hub reset to empty (reset).
func (s *browserSuite) startHub(t *testing.T) *testHub {
	t.Helper()
	h := &testHub{Hub: s.hub.For(t), t: t, logs: s.logs, failing: map[string]bool{}}
	h.reset()
	require.NoError(t, h.Pool().QueryRow(t.Context(), `SELECT COALESCE(max(id), 0) FROM audit_log`).Scan(&h.audited))
	return h
}

// holds requires cond to be true now and to stay true for d: that
// something does not happen. A slow machine can only make it miss a
// defect, never fail a correct hub.
func holds(t testing.TB, d time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	end := time.After(d)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		require.True(t, cond(), append([]any{msg}, args...)...)
		select {
		case <-tick.C:
		case <-end:
			require.True(t, cond(), append([]any{msg}, args...)...)
			return
		}
	}
}

// reset empties the hub as if it had just started on a new database and
// stream: every subscriber's schema and durable consumer gone, the stream
// purged, every table of the hub's schema (but its migrations' version
// table) truncated. Event ids are never reused between tests, so the
// stream's duplicate window cannot tell. The hub's in-memory state (console
// sessions, sign-in limits, the charts' request counts) stays: each test
// has its own browser contexts, and the charts test runs first.
func (h *testHub) reset() {
	h.t.Helper()
	ctx := h.t.Context()
	pool := h.Pool()
	_, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+flaky+" CASCADE; DROP SCHEMA IF EXISTS "+bystander+" CASCADE; "+
		"DROP SCHEMA IF EXISTS "+timelineDestination+" CASCADE")
	require.NoError(h.t, err)
	st, err := h.JetStream().Stream(ctx, h.Config.Stream)
	require.NoError(h.t, err)
	for name := range st.ConsumerNames(ctx).Name() {
		require.NoError(h.t, st.DeleteConsumer(ctx, name))
	}
	require.NoError(h.t, st.Purge(ctx))
	var tables []string
	// The audit trail is append-only (its trigger refuses TRUNCATE): it is
	// kept, and a test reads only the entries after its start.
	rows, err := pool.Query(ctx, `SELECT quote_ident(tablename) FROM pg_tables
		WHERE schemaname = current_schema() AND tablename <> $1 AND tablename <> 'audit_log'`, migrations.HubVersionTable)
	require.NoError(h.t, err)
	tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(h.t, err)
	_, err = pool.Exec(ctx, "TRUNCATE "+strings.Join(tables, ", ")+" CASCADE")
	require.NoError(h.t, err)
}

// failOn makes the flaky subscriber's handler fail (or stop failing) on an
// event.
func (h *testHub) failOn(eventID string, fail bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failing[eventID] = fail
}

func (h *testHub) fails(eventID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failing[eventID]
}

// flaky is the name of the test subscriber: it consumes paddle.>, counts
// its side effects in flaky.effects (one row per successful handler run)
// and fails on the events failOn names.
const flaky = "flaky"

// startFlaky runs the flaky subscriber until the test ends: two attempts
// before a dead letter, short backoff, redrive requests seen within 100 ms.
func (h *testHub) startFlaky() *subscriber.Subscriber {
	h.t.Helper()
	fsys := fstest.MapFS{"00001_effects.sql": {Data: []byte(
		"-- +goose Up\nCREATE TABLE flaky.effects (event_id TEXT NOT NULL, at TIMESTAMPTZ NOT NULL DEFAULT now());\n" +
			"-- +goose Down\nDROP TABLE flaky.effects;\n")}}
	sub, err := subscriber.New(subscriber.Config{Name: flaky, Pool: h.Pool(), JetStream: h.JetStream(), Migrations: fsys,
		MaxDeliver: 2, Backoff: []time.Duration{50 * time.Millisecond}, AckWait: 5 * time.Second,
		RedriveInterval: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(h.t, err)
	sub.Handle("paddle.>", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		if h.fails(ev.EventID) {
			return fmt.Errorf("bug: cannot handle %s", ev.EventID)
		}
		_, err := tx.Exec(ctx, `INSERT INTO flaky.effects (event_id) VALUES ($1)`, ev.EventID)
		return err
	})
	h.run(sub, flaky)
	return sub
}

// processedAndDead starts the flaky subscriber and delivers it two paddle
// events: ok, which it processes, and dead, which it dead-letters (it
// fails on dead until failOn says otherwise). It returns the dead letter's
// id.
func (h *testHub) processedAndDead(ok, dead string) int64 {
	h.t.Helper()
	h.startFlaky()
	h.failOn(dead, true)
	h.Deliver("paddle", ok, "subscription.created")
	h.Deliver("paddle", dead, "subscription.created")
	h.Eventually(func() bool {
		return h.Count(`SELECT count(*) FROM flaky.dead_letters WHERE event_id = $1`, dead) == 1
	}, "%s dead-lettered", dead)
	h.Eventually(func() bool { return h.effects(ok) == 1 }, "%s processed", ok)
	var id int64
	require.NoError(h.t, h.Pool().QueryRow(h.t.Context(), `SELECT id FROM flaky.dead_letters WHERE event_id = $1`, dead).Scan(&id))
	return id
}

// run runs sub until the test ends, and waits until it is healthy.
func (h *testHub) run(sub *subscriber.Subscriber, name string) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sub.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(h.t, err)
		case <-time.After(40 * time.Second):
			h.t.Errorf("the %s subscriber did not stop within 40s", name)
		}
	})
	h.Eventually(func() bool { return sub.Healthy() == nil }, "the "+name+" subscriber did not become healthy")
}

// effects counts the flaky subscriber's side effects for an event.
func (h *testHub) effects(eventID string) int {
	h.t.Helper()
	return h.Count(`SELECT count(*) FROM flaky.effects WHERE event_id = $1`, eventID)
}

// consoleActions are the "console action" log lines.
func (h *testHub) consoleActions() []map[string]any {
	h.t.Helper()
	var out []map[string]any
	for line := range strings.Lines(h.logs.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "console action" {
			out = append(out, m)
		}
	}
	return out
}

// tokenID is how the log names a token: the first 8 hex digits of its
// SHA-256.
func tokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])[:8]
}

// shrinkPNG makes a screenshot small enough to commit: a paletted PNG
// (the pages are flat colours and anti-aliased text, so a palette of 256
// loses almost nothing), best compression.
func shrinkPNG(raw []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("decode screenshot: %w", err)
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, paletted(img)); err != nil {
		return nil, fmt.Errorf("encode screenshot: %w", err)
	}
	return buf.Bytes(), nil
}

// paletted maps an image onto at most 256 of its own colours, without
// dithering: all of them when there are no more, else the most frequent
// first, then each next the colour with the largest frequency × squared
// distance to the colours already taken (so that a rare but distinct
// colour, a link's blue, keeps its own entry).
func paletted(img image.Image) *image.Paletted {
	b := img.Bounds()
	freq := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			freq[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	cols := slices.Collect(maps.Keys(freq))
	slices.SortFunc(cols, func(a, c color.RGBA) int {
		if n := cmp.Compare(freq[c], freq[a]); n != 0 {
			return n
		}
		return cmp.Compare(uint32(a.R)<<24|uint32(a.G)<<16|uint32(a.B)<<8|uint32(a.A),
			uint32(c.R)<<24|uint32(c.G)<<16|uint32(c.B)<<8|uint32(c.A))
	})
	pal := color.Palette{}
	if len(cols) <= 256 {
		for _, c := range cols {
			pal = append(pal, c)
		}
	} else {
		d2 := func(a, c color.RGBA) float64 {
			dr, dg, db := float64(a.R)-float64(c.R), float64(a.G)-float64(c.G), float64(a.B)-float64(c.B)
			return dr*dr + dg*dg + db*db
		}
		dist := make([]float64, len(cols))
		for i, c := range cols {
			dist[i] = d2(c, cols[0])
		}
		pal = append(pal, cols[0])
		for len(pal) < 256 {
			best, score := 0, -1.0
			for i, c := range cols {
				if s := float64(freq[c]) * dist[i]; s > score {
					best, score = i, s
				}
			}
			next := cols[best]
			pal = append(pal, next)
			for i, c := range cols {
				dist[i] = min(dist[i], d2(c, next))
			}
		}
	}
	out := image.NewPaletted(b, pal)
	index := map[color.RGBA]uint8{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			i, ok := index[c]
			if !ok {
				i = uint8(pal.Index(c))
				index[c] = i
			}
			out.SetColorIndex(x, y, i)
		}
	}
	return out
}

// noActionForReadOnly opens each page of the console as the admin, who
// sees actions where the page has some, and as the read-only operator, who
// sees none and no form that posts but sign-out; then also(path) checks
// more of the read-only operator's page. ref names an event.
func noActionForReadOnly(t *testing.T, admin, ro *browser, ref string, also func(path string)) {
	t.Helper()
	for _, p := range []struct {
		path        string
		adminAction bool // the admin sees an action here
	}{
		{"/console/", false},
		{"/console/events", false},
		{"/console/event?ref=" + url.QueryEscape(ref), true},
		{"/console/dead-letters?subscriber=flaky", true},
		{"/console/replay", true},
		{"/console/event/republish?ref=" + url.QueryEscape(ref), true},
		{"/console/dead-letters/redrive?subscriber=flaky", true},
	} {
		admin.openOK(p.path)
		if p.adminAction {
			require.Positive(t, admin.count(".action"), "%s: the admin's page has actions (the check below can fail)", p.path)
		}
		ro.openOK(p.path)
		require.Zero(t, ro.count(".action"), "%s: no .action element for the read-only operator", p.path)
		require.Zero(t, ro.count(`form[method=post i]:not([action="/console/logout"])`), "%s: no form but sign-out posts", p.path)
		also(p.path)
	}
}

// refusesEveryAction checks that a read-only operator's browser, posting
// with its own session's CSRF token (which it returns), is refused each
// action: republishing ref, redriving dead letter id (and all) of flaky,
// planning and running a replay.
func refusesEveryAction(t *testing.T, ro *browser, ref string, id int64) string {
	t.Helper()
	ro.openOK("/console/")
	csrf := ro.csrf()
	for _, c := range []struct {
		path string
		form map[string]string
	}{
		{"/console/event/republish", map[string]string{"ref": ref}},
		{"/console/dead-letters/redrive", map[string]string{"subscriber": flaky, "id": fmt.Sprint(id)}},
		{"/console/dead-letters/redrive", map[string]string{"subscriber": flaky, "all": "1"}},
		{"/console/replay/plan", map[string]string{"subscriber": flaky, "since": "1h"}},
		{"/console/replay/run", map[string]string{"subscriber": flaky, "since": "1h"}},
	} {
		c.form["csrf"] = csrf
		p := ro.post(c.path, c.form)
		require.Equal(t, http.StatusForbidden, p.Status, "POST %s %v: %s", c.path, c.form, p.Error)
		require.Contains(t, p.Error, "read-only", c.path)
		ro.openOK("/console/")
	}
	return csrf
}
