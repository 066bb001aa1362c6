package admin

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/console"
	"github.com/hookhub/hookhub/hub/internal/hubhttp"
	"github.com/hookhub/hookhub/hub/metrics"
)

// Config configures a Server. Zero fields take the defaults
// (WithDefaults).
type Config struct {
	// Token, when set, serves the admin API under /admin/ (bearer token,
	// HUB_ADMIN_TOKEN) over Operator, and Console under /console/; empty
	// leaves both off.
	Token    string
	Operator console.Operator // required with Token
	// Console is the operator's web console, mounted with the API;
	// optional.
	Console *console.Console
	// Gatherer is what /metrics serves; required.
	Gatherer prometheus.Gatherer
	// Bodies is the budget the API reads request bodies within: the
	// webhook listener's (hub/server's Server.Bodies). Default: one of
	// MaxConns × MaxBodyBytes of its own.
	Bodies *hubhttp.Budget
	// OwnListener serves /admin/, /console/, /metrics, /healthz and
	// /readyz (Probes) and, with Pprof, /debug/pprof/ on the admin
	// listener (Serve, HUB_ADMIN_ADDR). Without it the webhook listener's
	// app serves /admin/, /console/ and /metrics (Mount).
	OwnListener bool
	// Probes registers /healthz and /readyz on the admin listener
	// (hub/server's Server.Probes); required with OwnListener.
	Probes func(r fiber.Router)
	// Pprof serves net/http/pprof under /debug/pprof/ on the admin
	// listener; it needs OwnListener.
	Pprof bool
	// MaxConns bounds the open connections of the admin listener (Serve),
	// and a quarter of it those of one remote address; past either a new
	// connection is answered 503 with Retry-After and closed. Default
	// DefaultMaxConns.
	MaxConns int
	Metrics  *metrics.Metrics // required: counts the refused connections
	Logger   *slog.Logger
}

// WithDefaults returns a copy of c with every zero field that has a
// default set to it. New calls it, then Validate.
func (c Config) WithDefaults() Config {
	c.MaxConns = cmp.Or(c.MaxConns, DefaultMaxConns)
	if c.Bodies == nil {
		c.Bodies = hubhttp.NewBudget(int64(max(c.MaxConns, 1))*MaxBodyBytes, nil)
	}
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	return c
}

// Validate checks c as it is (a zero field that has a default fails until
// WithDefaults fills it in) and names every field at fault.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("admin: %s %s", field, fmt.Sprintf(format, args...)))
	}
	for _, f := range []struct {
		name    string
		missing bool
	}{
		{"Gatherer", c.Gatherer == nil}, {"Metrics", c.Metrics == nil}, {"Bodies", c.Bodies == nil},
		{"Logger", c.Logger == nil},
	} {
		if f.missing {
			bad(f.name, "is required")
		}
	}
	if c.MaxConns < 1 {
		bad("MaxConns", "must be at least 1, got %d", c.MaxConns)
	}
	if c.Pprof && !c.OwnListener {
		bad("Pprof", "needs OwnListener")
	}
	if c.OwnListener && c.Probes == nil {
		bad("Probes", "is required with OwnListener")
	}
	if c.Token != "" && c.Operator == nil {
		bad("Token", "needs an Operator")
	}
	return errors.Join(errs...)
}

// Server is the hub's operator HTTP: the admin API, the console it
// mounts, /metrics, and the admin listener that serves them.
type Server struct {
	cfg Config
	app *fiber.App // nil unless cfg.OwnListener
	// tokenSum is the SHA-256 of cfg.Token (authorized).
	tokenSum [sha256.Size]byte
	// actor is who the API's actions are recorded as: the token, by
	// its fingerprint.
	actor hub.Actor
}

// New builds a Server. With Config.OwnListener it builds the admin
// listener's app (Serve); otherwise Mount puts its routes on the webhook
// listener's.
func New(cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, tokenSum: sha256.Sum256([]byte(cfg.Token))}
	s.actor = hub.Actor{Kind: hub.ActorToken, Name: "token " + hex.EncodeToString(s.tokenSum[:4]), Role: "admin", Via: "admin-api"}
	if !cfg.OwnListener {
		return s, nil
	}
	s.app = fiber.New(fiber.Config{
		AppName: "hookhub admin",
		// Each request's limit is chosen from its headers before its body
		// is read (bodyLimit); this is the largest.
		BodyLimit:             MaxBodyBytes,
		DisableStartupMessage: true,
		ErrorHandler:          s.errorHandler,
		ReadTimeout:           readTimeout,
		// Long enough for a CPU profile or a replay's wait.
		WriteTimeout: 90 * time.Second,
		IdleTimeout:  120 * time.Second,
		// Forms and JSON are read as bytes by the handlers.
		DisablePreParseMultipartForm: true,
	})
	s.app.Server().HeaderReceived = s.bodyLimit
	hubhttp.AnswerUnreadable(s.app)
	s.app.Use(hubhttp.RecoverPanics(cfg.Logger))
	cfg.Probes(s.app)
	if cfg.Pprof {
		s.app.All("/debug/pprof/*", adaptor.HTTPHandler(pprofMux()))
	}
	s.Mount(s.app)
	return s, nil
}

// Mount registers /metrics and, with Config.Token, the admin API under
// /admin/ and the console under /console/ on app: the admin listener's
// (New does it), or the webhook listener's when there is no admin
// listener. An /admin/ request without the token whose announced body
// app refused unread is answered 401, as if the body had been read.
func (s *Server) Mount(app *fiber.App) {
	s.answerUnauthorizedUnread(app)
	app.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{})))
	if s.cfg.Token != "" {
		s.mountAPI(app)
		if s.cfg.Console != nil {
			s.cfg.Console.Mount(app)
		}
	}
}

// Serve accepts admin connections on ln, at most Config.MaxConns at once
// and a quarter of them from one remote address (shareDivisor), until
// Shutdown. It fails unless Config.OwnListener is set.
func (s *Server) Serve(ln net.Listener) error {
	if s.app == nil {
		return errors.New("admin: Serve needs Config.OwnListener")
	}
	return s.app.Listener(hubhttp.LimitListenerPerAddress(ln, s.cfg.MaxConns, s.cfg.MaxConns/shareDivisor,
		s.cfg.Metrics.AdminConnsRejected.Inc))
}

// Shutdown stops the admin listener, if any, and waits for its requests
// until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.app == nil {
		return nil
	}
	return s.app.ShutdownWithContext(ctx)
}

// App exposes the admin listener's fiber app, for tests; nil unless
// Config.OwnListener.
func (s *Server) App() *fiber.App { return s.app }

func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	status, msg := hubhttp.ErrorStatus(err)
	if status >= 500 {
		s.cfg.Logger.Error("request failed", "path", c.Path(), "err", err)
	}
	hubhttp.SetRetryAfter(c, status, err)
	return c.Status(status).JSON(hubhttp.ErrorBody{Error: msg})
}
