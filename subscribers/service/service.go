// Package service runs a subscriber service as a process: configuration
// from the environment (envconfig, one prefix per service), logging,
// Postgres and NATS connections, the metrics/health HTTP server, signal
// handling and the exit code. The credits, email and downgrade commands
// are each a Program and a three-line main.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/kelseyhightower/envconfig"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/internal/backoff"
	"github.com/hookhub/hookhub/internal/logging"
	"github.com/hookhub/hookhub/internal/tracing"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Process is the configuration every hookhub subscriber process has: its
// connections, shutdown and logs. Common embeds it; the destinations
// process, which runs many subscribers, embeds it alone. Variable names
// come from the field names (split_words), never from an unprefixed
// fallback: envconfig would read a bare DATABASE_URL for a field tagged
// envconfig:"DATABASE_URL".
type Process struct {
	DatabaseURL     string        `split_words:"true" default:"postgres://postgres@127.0.0.1:5432/hub?sslmode=disable" desc:"Postgres URL; the service's tables live in its own schema of this database (the hub's, by default)"`
	NatsURL         string        `split_words:"true" default:"nats://127.0.0.1:4222" desc:"NATS server URL(s), comma-separated"`
	Stream          string        `default:"WEBHOOKS" desc:"JetStream stream the hub publishes to"`
	ShutdownTimeout time.Duration `split_words:"true" default:"25s" desc:"On SIGTERM, time allowed for in-flight messages to finish and be acked"`
	LogLevel        string        `split_words:"true" default:"info" desc:"debug, info, warn or error"`
	LogFormat       string        `split_words:"true" default:"json" desc:"json or text"`
	OtelEnabled     bool          `split_words:"true" default:"false" desc:"OpenTelemetry tracing: a span per message continuing the hub's trace, exported with OTLP over HTTP as the standard OTEL_* variables say (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_SAMPLER, ...); the service name defaults to the subscriber's"`
}

// Common is the configuration every subscriber service has: the process's
// and the subscriber library's. A service embeds it in its own
// configuration struct, next to its HTTP address and its own variables.
type Common struct {
	Process
	DatabaseMaxConns int32         `split_words:"true" default:"8" desc:"Postgres connection pool size (at least CONCURRENCY + 2)"`
	Concurrency      int           `default:"4" desc:"Messages handled at once"`
	MaxDeliver       int           `split_words:"true" default:"5" desc:"Attempts before a failing message is dead-lettered"`
	AckWait          time.Duration `split_words:"true" default:"30s" desc:"JetStream redelivers a message not acked within this time (InProgress is sent every third of it while a handler runs)"`
	MaxAckPending    int           `split_words:"true" default:"256" desc:"Messages delivered and not yet acked, across all replicas"`
}

// Program describes one subscriber service.
type Program struct {
	// Name is the subscriber's name (consumer and schema); the environment
	// prefix is its upper case.
	Name string
	// Config points to the service's configuration struct, which embeds
	// Common; Common and HTTPAddr point into it.
	Config   any
	Common   *Common
	HTTPAddr *string
	// Validate checks the service's own variables (optional).
	Validate func() error
	// Migrations are the service's own migrations.
	Migrations fs.FS
	// Setup registers the handlers, background tasks and HTTP routes.
	Setup func(ctx context.Context, d Deps) error
}

// New is the Program of the service name: its configuration struct cfg,
// which embeds *common and holds the service's HTTP address at httpAddr,
// and its own migrations. Validate and Setup are the service's to set.
func New(name string, cfg any, common *Common, httpAddr *string, migrations fs.FS) Program {
	return Program{Name: name, Config: cfg, Common: common, HTTPAddr: httpAddr, Migrations: migrations}
}

// Deps is what a Program's Setup gets.
type Deps struct {
	Pool       *pgxpool.Pool
	Subscriber *subscriber.Subscriber
	Mux        *http.ServeMux
	Registry   *prometheus.Registry
	Logger     *slog.Logger
}

// Prefix is the program's environment variable prefix.
func (p Program) Prefix() string { return strings.ToUpper(p.Name) }

// PrintEnv prints a table of the program's variables with their defaults.
func (p Program) PrintEnv(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  VARIABLE\tDEFAULT\tDESCRIPTION")
	_ = envconfig.Usagef(p.Prefix(), p.Config, tw,
		"{{range .}}  {{usage_key .}}\t{{usage_default .}}\t{{usage_description .}}\n{{end}}")
	_ = tw.Flush()
}

// Load reads the program's variables and validates them.
func (p Program) Load() error {
	if err := envconfig.Process(p.Prefix(), p.Config); err != nil {
		return err
	}
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s_%s %s", p.Prefix(), name, fmt.Sprintf(format, args...)))
	}
	c := p.Common
	if err := c.Process.Validate(p.Prefix()); err != nil {
		errs = append(errs, err)
	}
	// The subscriber library's settings follow its rules (Config.Validate),
	// each error naming the variable. Its other fields (Name, Pool,
	// JetStream) are no variables: run sets them and subscriber.New checks
	// them.
	vars := p.libraryVars()
	for _, fe := range subscriber.InvalidFields(p.subscriberConfig().Validate()) {
		if v, ok := vars[fe.Field]; ok {
			errs = append(errs, fmt.Errorf("%s %s", v, fe.Reason))
		}
	}
	if c.DatabaseMaxConns < int32(min(c.Concurrency, subscriber.MaxConcurrency))+2 {
		bad("DATABASE_MAX_CONNS", "must be at least CONCURRENCY + 2 (%d), got %d", c.Concurrency+2, c.DatabaseMaxConns)
	}
	if *p.HTTPAddr == "" {
		bad("HTTP_ADDR", "must not be empty")
	}
	if p.Validate != nil {
		if err := p.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Validate checks the process variables, each error naming its variable
// (<prefix>_DATABASE_URL ...).
func (c Process) Validate(prefix string) error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s_%s %s", prefix, name, fmt.Sprintf(format, args...)))
	}
	if c.DatabaseURL == "" {
		bad("DATABASE_URL", "must not be empty")
	} else if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
		bad("DATABASE_URL", "is not a Postgres URL: %v", err)
	}
	if c.NatsURL == "" {
		bad("NATS_URL", "must not be empty")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		bad("LOG_LEVEL", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	if !strings.EqualFold(c.LogFormat, "json") && !strings.EqualFold(c.LogFormat, "text") {
		bad("LOG_FORMAT", "must be json or text, got %q", c.LogFormat)
	}
	return errors.Join(errs...)
}

// subscriberConfig is the subscriber library's configuration as the
// variables set it; run adds the connections, logger and registry.
func (p Program) subscriberConfig() subscriber.Config {
	c := p.Common
	return subscriber.Config{
		Name:            p.Name,
		Stream:          c.Stream,
		Migrations:      p.Migrations,
		Concurrency:     c.Concurrency,
		MaxDeliver:      c.MaxDeliver,
		AckWait:         c.AckWait,
		MaxAckPending:   c.MaxAckPending,
		ShutdownTimeout: c.ShutdownTimeout,
	}
}

// libraryVars maps the fields of Common, which bear the names of the
// subscriber.Config fields they set, to their variables (<PREFIX>_ACK_WAIT
// for AckWait), as envconfig names them.
func (p Program) libraryVars() map[string]string {
	var b strings.Builder
	_ = envconfig.Usagef(p.Prefix(), p.Common, &b, "{{range .}}{{.Name}} {{.Key}}\n{{end}}")
	vars := map[string]string{}
	for line := range strings.Lines(b.String()) {
		if field, key, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			vars[field] = key
		}
	}
	return vars
}

// Logger returns the logger the configuration asks for.
func (c Process) Logger(w io.Writer) *slog.Logger {
	return logging.New(w, c.LogLevel, c.LogFormat)
}

// Exit runs the program as the process: with its arguments and standard
// streams, exiting with Main's code.
func Exit(p Program) { os.Exit(Main(p, os.Args[1:], os.Stdout, os.Stderr)) }

// Main runs the program with the process arguments (without the program
// name) and returns the exit code: 0 after a graceful shutdown on SIGTERM
// or SIGINT, 1 on a failure, 2 on bad usage or configuration.
func Main(p Program, args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help", "help":
			fmt.Fprintf(stdout, "Usage: %s\n\nThe %s subscriber. It takes no arguments and is configured by these environment variables:\n\n", p.Name, p.Name)
			p.PrintEnv(stdout)
			return 0
		default:
			fmt.Fprintf(stderr, "%s: unexpected argument %q (it is configured by the environment; see --help)\n", p.Name, a)
			return 2
		}
	}
	if err := p.Load(); err != nil {
		fmt.Fprintf(stderr, "%s: configuration: %v\n", p.Name, err)
		return 2
	}
	log := p.Common.Logger(stderr).With("service", p.Name)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal kills the process at once
	}()
	if err := run(ctx, p, log); err != nil {
		log.Error("exiting", "error", err)
		return 1
	}
	log.Info("exited cleanly")
	return 0
}

func run(ctx context.Context, p Program, log *slog.Logger) error {
	conns, err := Open(ctx, p.Name, p.Common.Process, p.Common.DatabaseMaxConns, log)
	if err != nil || conns == nil {
		return err
	}
	defer conns.Close()

	scfg := p.subscriberConfig()
	scfg.Pool, scfg.JetStream = conns.Pool, conns.JetStream
	scfg.Logger, scfg.Registerer, scfg.TracerProvider = log, conns.Registry, conns.TracerProvider
	sub, err := subscriber.New(scfg)
	if err != nil {
		return err
	}
	mux := subscriber.NewServeMux(conns.Registry, sub)
	if err := p.Setup(ctx, Deps{Pool: conns.Pool, Subscriber: sub, Mux: mux, Registry: conns.Registry, Logger: log}); err != nil {
		return err
	}
	stopHTTP, err := Serve(*p.HTTPAddr, mux, log)
	if err != nil {
		return fmt.Errorf("%s_HTTP_ADDR: %w", p.Prefix(), err)
	}
	defer stopHTTP()
	return sub.Run(ctx)
}

// Conns are a subscriber process's connections, as Open makes them from
// its Process variables.
type Conns struct {
	Pool           *pgxpool.Pool
	NATS           *nats.Conn
	JetStream      jetstream.JetStream
	Registry       *prometheus.Registry // with the Go and process collectors
	TracerProvider trace.TracerProvider // a no-op provider unless OTEL_ENABLED
	log            *slog.Logger
	stopTracing    func(context.Context) error
}

// Open connects to Postgres (waiting, and logging, until it answers: a
// service may start before its database) and NATS (reconnecting for
// ever), and sets up tracing and the metrics registry. It returns nil and
// no error when ctx is cancelled while it waits for Postgres. maxConns
// sizes the Postgres pool.
func Open(ctx context.Context, name string, c Process, maxConns int32, log *slog.Logger) (*Conns, error) {
	pcfg, err := pgxpool.ParseConfig(c.DatabaseURL)
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := waitForPostgres(ctx, pool, log); err != nil {
		pool.Close()
		return nil, nil // cancelled while waiting: nothing to shut down
	}
	nc, err := nats.Connect(c.NatsURL,
		nats.Name("hookhub-"+name),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("NATS disconnected", "error", err) }),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS connected", "url", nc.ConnectedUrlRedacted()) }),
	)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("nats %s: %w", c.NatsURL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		pool.Close()
		return nil, err
	}
	tp, stopTracing, err := tracing.Setup(ctx, tracing.Config{Enabled: c.OtelEnabled, ServiceName: name, Logger: log.With("component", "tracing")})
	if err != nil {
		nc.Close()
		pool.Close()
		return nil, fmt.Errorf("tracing: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &Conns{Pool: pool, NATS: nc, JetStream: js, Registry: reg, TracerProvider: tp, log: log, stopTracing: stopTracing}, nil
}

// Close flushes the spans of the last messages and NATS, then closes the
// connections. Call it after the subscribers stopped.
func (c *Conns) Close() {
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.stopTracing(sctx); err != nil {
		c.log.Warn("tracing: spans not flushed", "error", err)
	}
	if err := c.NATS.FlushTimeout(2 * time.Second); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		c.log.Warn("nats flush", "error", err)
	}
	c.NATS.Close()
	c.Pool.Close()
}

// Serve serves h (metrics, health, a service's routes) on addr until the
// returned function is called; that function shuts the server down
// within 5 s.
func Serve(addr string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "error", err)
		}
	}()
	log.Info("serving metrics and health", "addr", ln.Addr().String())
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}

// waitForPostgres pings until Postgres answers, logging while it does not,
// so the service can start before its database (docker compose, k8s).
func waitForPostgres(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	delays := backoff.New(250*time.Millisecond, 5*time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := pool.Ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		delay := delays.Next()
		log.Warn("waiting for Postgres", "error", err, "retry_in", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
