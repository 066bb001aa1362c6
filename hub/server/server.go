package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubhttp"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/provider"
)

// Ingester commits verified deliveries: the store, or a group committer in
// front of it. The server commits through hub.Ingest, which hands what is
// publishable to Config.Relay.
type Ingester interface {
	Ingest(ctx context.Context, ds []hub.Delivery) ([]hub.Outcome, error)
}

// Defaults applied by Config.WithDefaults to zero fields.
const (
	DefaultMaxBodyBytes  = hub.DefaultMaxBodyBytes
	DefaultCommitTimeout = 10 * time.Second
	DefaultMaxInflight   = 128
)

// Config configures a Server. Zero fields take the defaults
// (WithDefaults).
type Config struct {
	Providers    []provider.Provider // required
	Ingester     Ingester            // required
	MaxBodyBytes int                 // default DefaultMaxBodyBytes
	// CommitTimeout bounds the wait for the database; past it the answer is
	// 503. Default DefaultCommitTimeout.
	CommitTimeout time.Duration
	// Ready reports whether the hub can accept deliveries (database
	// reachable, migrations current). Required. /readyz never shows its
	// error, which may name hosts, users or databases: it answers
	// "migrations pending" when the error wraps ErrMigrationsPending,
	// "database unavailable" otherwise, and logs the error (at most every
	// 30s).
	Ready func(ctx context.Context) error
	// StreamStatus reports the JetStream stream's state for /readyz
	// ("ok", "missing", "restoring", ...) and whether the hub is ready in
	// it. Optional.
	StreamStatus func() (state string, ready bool)
	// NATSStatus describes the NATS connection for /readyz. Optional.
	NATSStatus func() string
	// MaxPublishBytes reports the largest body the stream can take (the
	// NATS server's max_payload and the stream's max_msg_size, less room
	// for headers), or 0 when unknown.
	// A larger body is refused with 413 before it is archived: committed,
	// it could never be published. Optional.
	MaxPublishBytes func() int
	// Relay takes each delivery committed PENDING (a first delivery that
	// can be published) for publishing: hub/relay's Relay, whose fast
	// path publishes it at once (hub.Ingest). Optional: without it the
	// claiming relay publishes it from the outbox.
	Relay   hub.Enqueuer
	Now     func() time.Time // default time.Now
	Logger  *slog.Logger
	Metrics *metrics.Metrics // required
	// Traffic counts the webhook answers per minute for the console's
	// chart; nil: the server keeps its own (Server.Traffic).
	Traffic *Traffic
	// ProviderTraffic counts the webhook answers per provider and minute,
	// with their latency, for the console's charts; nil: the server keeps
	// its own for its Providers (Server.ProviderTraffic).
	ProviderTraffic *ProviderTraffic
	// Tracer, when set, traces each delivery (a server span, the parent
	// of the publish's) and archives the span's traceparent with the event;
	// nil leaves tracing off at no cost.
	Tracer trace.Tracer
	// MaxInflight bounds the webhook requests verified and committed at
	// once, and MaxInflight × MaxBodyBytes the memory of the request
	// bodies being received and handled; past either, a request is
	// answered 503 with Retry-After (see limits.go). Default
	// DefaultMaxInflight.
	MaxInflight int
}

// WithDefaults returns a copy of c with every zero field that has a
// default set to it. New calls it, then Validate.
func (c Config) WithDefaults() Config {
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes)
	c.CommitTimeout = cmp.Or(c.CommitTimeout, DefaultCommitTimeout)
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.NATSStatus == nil {
		c.NATSStatus = func() string { return "unknown" }
	}
	c.MaxInflight = cmp.Or(c.MaxInflight, DefaultMaxInflight)
	if c.Traffic == nil {
		c.Traffic = NewTraffic()
	}
	if c.ProviderTraffic == nil {
		names := make([]string, 0, len(c.Providers))
		for _, p := range c.Providers {
			if p != nil {
				names = append(names, p.Name())
			}
		}
		c.ProviderTraffic = NewProviderTraffic(names)
	}
	return c
}

// Validate checks c as it is (a zero field that has a default fails until
// WithDefaults fills it in) and names every field at fault.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("server: %s %s", field, fmt.Sprintf(format, args...)))
	}
	if len(c.Providers) == 0 {
		bad("Providers", "is required")
	}
	for _, f := range []struct {
		name    string
		missing bool
	}{
		{"Ingester", c.Ingester == nil}, {"Ready", c.Ready == nil}, {"Metrics", c.Metrics == nil},
		{"Now", c.Now == nil}, {"Logger", c.Logger == nil},
		{"NATSStatus", c.NATSStatus == nil}, {"Traffic", c.Traffic == nil},
		{"ProviderTraffic", c.ProviderTraffic == nil},
	} {
		if f.missing {
			bad(f.name, "is required")
		}
	}
	if c.MaxBodyBytes < 1 {
		bad("MaxBodyBytes", "must be at least 1, got %d", c.MaxBodyBytes)
	}
	if c.CommitTimeout <= 0 {
		bad("CommitTimeout", "must be positive, got %s", c.CommitTimeout)
	}
	if c.MaxInflight < 1 {
		bad("MaxInflight", "must be at least 1, got %d", c.MaxInflight)
	}
	return errors.Join(errs...)
}

// Server is the hub's webhook listener.
type Server struct {
	cfg       Config
	ingest    *hub.Ingest // commits, and hands publishable deliveries to cfg.Relay
	app       *fiber.App
	providers map[string]provider.Provider
	draining  atomic.Bool
	inflight  *inflight
	bodies    budget
	traffic   *Traffic
	byProv    *ProviderTraffic
	// notReadyLogged is when /readyz last logged why the hub is not ready
	// (unix nanoseconds).
	notReadyLogged atomic.Int64
}

// New builds a Server.
func New(cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, ingest: hub.NewIngest(cfg.Ingester, cfg.Relay), providers: make(map[string]provider.Provider, len(cfg.Providers)), inflight: newInflight(cfg.MaxInflight), traffic: cfg.Traffic, byProv: cfg.ProviderTraffic,
		bodies: budget{hubhttp.NewBudget(int64(cfg.MaxInflight)*int64(cfg.MaxBodyBytes), cfg.Metrics.BodyBytes)}}
	for _, p := range cfg.Providers {
		s.providers[p.Name()] = p
	}
	s.app = fiber.New(fiber.Config{
		AppName:               "hookhub",
		BodyLimit:             cfg.MaxBodyBytes,
		DisableStartupMessage: true,
		ErrorHandler:          s.errorHandler,
		// A whole request, headers and body, must arrive within
		// ReadTimeout: a provider sends a webhook in well under a second,
		// and a slow sender holds an in-flight slot for at most this long.
		ReadTimeout:  readTimeout,
		WriteTimeout: 30 * time.Second,
		IdleTimeout:  120 * time.Second,
		// The webhook handler reads bodies itself, after the checks that
		// need no body and only within MaxInflight (see limits.go).
		StreamRequestBody: true,
		// A multipart body is bytes to verify, not a form to parse (and
		// spool to temporary files) before the handler runs.
		DisablePreParseMultipartForm: true,
	})
	hubhttp.AnswerUnreadable(s.app)
	s.app.Use(hubhttp.RecoverPanics(cfg.Logger)) // first: a panic anywhere below is a 500, never a crash
	s.app.Use(hubhttp.CloseUnread)
	webhook := s.webhook
	if cfg.Tracer != nil {
		webhook = s.tracedWebhook
	}
	s.app.All("/webhooks/:provider", s.counted(webhook))
	s.Probes(s.app)
	return s, nil
}

// Serve accepts webhook connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.app.Listener(ln) }

// Drain makes /readyz fail, so load balancers stop sending new requests,
// while the server keeps serving.
func (s *Server) Drain() { s.draining.Store(true) }

// Shutdown drains, stops accepting connections, and waits for in-flight
// requests until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.Drain()
	return s.app.ShutdownWithContext(ctx)
}

// Probes registers /healthz and /readyz on r: the webhook listener's, and
// the admin listener's (hub/admin) too.
func (s *Server) Probes(r fiber.Router) {
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
}

// Bodies is the webhook listener's memory budget for request bodies
// (MaxInflight × MaxBodyBytes, see limits.go); the admin API reads its
// bodies within it too.
func (s *Server) Bodies() *hubhttp.Budget { return s.bodies.Budget }

// Traffic is the per-minute count of webhook answers.
func (s *Server) Traffic() *Traffic { return s.traffic }

// ProviderTraffic is the per-provider count of webhook answers, with
// their latency.
func (s *Server) ProviderTraffic() *ProviderTraffic { return s.byProv }

// App is the webhook listener's fiber app: for tests (app.Test), and for
// hub/admin to mount its routes on when it has no listener of its own.
func (s *Server) App() *fiber.App { return s.app }

type answer struct {
	EventID    string `json:"event_id"`
	Idempotent bool   `json:"idempotent"`
}

// fiberHeader adapts a request's headers to provider.Header.
type fiberHeader struct{ c *fiber.Ctx }

// Get copies the value: fiber's strings alias fasthttp's buffers, which
// are reused once the handler returns.
func (h fiberHeader) Get(name string) string { return utils.CopyString(h.c.Get(name)) }

func (s *Server) webhook(c *fiber.Ctx) error {
	start := time.Now()
	p, ok := s.providers[c.Params("provider")]
	if !ok {
		return s.refuse(c, "", fmt.Errorf("%w %q", errUnknownProvider, c.Params("provider")), start)
	}
	name := p.Name() // not c.Params: its memory is reused after the request
	if c.Method() != fiber.MethodPost {
		c.Set(fiber.HeaderAllow, fiber.MethodPost)
		return s.refuse(c, name, errMethod, start)
	}
	if enc := c.Get(fiber.HeaderContentEncoding); enc != "" && !strings.EqualFold(enc, "identity") {
		return s.refuse(c, name, errEncoding, start)
	}
	limit := s.cfg.MaxBodyBytes
	if lp := s.maxPublish(); lp > 0 && lp < limit {
		limit = lp
	}
	if cl := c.Request().Header.ContentLength(); cl > limit {
		return s.refuse(c, name, s.tooLarge(cl, limit), start)
	}
	// The raw bytes as received (c.Body() would decompress), within the
	// body budget; then a slot among MaxInflight for the verification and
	// the commit.
	body, reserved, err := readBody(c, limit, s.bodies)
	defer s.bodies.release(reserved)
	if errors.Is(err, errTooLarge) {
		return s.refuse(c, name, s.tooLarge(-1, limit), start)
	}
	if err != nil {
		return s.refuse(c, name, err, start)
	}
	if !s.inflight.tryAcquire() {
		return s.refuse(c, name, errOverloaded, start)
	}
	defer s.inflight.release()
	now := s.cfg.Now()
	// The request-target exactly as received, for schemes that sign the
	// URL (copied: fasthttp reuses its buffer).
	ev, err := provider.VerifyDelivery(p, provider.Request{Header: fiberHeader{c}, Body: body, URI: utils.CopyString(c.OriginalURL()), Now: now})
	if err != nil {
		s.cfg.Logger.Info("delivery refused", "provider", name, "err", err, "remote", utils.CopyString(c.IP()))
		return s.refuse(c, name, err, start)
	}
	s.traceEvent(c, ev.ID, ev.Type)
	d, err := hub.NewDelivery(hub.OriginWebhook, name, ev, body, now)
	if err != nil {
		return err
	}
	d.TraceParent = s.traceParent(c)
	if pl, ok := p.(provider.Payloader); ok {
		if d.Payload, err = pl.PayloadJSON(body); err != nil {
			return s.refuse(c, name, err, start)
		}
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), s.cfg.CommitTimeout)
	defer cancel()
	// Committed, a publishable delivery is in the relay's hands.
	outs, err := s.ingest.Ingest(ctx, []hub.Delivery{d})
	if err != nil {
		s.cfg.Logger.Error("delivery not committed", "provider", name, "event_id", ev.ID, "err", err)
		return s.refuse(c, name, err, start)
	}
	out := outs[0]
	outcome := metrics.OutcomeAccepted
	switch {
	case out.Duplicate:
		outcome = metrics.OutcomeDuplicate
	case out.Status == hub.Failed:
		outcome = metrics.OutcomeUnpublishable
		s.cfg.Logger.Warn("event archived FAILED", "provider", name, "event_id", ev.ID, "reason", d.Error)
	}
	s.observe(name, outcome, start)
	s.traceOutcome(c, outcome)
	return writeAnswer(c, answer{EventID: ev.ID, Idempotent: out.Duplicate})
}

// writeAnswer writes what c.JSON(a) writes, without reflection when the
// event id needs no escaping (the common case, on the hot path).
func writeAnswer(c *fiber.Ctx, a answer) error {
	for i := 0; i < len(a.EventID); i++ {
		if ch := a.EventID[i]; ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\' || ch == '<' || ch == '>' || ch == '&' {
			return c.JSON(a)
		}
	}
	return c.Type("json").Send(a.appendJSON(make([]byte, 0, 64+len(a.EventID))))
}

// appendJSON appends a as JSON; a.EventID must need no escaping.
func (a answer) appendJSON(b []byte) []byte {
	b = append(b, `{"event_id":"`...)
	b = append(b, a.EventID...)
	b = append(b, `","idempotent":`...)
	b = strconv.AppendBool(b, a.Idempotent)
	return append(b, '}')
}

// tooLarge describes a body over limit (size -1: not announced).
func (s *Server) tooLarge(size, limit int) error {
	if lp := s.maxPublish(); lp > 0 && lp == limit && lp < s.cfg.MaxBodyBytes {
		return fmt.Errorf("%w: the stream accepts bodies up to %d bytes", errTooLarge, limit)
	}
	if size < 0 {
		return fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
	}
	return fmt.Errorf("%w: %d bytes, the limit is %d", errTooLarge, size, limit)
}

func (s *Server) maxPublish() int {
	if s.cfg.MaxPublishBytes == nil {
		return 0
	}
	return s.cfg.MaxPublishBytes()
}

func (s *Server) refuse(c *fiber.Ctx, providerName string, err error, start time.Time) error {
	p := classify(err)
	if p.outcome != "" && providerName != "" {
		s.observe(providerName, p.outcome, start)
	}
	s.traceRefusal(c, p)
	if p.status == fiber.StatusServiceUnavailable {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retryAfterSeconds))
	}
	return c.Status(p.status).JSON(hubhttp.ErrorBody{Error: p.message})
}

func (s *Server) observe(providerName, outcome string, start time.Time) {
	s.cfg.Metrics.Deliveries.WithLabelValues(providerName, outcome).Inc()
	s.cfg.Metrics.IngestSeconds.WithLabelValues(providerName, outcome).Observe(time.Since(start).Seconds())
}

func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	p := classify(err)
	if p.status >= 500 {
		s.cfg.Logger.Error("request failed", "path", c.Path(), "err", err)
	}
	return c.Status(p.status).JSON(hubhttp.ErrorBody{Error: p.message})
}

func (s *Server) healthz(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

// ErrMigrationsPending, wrapped by Config.Ready's error, makes /readyz say
// "migrations pending" rather than "database unavailable".
var ErrMigrationsPending = errors.New("migrations pending")

// readyz answers 200 when the hub can take traffic: not draining, the
// database answers with the schema current, and the stream is usable
// (StreamStatus). Its texts are fixed; the causes go to the log.
func (s *Server) readyz(c *fiber.Ctx) error {
	nats := s.cfg.NATSStatus()
	stream, streamReady := "unknown", true
	if s.cfg.StreamStatus != nil {
		stream, streamReady = s.cfg.StreamStatus()
	}
	if s.draining.Load() {
		return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{"status": "draining", "nats": nats, "stream": stream})
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	if err := s.cfg.Ready(ctx); err != nil {
		body := fiber.Map{"status": "not ready", "error": "database unavailable", "database": "unavailable", "nats": nats, "stream": stream}
		if errors.Is(err, ErrMigrationsPending) {
			body["error"], body["database"], body["migrations"] = "migrations pending", "ok", "pending"
		}
		if last := s.notReadyLogged.Load(); time.Since(time.Unix(0, last)) > 30*time.Second &&
			s.notReadyLogged.CompareAndSwap(last, time.Now().UnixNano()) {
			s.cfg.Logger.Warn("not ready", "reason", body["error"], "err", err)
		}
		return c.Status(fiber.StatusServiceUnavailable).JSON(body)
	}
	if !streamReady {
		return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{"status": "not ready", "error": "stream " + stream,
			"database": "ok", "migrations": "current", "nats": nats, "stream": stream})
	}
	return c.JSON(fiber.Map{"status": "ready", "database": "ok", "migrations": "current", "nats": nats, "stream": stream})
}
