package console

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubhttp"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/server"
	"github.com/hookhub/hookhub/hub/store"
)

// Operator is the operator's tools (hub/ops's *Ops), as the console and
// the admin API (hub/admin, which mounts the console) use them. They check
// every input (bounds, text) themselves, so the command line, the console
// and the admin API refuse the same values with the same message.
type Operator interface {
	Now() time.Time
	ListEvents(ctx context.Context, f ops.EventFilter) ([]ops.EventRow, error)
	ShowEvent(ctx context.Context, ref string) (ops.EventDetail, error)
	Replay(ctx context.Context, req ops.ReplayRequest) (ops.ReplayResult, error)
	Republish(ctx context.Context, f ops.RepublishFilter) (ops.RepublishResult, error)
	DeadLetters(ctx context.Context, sub string) ([]ops.DeadLetter, error)
	Redrive(ctx context.Context, req ops.RedriveRequest) (ops.RedriveResult, error)
	Purge(ctx context.Context, req ops.PurgeRequest) (ops.PurgeResult, error)
	Status(ctx context.Context) (ops.Status, error)
	Subscribers(ctx context.Context) ([]string, error)

	// Audit trail (audit.go): read only. The trail is written by the
	// actions themselves (hub/ops), never through this interface, but
	// for the console's own refusals of a signed-in operator (a read-only
	// session's action): Refuse records one, outcome refused, with the
	// actor of ctx.
	ListAudit(ctx context.Context, f ops.AuditFilter) ([]hub.AuditEntry, error)
	// AuditExportPage is ListAudit admitted as an expensive read: the
	// pages of an export.
	AuditExportPage(ctx context.Context, f ops.AuditFilter) ([]hub.AuditEntry, error)
	Refuse(ctx context.Context, action, target string, params any, reason error) error

	// Console sessions (sessions.go): list and revoke (recorded in the
	// audit trail by hub/ops).
	ListSessions(ctx context.Context, f ops.SessionFilter) ([]hub.SessionInfo, error)
	RevokeSessions(ctx context.Context, sel hub.SessionSelector) (ops.RevokeResult, error)

	// Charts (charts.go).
	ProcessingCharts(ctx context.Context, hours int) (ops.ProcessingCharts, error)

	// Entities (entity.go): the entity page.
	EntityTimeline(ctx context.Context, q ops.TimelineQuery) (ops.Timeline, error)

	// Payload filters and bulk actions (bulk.go).
	ListEventPage(ctx context.Context, f ops.EventFilter) (ops.EventPage, error)
	Bulk(ctx context.Context, req ops.BulkRequest) (ops.BulkResult, error)
}

// SessionStore keeps the console's sessions and OpenID Connect sign-ins in
// progress in Postgres (hub/store's *Store), so that they survive a
// restart and every replica sees them.
type SessionStore interface {
	OpenConsoleSession(ctx context.Context, s store.ConsoleSession, max int, now time.Time) error
	ConsoleSession(ctx context.Context, idHash []byte, now time.Time, touch, lifetime, idle time.Duration) (store.ConsoleSession, bool, error)
	EndConsoleSession(ctx context.Context, idHash []byte) error
	SetConsoleSessionRole(ctx context.Context, idHash []byte, role string) error
	PurgeConsoleSessions(ctx context.Context, now time.Time) error
	StartConsoleLogin(ctx context.Context, l store.ConsoleLogin, now time.Time) error
	TakeConsoleLogin(ctx context.Context, stateHash []byte, now time.Time) (store.ConsoleLogin, bool, error)
}

// Config configures a Console.
type Config struct {
	// AdminToken signs in as "admin" (required, the admin API's token).
	AdminToken string
	// ReadOnlyToken, when set, signs in as "read-only".
	ReadOnlyToken string
	Operator      Operator // required
	// Sessions stores the sessions (hub/store's *Store); required.
	Sessions SessionStore
	// OIDC, when its Issuer is set, adds OpenID Connect sign-in beside the
	// tokens.
	OIDC OIDCConfig
	// StreamState is the stream's state as /readyz reports it ("ok",
	// "missing", ...); optional.
	StreamState func() string
	// Traffic returns the last hour of webhook answers per minute, oldest
	// first (server.Traffic.Minutes); optional.
	Traffic func(now time.Time) []server.TrafficMinute
	// ProviderTraffic returns each provider's answers and latency over
	// span up to now in steps of step, for the charts page
	// (server.ProviderTraffic.Series); optional.
	ProviderTraffic func(now time.Time, span, step time.Duration) []server.ProviderSeries
	Logger          *slog.Logger
	Now             func() time.Time // default time.Now
}

// WithDefaults returns a copy of c with every zero field that has a
// default set to it. New calls it, then Validate.
func (c Config) WithDefaults() Config {
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate checks c as it is (a zero field that has a default fails until
// WithDefaults fills it in) and names every field at fault.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, reason string) { errs = append(errs, fmt.Errorf("console: %s %s", field, reason)) }
	if c.AdminToken == "" {
		bad("AdminToken", "is required")
	}
	if c.Operator == nil {
		bad("Operator", "is required")
	}
	if c.Sessions == nil {
		bad("Sessions", "is required")
	}
	errs = append(errs, c.OIDC.validate()...)
	if c.ReadOnlyToken == c.AdminToken {
		bad("ReadOnlyToken", "must differ from the admin token")
	}
	if c.Logger == nil {
		bad("Logger", "is required")
	}
	if c.Now == nil {
		bad("Now", "is required")
	}
	return errors.Join(errs...)
}

// Console serves the operator's web console.
type Console struct {
	cfg   Config
	log   *slog.Logger
	pages map[string]*template.Template
	css   []byte
	oidc  *oidcClient // nil: no OIDC sign-in
	// failed counts failed sign-ins per address; signIns successful ones
	// per address, roleSignIns per role.
	failed, signIns, roleSignIns *limiter
	// oidcStarts counts OIDC sign-ins started per address.
	oidcStarts *limiter
	jobs       *jobs
	// tokens are the configured tokens a token session's credential is
	// checked against at every request.
	tokens []tokenGrant
	// maxSessions is MaxSessions; a test may lower it (export_test.go).
	maxSessions int
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static/console.css
var cssFile []byte

// pageNames are the templates, each rendered inside layout.html.
var pageNames = []string{"login", "error", "overview", "events", "event", "deadletters", "replay", "plan", "job",
	"republishplan", "redriveplan", "signedin",
	"audit", "charts", "entity", "bulkplan", "bulkjob", "sessions", "sessionsplan"}

// New returns a Console on cfg.
func New(cfg Config) (*Console, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cn := &Console{cfg: cfg, log: cfg.Logger, css: cssFile, pages: map[string]*template.Template{},
		failed:  newLimiter(cfg.Now, MaxFailedSignIns),
		signIns: newLimiter(cfg.Now, MaxSignInsPerAddress), roleSignIns: newLimiter(cfg.Now, MaxSignInsPerRole),
		oidcStarts: newLimiter(cfg.Now, MaxSignInsPerAddress), jobs: newJobs(), tokens: tokenGrants(cfg),
		maxSessions: MaxSessions}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		cn.pages[name] = t
	}
	if cfg.OIDC.Issuer != "" {
		cn.oidc = newOIDCClient(cfg.OIDC, cfg.Now, cn.log)
	}
	return cn, nil
}

// Start implements startstop.Service (a replay job starts from a request).
// With OIDC configured it reads the provider's discovery document, within
// a few seconds; a provider that cannot be reached is logged and tried
// again at the next OIDC sign-in, and token sign-in works meanwhile.
func (cn *Console) Start(ctx context.Context) error {
	if cn.oidc != nil {
		_, _, _ = cn.oidc.discover(ctx)
	}
	return nil
}

// Stop stops a replay job that is running (the hub is shutting down) and
// waits for it. Idempotent; safe when never started.
func (cn *Console) Stop(context.Context) error {
	cn.jobs.stop()
	return nil
}

// Mount registers the console's routes under /console on r.
func (cn *Console) Mount(r fiber.Router) {
	g := r.Group("/console", cn.headers)
	g.Get("/static/console.css", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
		c.Type("css", "utf-8")
		return c.Send(cn.css)
	})
	g.Get("/login", cn.loginPage)
	g.Post("/login", cn.login)
	g.Get("/oidc/login", cn.oidcLogin)
	g.Get("/oidc/callback", cn.oidcCallback)
	g.Post("/logout", cn.authed(cn.logout))
	g.Get("/", cn.authed(cn.overview))
	g.Get("/events", cn.authed(cn.events))
	g.Get("/event", cn.authed(cn.event))
	g.Get("/entity", cn.authed(cn.entity))
	// Republish and redrive-all are planned first (GET: what would happen,
	// and a confirmation form), then done (POST), like a replay.
	g.Get("/event/republish", cn.authed(cn.republishPlan))
	g.Post("/event/republish", cn.authed(cn.republish))
	g.Get("/dead-letters", cn.authed(cn.deadLetters))
	g.Get("/dead-letters/redrive", cn.authed(cn.redrivePlan))
	g.Post("/dead-letters/redrive", cn.authed(cn.redrive))
	g.Get("/replay", cn.authed(cn.replayPage))
	g.Post("/replay/plan", cn.authed(cn.replayPlan))
	g.Post("/replay/run", cn.authed(cn.replayRun))
	g.Get("/replay/jobs/:id", cn.authed(cn.replayJob))
	// The audit trail: read only (GET); nothing here writes to it.
	g.Get("/audit", cn.authed(cn.auditPage))
	g.Get("/audit.jsonl", cn.authed(cn.auditExport))
	g.Get("/charts", cn.authed(cn.charts))
	// The console's sessions: listed by anyone signed in;
	// a revocation is planned (GET) and done by an admin (POST).
	g.Get("/sessions", cn.authed(cn.sessionsPage))
	g.Get("/sessions/revoke", cn.authed(cn.revokePlan))
	g.Post("/sessions/revoke", cn.authed(cn.revoke))
	// Bulk actions on the Events page's filter: plan (GET, a
	// dry run), run (POST), the job and its Cancel (POST).
	g.Get("/bulk", cn.authed(cn.bulkPage))
	g.Post("/bulk/run", cn.authed(cn.bulkRun))
	g.Get("/bulk/jobs/:id", cn.authed(cn.bulkJob))
	g.Post("/bulk/jobs/:id/cancel", cn.authed(cn.bulkCancel))
	g.All("/*", cn.authed(func(c *fiber.Ctx, s *session) error {
		return cn.fail(c, s, fiber.StatusNotFound, "No such page.")
	}))
}

// headers sets what every console answer carries: no caching of pages
// that show the archive, no framing, no script, no referrer.
func (cn *Console) headers(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "same-origin")
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	return c.Next()
}

// view is what layout.html renders; Page is the page's own data.
type view struct {
	Title   string
	Nav     string // overview, events, dead-letters, replay, audit, sessions
	Session *session
	CSRF    string // the form token: the session's, or the login one
	Admin   bool
	Flash   string
	Error   string
	Refresh int // seconds; 0: none
	// RefreshTo, when set, sends the browser there at once (a console
	// path).
	RefreshTo string
	Page      any
}

// render writes page with v, status code.
func (cn *Console) render(c *fiber.Ctx, code int, page string, v view) error {
	if v.Session != nil {
		v.CSRF, v.Admin = v.Session.csrf, v.Session.role == RoleAdmin
	}
	var buf bytes.Buffer
	if err := cn.pages[page].ExecuteTemplate(&buf, "layout", v); err != nil {
		cn.log.Error("console: render failed", "page", page, "err", err)
		return c.Status(fiber.StatusInternalServerError).Type("html", "utf-8").SendString("<!doctype html><title>error</title><p id=\"error\" role=\"alert\">internal error</p>")
	}
	return c.Status(code).Type("html", "utf-8").Send(buf.Bytes())
}

// fail renders the error page with a fixed status and message.
func (cn *Console) fail(c *fiber.Ctx, s *session, code int, msg string) error {
	return cn.render(c, code, "error", view{Title: "Error", Session: s, Error: msg})
}

// failErr renders err (from hub/ops) with the admin API's status (the
// hub's one table, by error code).
func (cn *Console) failErr(c *fiber.Ctx, s *session, err error) error {
	c.Locals(refusalKey{}, err)
	code, msg := hubhttp.ErrorStatus(err)
	if code >= 500 {
		cn.log.Error("console request failed", "path", c.Path(), "err", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		code, msg = fiber.StatusServiceUnavailable, "the request took too long or was cancelled; try again"
	}
	hubhttp.SetRetryAfter(c, code, err)
	return cn.fail(c, s, code, msg)
}
