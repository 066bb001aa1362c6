// Package service wires the hub together: Postgres store, outbox relay,
// JetStream, HTTP server, and their startup and graceful shutdown. The
// hub binary (hub/cmd/hub) is a thin command line around it, and tests run
// it in-process against real Postgres and JetStream.
//
// Every component has one lifecycle, internal/startstop's Service. New
// builds them (and opens the connections and listeners) but starts no
// goroutine; Run starts them in order and, on shutdown, makes /readyz fail
// first and then stops them in reverse order within HUB_SHUTDOWN_TIMEOUT:
// the listeners (in-flight requests finish), the console's replay job,
// the periodic backfill, the group committer (commits what in-flight
// requests queued), the relay (drains the outbox), the stream keeper, the
// NATS connection, the embedded NATS server, the migrator, the database
// pool, and tracing last (so the drain's spans are flushed). The order is
// set in one place, New, and documented on Service.components.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/admin"
	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/console"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/server"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/migrate"
	"github.com/hookhub/hookhub/internal/natsembed"
	"github.com/hookhub/hookhub/internal/pgurl"
	"github.com/hookhub/hookhub/internal/startstop"
	"github.com/hookhub/hookhub/internal/tracing"
	"github.com/hookhub/hookhub/migrations"
)

// maxHeaderBytes is the room left for the hub's message headers when a
// body is checked against the NATS server's max_payload.
const maxHeaderBytes = relay.MaxHeaderBytes

// TracingServiceName is the hub's service.name unless OTEL_SERVICE_NAME
// says otherwise, and TracerName its tracer's instrumentation scope.
const (
	TracingServiceName = "hookhub-hub"
	TracerName         = "github.com/hookhub/hookhub/hub"
)

// ErrNoProviders is returned when no provider has a secret configured.
var ErrNoProviders = errors.New("no provider configured: set at least one of " + secretsVarList() + ", HUB_STANDARD_PROVIDERS")

// Deps are the service's injected dependencies. Zero values take defaults.
type Deps struct {
	Logger   *slog.Logger
	Now      func() time.Time
	Registry *prometheus.Registry
	// TracerProvider, when set, traces the hub whatever HUB_OTEL_ENABLED
	// says, and stays the caller's to shut down (tests pass one with a
	// span recorder). Nil: tracing.Setup builds one from the configuration.
	TracerProvider trace.TracerProvider
}

// Service is a running hub.
type Service struct {
	cfg      Config
	log      *slog.Logger
	pool     *pgxpool.Pool
	migrator *migrate.Migrator
	embedded *natsembed.Server
	nc       *nats.Conn
	js       jetstream.JetStream
	store    *store.Store
	batcher  *store.GroupCommitter // nil when HUB_BATCH_MAX is 1
	relay    *relay.Relay
	keeper   *relay.Keeper
	server   *server.Server
	admin    *admin.Server
	console  *console.Console // nil unless HUB_ADMIN_TOKEN is set
	ln       net.Listener
	adminLn  net.Listener // nil unless HUB_ADMIN_ADDR is set
	metrics  *metrics.Metrics
	names    []string
	now      func() time.Time
	// backfill runs every HUB_BACKFILL_INTERVAL over backfillSources; nil
	// when off.
	backfill        *backfill.Engine
	backfillSources []backfill.Source
	backfillLog     *slog.Logger // hides the API credentials (redact)
	// natsUp records that the NATS connection opened, and relayUp holds
	// the relay once New built it: nats.go calls its handlers from its own
	// goroutine, possibly before that (onNATSUp).
	natsUp  atomic.Bool
	relayUp atomic.Pointer[relay.Relay]

	// stopTracing flushes and stops the tracer provider the service
	// built; nil when Deps brought one.
	stopTracing func(context.Context) error

	// components are the service's components in start order, appended
	// by New as it builds them; Run starts them in this order and stops
	// them in reverse (and a New that fails stops those it built):
	//
	//	tracing          stopped last: the spans of the relay's drain are flushed
	//	database         the pool, closed once nothing uses it
	//	migrator         its connection (/readyz checks the schema)
	//	nats-embedded    the embedded server, without HUB_NATS_URL
	//	nats             the connection; closed after the relay drained
	//	stream keeper    checks the stream before the first publish, keeps it during the drain
	//	relay            stops and drains the outbox within the shutdown timeout
	//	group committer  commits what in-flight requests and the backfill queued
	//	backfill         the periodic backfill, ingesting through the committer
	//	audit sweep      marks the audit entries of stopped processes interrupted
	//	console          its replay job republishes through the relay
	//	http, admin http the listeners: stopped first, in-flight requests finish
	//
	// Before the listeners stop, Run makes /readyz fail (server.Drain).
	components []startstop.Named
	// serveErr is told when a listener stops serving before Stop.
	serveErr chan error
}

// New connects to Postgres and NATS (starting an embedded server when
// cfg.NATSURL is empty), checks that migrations are applied, and builds
// the components (the relay, the HTTP server...) without starting any. It
// listens on cfg.HTTPAddr but serves nothing until Run. When it fails, it
// closes what it opened.
func New(ctx context.Context, cfg Config, deps Deps) (_ *Service, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
		deps.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	s := &Service{cfg: cfg, log: deps.Logger, metrics: metrics.New(deps.Registry), now: deps.Now,
		serveErr: make(chan error, 2)}
	defer func() {
		if err != nil {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
			s.stop(ctx)
			cancel()
		}
	}()

	providers, err := cfg.Providers()
	if err != nil {
		return nil, err
	}
	if len(providers) == 0 {
		return nil, ErrNoProviders
	}
	for _, p := range providers {
		s.names = append(s.names, p.Name())
	}
	tracer, err := s.startTracing(ctx, deps.TracerProvider)
	if err != nil {
		return nil, err
	}

	if err := s.openDatabase(ctx); err != nil {
		return nil, err
	}
	if err := s.connectNATS(ctx); err != nil {
		return nil, err
	}
	s.store = store.New(s.pool)
	var ingester server.Ingester = s.store
	if cfg.BatchMax > 1 {
		s.batcher = s.store.GroupCommitter(cfg.BatchMax, cfg.BatchCommitters, cfg.CommitTimeout,
			store.OnCommit(func(n int) { s.metrics.CommitBatch.Observe(float64(n)) }), store.Linger(cfg.BatchLinger))
		ingester = s.batcher
	}
	if err := s.newRelay(tracer); err != nil {
		return nil, err
	}
	if s.batcher != nil {
		s.add("group committer", s.batcher)
	}
	if !cfg.Entities {
		ingester = withoutEntities{ingester}
	}
	if err := s.newBackfill(ingester); err != nil {
		return nil, err
	}
	if s.backfill != nil {
		s.add("backfill", &backfillRunner{s: s})
	}
	traffic := server.NewTraffic()
	byProvider := server.NewProviderTraffic(slices.Clone(s.names))
	operator, err := s.newConsole(traffic, byProvider)
	if err != nil {
		return nil, err
	}
	if err := s.newHTTP(providers, ingester, operator, traffic, byProvider, tracer, deps.Registry); err != nil {
		return nil, err
	}
	return s, nil
}

// startTracing sets up tracing (tp when given, else HUB_OTEL_*) and
// returns the hub's tracer: nil when tracing is off.
func (s *Service) startTracing(ctx context.Context, tp trace.TracerProvider) (trace.Tracer, error) {
	if tp == nil {
		var err error
		tp, s.stopTracing, err = tracing.Setup(ctx, tracing.Config{
			Enabled: s.cfg.OTelEnabled, ServiceName: TracingServiceName, Logger: s.log.With("component", "tracing"),
		})
		if err != nil {
			return nil, fmt.Errorf("tracing: %w", err)
		}
		s.add("tracing", closing(func(ctx context.Context) error {
			// Its own bound: the drain may have used up the shutdown's.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := s.stopTracing(ctx); err != nil {
				return fmt.Errorf("spans not flushed: %w", err)
			}
			return nil
		}))
	}
	return tracing.Tracer(tp, TracerName), nil // nil when off
}

// newRelay builds the relay (the outbox to JetStream) and the keeper of
// its stream.
func (s *Service) newRelay(tracer trace.Tracer) error {
	var outbox relay.Outbox = s.store
	if s.batcher != nil {
		outbox = markingOutbox{Store: s.store, batcher: s.batcher}
	}
	var err error
	s.relay, err = relay.New(outbox, s.js, relay.Config{
		Stream:          s.cfg.Stream,
		DuplicateWindow: s.cfg.DuplicateWindow,
		BatchSize:       s.cfg.RelayBatchSize,
		Logger:          s.log.With("component", "relay"),
		Metrics:         s.metrics,
		Now:             s.now,
		Tracer:          tracer,
		Workers:         s.cfg.RelayWorkers,
	})
	if err != nil {
		return err
	}
	s.relayUp.Store(s.relay)
	if s.natsUp.Load() {
		s.relay.NATSUp() // the connection opened before the relay existed
	}
	s.keeper, err = relay.NewKeeper(s.relay, s.js, s.store, relay.KeeperConfig{
		Stream: relay.StreamConfig{
			Name:            s.cfg.Stream,
			Providers:       s.names,
			Replicas:        s.cfg.StreamReplicas,
			DuplicateWindow: s.cfg.DuplicateWindow,
			MaxAge:          s.cfg.StreamMaxAge,
		},
		// Zero: relay.DefaultKeeperInterval (HUB_STREAM's description says
		// 2 s); only tests set another. A publish failing as if the stream
		// were gone checks it at once.
		Interval:     s.cfg.keeperInterval,
		MaxBodyBytes: s.cfg.MaxBodyBytes,
		Logger:       s.log.With("component", "stream"),
		Metrics:      s.metrics,
		Now:          s.now,
	})
	if err != nil {
		return err
	}
	s.add("stream keeper", s.keeper)
	s.add("relay", s.relay)
	return nil
}

// markingOutbox is the store as the relay's outbox, but for the publishes
// it records: they ride the group commit (GroupCommitter.RecordPublished).
type markingOutbox struct {
	*store.Store
	batcher *store.GroupCommitter
}

// RecordPublished records results through the group committer.
func (o markingOutbox) RecordPublished(ctx context.Context, results []hub.PublishResult) error {
	return o.batcher.RecordPublished(ctx, results)
}

// newConsole builds, when an admin token is set, the operations behind
// /admin/ and the web console; it returns nil (no operator) otherwise.
func (s *Service) newConsole(traffic *server.Traffic, byProvider *server.ProviderTraffic) (console.Operator, error) {
	if s.cfg.AdminToken == "" {
		return nil, nil
	}
	o := ops.New(ops.Config{Archive: s.store, Subscribers: s.pool, JetStream: s.js, Stream: s.cfg.Stream,
		Republisher: s.relay, Now: s.now, Logger: s.log.With("component", "ops"), Metrics: s.metrics,
		ReadBudget: ops.ReadBudgetOf(s.cfg.ReadMaxAtOnce, int64(s.cfg.ReadRowsPerSecond))})
	s.add("audit sweep", s.auditSweep(o))
	oidc := s.cfg.OIDC()
	if oidc.Issuer != "" {
		g := s.metrics.ConsoleOIDCDiscovered.WithLabelValues(oidc.Issuer)
		oidc.OnDiscovery = func(ok bool) {
			if ok {
				g.Set(1)
			} else {
				g.Set(0)
			}
		}
	}
	var err error
	s.console, err = console.New(console.Config{
		AdminToken:      s.cfg.AdminToken,
		ReadOnlyToken:   s.cfg.ConsoleReadOnlyToken,
		Operator:        o,
		Sessions:        s.store,
		OIDC:            oidc,
		StreamState:     func() string { st, _ := s.keeper.Status(); return st },
		Traffic:         traffic.Minutes,
		ProviderTraffic: byProvider.Series,
		Logger:          s.log.With("component", "console"),
		Now:             s.now,
	})
	if err != nil {
		return nil, err
	}
	s.add("console", s.console)
	return o, nil
}

// newHTTP builds the webhook server and the admin handler, and listens on
// their addresses.
func (s *Service) newHTTP(providers []provider.Provider, ingester server.Ingester, operator console.Operator,
	traffic *server.Traffic, byProvider *server.ProviderTraffic, tracer trace.Tracer, gatherer prometheus.Gatherer) error {
	var err error
	s.server, err = server.New(server.Config{
		Traffic:         traffic,
		ProviderTraffic: byProvider,
		Providers:       providers,
		Ingester:        ingester,
		MaxBodyBytes:    s.cfg.MaxBodyBytes,
		CommitTimeout:   s.cfg.CommitTimeout,
		Ready:           s.ready,
		StreamStatus: func() (string, bool) {
			return s.keeper.Status()
		},
		NATSStatus: func() string { return s.nc.Status().String() },
		// The NATS server's max_payload and the stream's max_msg_size, less
		// room for headers.
		MaxPublishBytes: func() int {
			return s.keeper.MaxPublishBytes(s.nc.MaxPayload())
		},
		Relay:   s.relay,
		Now:     s.now,
		Logger:  s.log.With("component", "http"),
		Metrics: s.metrics,
		Tracer:  tracer,

		MaxInflight: s.cfg.MaxInflight,
	})
	if err != nil {
		return err
	}
	s.admin, err = admin.New(admin.Config{
		Token:       s.cfg.AdminToken,
		Operator:    operator,
		Console:     s.console,
		Gatherer:    gatherer,
		Bodies:      s.server.Bodies(),
		OwnListener: s.cfg.AdminAddr != "",
		Probes:      s.server.Probes,
		Pprof:       s.cfg.AdminAddr != "",
		MaxConns:    s.cfg.AdminMaxConns,
		Metrics:     s.metrics,
		Logger:      s.log.With("component", "http"),
	})
	if err != nil {
		return err
	}
	if s.cfg.AdminAddr == "" {
		s.admin.Mount(s.server.App()) // /metrics and /admin/ on the webhook listener
	}
	ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("HUB_HTTP_ADDR %s: %w", s.cfg.HTTPAddr, err)
	}
	s.ln = server.LimitListener(ln, s.cfg.MaxConns, s.metrics.ConnsRejected.Inc)
	// Run has made /readyz fail before the listeners stop (server.Drain).
	s.add("http", &listener{ln: s.ln, serve: s.server.Serve, shutdown: s.server.Shutdown,
		failed: s.serveErr, what: "http server"})
	if s.cfg.AdminAddr != "" {
		if s.adminLn, err = net.Listen("tcp", s.cfg.AdminAddr); err != nil {
			return fmt.Errorf("HUB_ADMIN_ADDR %s: %w", s.cfg.AdminAddr, err)
		}
		s.add("admin http", &listener{ln: s.adminLn, serve: s.admin.Serve, shutdown: s.admin.Shutdown,
			failed: s.serveErr, what: "http server: admin listener"})
	}
	return nil
}

// add appends a component New built to s.components, in start order.
// auditSweep marks interrupted, as the hub starts, the audit entries a
// stopped process left running (a failure is logged; the first action
// tries again).
func (s *Service) auditSweep(o *ops.Ops) startstop.Service {
	return startstop.Func(func(ctx context.Context) error {
		if _, err := o.InterruptStaleAudit(ctx); err != nil {
			s.log.Warn("audit: cannot mark interrupted entries at start", "err", err)
		}
		return nil
	}, nil)
}

func (s *Service) add(name string, c startstop.Service) {
	s.components = append(s.components, startstop.Named{Name: name, Service: c})
}

func (s *Service) openDatabase(ctx context.Context) error {
	pcfg, err := pgxpool.ParseConfig(s.cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("HUB_DATABASE_URL: %w", err)
	}
	pcfg.MaxConns = s.cfg.DatabaseMaxConns
	if pcfg.PingTimeout == 0 { // unless pool_ping_timeout says otherwise
		// The pool pings a connection idle for over a second before handing
		// it out: one to a host that died (no RST) would hang that ping for
		// the caller's whole deadline, or for ever without one; bounded, the
		// pool drops the connection and opens another, to the new primary.
		pcfg.PingTimeout = 2 * time.Second
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("connect to database: %w", err)
	}
	s.add("database", closing(func(context.Context) error { s.pool.Close(); return nil }))
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.pool.Ping(pingCtx); err != nil {
		return fmt.Errorf("connect to database %s: %w", pgurl.Redact(s.cfg.DatabaseURL), err)
	}
	s.migrator, err = migrations.Hub(s.pool)
	if err != nil {
		return err
	}
	s.add("migrator", closing(func(context.Context) error { return s.migrator.Close() }))
	if err := s.migrator.Check(ctx); err != nil {
		if errors.Is(err, migrate.ErrPending) {
			return fmt.Errorf("%w; run `hub migrate up` first", err)
		}
		return err
	}
	return nil
}

func (s *Service) connectNATS(ctx context.Context) error {
	url := s.cfg.NATSURL
	if url == "" {
		srv, err := natsembed.Start(natsembed.Options{
			StoreDir: filepath.Join(s.cfg.DataDir, "nats"),
			Logger:   s.log.With("component", "nats-embedded"),
		})
		if err != nil {
			return fmt.Errorf("start embedded NATS (HUB_NATS_URL is empty): %w", err)
		}
		s.embedded = srv
		s.add("nats-embedded", closing(func(context.Context) error { srv.Shutdown(); return nil }))
		url = srv.ClientURL()
		s.log.Info("embedded JetStream server started", "url", url, "store", filepath.Join(s.cfg.DataDir, "nats"))
	}
	var err error
	s.nc, err = nats.Connect(url,
		nats.Name("hookhub"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.RetryOnFailedConnect(true),
		// No reconnect buffer: a publish while disconnected fails at once
		// instead of being sent minutes later; the outbox keeps the row.
		nats.ReconnectBufSize(-1),
		nats.ConnectHandler(s.onNATSUp),
		nats.ReconnectHandler(s.onNATSUp),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			s.metrics.NATSConnected.Set(0)
			if err != nil {
				s.log.Warn("NATS disconnected; deliveries are still accepted and queued in the outbox", "err", err)
			}
		}),
	)
	if err != nil {
		return fmt.Errorf("connect to NATS %s: %w", url, err)
	}
	s.add("nats", closing(func(context.Context) error { s.nc.Close(); return nil }))
	s.js, err = jetstream.New(s.nc,
		jetstream.WithPublishAsyncTimeout(10*time.Second),
		jetstream.WithPublishAsyncMaxPending(relay.MaxPending(s.cfg.RelayBatchSize, s.cfg.RelayWorkers)),
	)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if s.nc.IsConnected() {
		s.metrics.NATSConnected.Set(1)
		if m := int(s.nc.MaxPayload()) - maxHeaderBytes; m < s.cfg.MaxBodyBytes {
			s.log.Warn("HUB_MAX_BODY_BYTES exceeds what the NATS server accepts: larger deliveries are refused with 413; raise the server's max_payload",
				"max_body_bytes", s.cfg.MaxBodyBytes, "nats_max_payload", s.nc.MaxPayload())
		}
	}
	return nil
}

// onNATSUp runs (on a nats.go goroutine) when the connection (re)opens.
func (s *Service) onNATSUp(nc *nats.Conn) {
	s.metrics.NATSConnected.Set(1)
	s.log.Info("NATS connected", "url", nc.ConnectedUrlRedacted())
	s.natsUp.Store(true)
	if r := s.relayUp.Load(); r != nil {
		r.NATSUp() // non-blocking; makes the outbox's backlog due and wakes the keeper
	}
}

// ready is /readyz: the database answers and the schema is current. (The
// stream's part is server.Config.StreamStatus.) Its errors are logged, not
// shown: /readyz answers fixed words.
func (s *Service) ready(ctx context.Context) error {
	if err := s.store.Ping(ctx); err != nil {
		return err
	}
	if err := s.migrator.Check(ctx); err != nil {
		if errors.Is(err, migrate.ErrPending) {
			return fmt.Errorf("%w: %w", server.ErrMigrationsPending, err)
		}
		return fmt.Errorf("%w: %w", hub.ErrUnavailable, err)
	}
	return nil
}

// Providers are the names of the mounted providers, sorted.
func (s *Service) Providers() []string { return s.names }

// Addr is the webhook listener's address.
func (s *Service) Addr() net.Addr { return s.ln.Addr() }

// AdminAddr is the admin listener's address, or nil without
// HUB_ADMIN_ADDR.
func (s *Service) AdminAddr() net.Addr {
	if s.adminLn == nil {
		return nil
	}
	return s.adminLn.Addr()
}

// NATSURL is the URL of the NATS server in use (the embedded one's when
// the hub started it).
func (s *Service) NATSURL() string { return s.nc.ConnectedUrl() }

// Run starts the components in order (Service.components) and serves
// until ctx is cancelled or a listener fails, then shuts down gracefully:
// /readyz fails first, then the components stop in reverse order, all
// within cfg.ShutdownTimeout. It returns nil after a clean shutdown, and
// an error when a component failed to start (those started are stopped)
// or a listener failed.
func (s *Service) Run(ctx context.Context) error {
	// Start order and stop order: see Service.components.
	group := startstop.NewGroup(s.components...)
	if err := group.Start(ctx); err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
		defer cancel()
		s.stop(stopCtx) // what never started (listeners, connections)
		return err
	}
	if s.adminLn != nil {
		s.log.Info("admin listener: /admin/, /metrics, /debug/pprof/", "addr", s.adminLn.Addr().String())
	}
	s.log.Info("hub listening", "addr", s.ln.Addr().String(), "providers", s.names, "stream", s.cfg.Stream)

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-s.serveErr:
		runErr = err
	}
	s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout)
	s.server.Drain() // /readyz fails before anything stops
	shutCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	s.logStopErrors(group.Stop(shutCtx))
	s.stop(shutCtx)
	s.log.Info("hub stopped")
	return runErr
}

// stop stops every component in reverse order, started or not (Stop is
// idempotent and safe when never started), logging each error.
func (s *Service) stop(ctx context.Context) {
	for i := len(s.components) - 1; i >= 0; i-- {
		c := s.components[i]
		if err := c.Service.Stop(ctx); err != nil {
			s.logStopErrors(fmt.Errorf("stop %s: %w", c.Name, err))
		}
	}
}

// logStopErrors logs each of the named errors of startstop.Group.Stop.
func (s *Service) logStopErrors(err error) {
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		s.log.Warn("shutdown incomplete", "err", e)
	}
}
