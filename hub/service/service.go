// Package service wires the hub together: Postgres store, outbox relay,
// JetStream, HTTP server, and their startup and graceful shutdown. The
// hub binary (hub/cmd/hub) is a thin command line around it, and tests run
// it in-process against real Postgres and JetStream.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
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
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/server"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/migrate"
	"github.com/hookhub/hookhub/internal/natsembed"
	"github.com/hookhub/hookhub/internal/pgurl"
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
	// natsUp receives a value whenever the NATS connection (re)opens; Run
	// hands it to the relay. A channel, because nats.go calls its handlers
	// from its own goroutine, possibly before New has returned.
	natsUp chan struct{}

	// stopTracing flushes and stops the tracer provider the service
	// built; nil when Deps brought one.
	stopTracing func(context.Context) error
}

// New connects to Postgres and NATS (starting an embedded server when
// cfg.NATSURL is empty), checks that migrations are applied, and builds
// the relay and the HTTP server. It listens on cfg.HTTPAddr but serves
// nothing until Run.
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
	s := &Service{cfg: cfg, log: deps.Logger, metrics: metrics.New(deps.Registry), natsUp: make(chan struct{}, 1), now: deps.Now}
	defer func() {
		if err != nil {
			s.close()
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
	tp := deps.TracerProvider
	if tp == nil {
		tp, s.stopTracing, err = tracing.Setup(ctx, tracing.Config{
			Enabled: cfg.OTelEnabled, ServiceName: TracingServiceName, Logger: s.log.With("component", "tracing"),
		})
		if err != nil {
			return nil, fmt.Errorf("tracing: %w", err)
		}
	}
	tracer := tracing.Tracer(tp, TracerName) // nil when off

	if err := s.openDatabase(ctx); err != nil {
		return nil, err
	}
	if err := s.connectNATS(ctx); err != nil {
		return nil, err
	}
	s.store = store.New(s.pool)
	s.relay, err = relay.New(s.store, s.js, relay.Config{
		Stream:          cfg.Stream,
		DuplicateWindow: cfg.DuplicateWindow,
		BatchSize:       cfg.RelayBatchSize,
		Logger:          s.log.With("component", "relay"),
		Metrics:         s.metrics,
		Now:             deps.Now,
		Tracer:          tracer,
		Workers:         cfg.RelayWorkers,
	})
	if err != nil {
		return nil, err
	}
	s.keeper, err = relay.NewKeeper(s.relay, s.js, s.store, relay.KeeperConfig{
		Stream: relay.StreamConfig{
			Name:            cfg.Stream,
			Providers:       s.names,
			Replicas:        cfg.StreamReplicas,
			DuplicateWindow: cfg.DuplicateWindow,
			MaxAge:          cfg.StreamMaxAge,
		},
		// Interval: relay.DefaultKeeperInterval (HUB_STREAM's description
		// says 2 s); a publish failing as if the stream were gone checks it
		// at once.
		MaxBodyBytes: cfg.MaxBodyBytes,
		Logger:       s.log.With("component", "stream"),
		Metrics:      s.metrics,
		Now:          deps.Now,
	})
	if err != nil {
		return nil, err
	}
	var ingester server.Ingester = s.store
	if cfg.BatchMax > 1 {
		s.batcher = s.store.GroupCommitter(cfg.BatchMax, cfg.BatchCommitters, cfg.CommitTimeout,
			store.OnCommit(func(n int) { s.metrics.CommitBatch.Observe(float64(n)) }))
		ingester = s.batcher
	}
	if err := s.newBackfill(ingester); err != nil {
		return nil, err
	}
	var operator console.Operator
	traffic := server.NewTraffic()
	if cfg.AdminToken != "" {
		o := ops.New(ops.Config{Archive: s.store, Subscribers: s.pool, JetStream: s.js, Stream: cfg.Stream,
			Republisher: s.relay, Now: deps.Now})
		operator = o
		s.console, err = console.New(console.Config{
			AdminToken:    cfg.AdminToken,
			ReadOnlyToken: cfg.ConsoleReadOnlyToken,
			Operator:      o,
			StreamState:   func() string { st, _ := s.keeper.Status(); return st },
			Traffic:       traffic.Minutes,
			Logger:        s.log.With("component", "console"),
			Now:           deps.Now,
		})
		if err != nil {
			return nil, err
		}
	}
	s.server, err = server.New(server.Config{
		Traffic:       traffic,
		Providers:     providers,
		Ingester:      ingester,
		MaxBodyBytes:  cfg.MaxBodyBytes,
		CommitTimeout: cfg.CommitTimeout,
		Ready:         s.ready,
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
		Now:     deps.Now,
		Logger:  s.log.With("component", "http"),
		Metrics: s.metrics,
		Tracer:  tracer,

		MaxInflight: cfg.MaxInflight,
	})
	if err != nil {
		return nil, err
	}
	s.admin, err = admin.New(admin.Config{
		Token:       cfg.AdminToken,
		Operator:    operator,
		Console:     s.console,
		Gatherer:    deps.Registry,
		Bodies:      s.server.Bodies(),
		OwnListener: cfg.AdminAddr != "",
		Probes:      s.server.Probes,
		Pprof:       cfg.AdminAddr != "",
		MaxConns:    cfg.AdminMaxConns,
		Metrics:     s.metrics,
		Logger:      s.log.With("component", "http"),
	})
	if err != nil {
		return nil, err
	}
	if cfg.AdminAddr == "" {
		s.admin.Mount(s.server.App()) // /metrics and /admin/ on the webhook listener
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("HUB_HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	s.ln = server.LimitListener(ln, cfg.MaxConns, s.metrics.ConnsRejected.Inc)
	if cfg.AdminAddr != "" {
		if s.adminLn, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
			return nil, fmt.Errorf("HUB_ADMIN_ADDR %s: %w", cfg.AdminAddr, err)
		}
	}
	return s, nil
}

func (s *Service) openDatabase(ctx context.Context) error {
	pcfg, err := pgxpool.ParseConfig(s.cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("HUB_DATABASE_URL: %w", err)
	}
	pcfg.MaxConns = s.cfg.DatabaseMaxConns
	s.pool, err = pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("connect to database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.pool.Ping(pingCtx); err != nil {
		return fmt.Errorf("connect to database %s: %w", pgurl.Redact(s.cfg.DatabaseURL), err)
	}
	s.migrator, err = migrations.Hub(s.pool)
	if err != nil {
		return err
	}
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
	select {
	case s.natsUp <- struct{}{}:
	default:
	}
}

// relayOnReconnect tells the relay whenever NATS comes back
// (relay.NATSUp), so what piled up during an outage drains at once.
func (s *Service) relayOnReconnect(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.natsUp:
			s.relay.NATSUp()
		}
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

// Run serves until ctx is cancelled, then shuts down gracefully: /readyz
// fails first, the listener closes, in-flight requests finish, the relay
// drains, all within cfg.ShutdownTimeout. It returns nil after a clean
// shutdown.
func (s *Service) Run(ctx context.Context) error {
	defer s.close()
	relayCtx, stopRelay := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRelay()
	// The stream should exist before the first publish; if NATS is not
	// reachable yet, the keeper keeps trying in the background while the
	// hub serves (and, from then on, recreates the stream if it is lost).
	if err := s.keeper.Start(ctx); err != nil {
		return fmt.Errorf("start stream keeper: %w", err)
	}
	if err := s.relay.Start(ctx); err != nil {
		_ = s.keeper.Stop(ctx)
		return fmt.Errorf("start relay: %w", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.relayOnReconnect(relayCtx) })

	serveErr := make(chan error, 2)
	go func() { serveErr <- s.server.Serve(s.ln) }()
	if s.adminLn != nil {
		go func() {
			if err := s.admin.Serve(s.adminLn); err != nil {
				serveErr <- fmt.Errorf("admin listener: %w", err)
			}
		}()
		s.log.Info("admin listener: /admin/, /metrics, /debug/pprof/", "addr", s.adminLn.Addr().String())
	}
	s.log.Info("hub listening", "addr", s.ln.Addr().String(), "providers", s.names, "stream", s.cfg.Stream)
	// The periodic backfill stops with the listener, before the group
	// committer it ingests through is closed.
	backfillCtx, stopBackfill := context.WithCancel(ctx)
	defer stopBackfill()
	var backfillDone sync.WaitGroup
	if s.backfill != nil {
		s.log.Info("periodic backfill", "providers", providerNames(s.backfillSources), "interval", s.cfg.BackfillInterval, "window", s.cfg.BackfillWindow)
		backfillDone.Go(func() { s.runBackfill(backfillCtx) })
	}

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		runErr = fmt.Errorf("http server: %w", err)
	}
	s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout)
	shutCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := errors.Join(s.server.Shutdown(shutCtx), s.admin.Shutdown(shutCtx)); err != nil {
		s.log.Warn("http shutdown incomplete", "err", err)
	}
	if s.console != nil {
		s.console.Close() // stops a replay job
	}
	stopBackfill()
	backfillDone.Wait()
	if s.batcher != nil {
		s.batcher.Close() // commits what in-flight requests queued
	}
	stopRelay()
	wg.Wait()
	if err := s.keeper.Stop(shutCtx); err != nil {
		s.log.Warn("stream keeper stop", "err", err)
	}
	if err := s.relay.Stop(shutCtx); err != nil {
		s.log.Warn("relay drain incomplete; rows stay PENDING and are published after restart", "err", err)
	}
	s.log.Info("hub stopped")
	return runErr
}

func (s *Service) close() {
	if s.console != nil {
		s.console.Close()
	}
	if s.batcher != nil {
		s.batcher.Close()
	}
	if s.ln != nil {
		_ = s.ln.Close()
	}
	if s.adminLn != nil {
		_ = s.adminLn.Close()
	}
	if s.nc != nil {
		s.nc.Close()
	}
	if s.embedded != nil {
		s.embedded.Shutdown()
	}
	if s.migrator != nil {
		_ = s.migrator.Close()
	}
	if s.pool != nil {
		s.pool.Close()
	}
	if s.stopTracing != nil {
		// Last: the spans of the relay's drain are flushed too.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.stopTracing(ctx); err != nil {
			s.log.Warn("tracing: spans not flushed", "err", err)
		}
		cancel()
	}
}
