package service

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookhub/hookhub/schema"
)

// EnvPrefix is the prefix of every hub environment variable.
const EnvPrefix = "HUB"

// Config is the hub's whole configuration, read from HUB_* environment
// variables by envconfig. The README's configuration table mirrors it.
type Config struct {
	DatabaseURL        string        `envconfig:"DATABASE_URL" default:"postgres://postgres@127.0.0.1:5432/hub?sslmode=disable" desc:"Postgres URL of the hub's database"`
	DatabaseMaxConns   int32         `envconfig:"DATABASE_MAX_CONNS" default:"8" desc:"Postgres connection pool size"`
	NATSURL            string        `envconfig:"NATS_URL" desc:"NATS server URL(s), comma-separated; empty starts an embedded JetStream server (file store under HUB_DATA_DIR)"`
	HTTPAddr           string        `envconfig:"HTTP_ADDR" default:":8080" desc:"HTTP listen address for webhooks, /healthz, /readyz and /metrics"`
	Stream             string        `envconfig:"STREAM" default:"WEBHOOKS" desc:"JetStream stream the hub publishes to (created or updated at start)"`
	StreamReplicas     int           `envconfig:"STREAM_REPLICAS" default:"1" desc:"Stream replicas: 1 on one server, 3 in production clusters"`
	DuplicateWindow    time.Duration `envconfig:"DUPLICATE_WINDOW" default:"2m" desc:"Stream duplicate window; the relay's retry horizon stays inside it"`
	PaddleSecrets      []string      `envconfig:"PADDLE_SECRETS" desc:"Paddle endpoint secrets (pdl_ntfset_...), comma-separated; several during a rotation"`
	ClerkSecrets       []string      `envconfig:"CLERK_SECRETS" desc:"Clerk (Svix) signing secrets (whsec_...), comma-separated; several during a rotation"`
	SignatureTolerance time.Duration `envconfig:"SIGNATURE_TOLERANCE" default:"5m" desc:"Largest accepted difference between a signed timestamp and the hub's clock, past or future"`
	MaxBodyBytes       int           `envconfig:"MAX_BODY_BYTES" default:"1048576" desc:"Largest accepted request body; larger is answered 413"`
	ShutdownTimeout    time.Duration `envconfig:"SHUTDOWN_TIMEOUT" default:"25s" desc:"On SIGTERM, time allowed for in-flight requests and the relay to finish"`
	CommitTimeout      time.Duration `envconfig:"COMMIT_TIMEOUT" default:"10s" desc:"Longest wait for Postgres to commit a delivery before answering 503"`
	BatchMax           int           `envconfig:"BATCH_MAX" default:"64" desc:"Group commit: most deliveries that share one transaction; 1 disables batching (one transaction per request)"`
	BatchCommitters    int           `envconfig:"BATCH_COMMITTERS" default:"2" desc:"Group commit: transactions committing concurrently"`
	RelayBatchSize     int           `envconfig:"RELAY_BATCH_SIZE" default:"256" desc:"Most rows one publish batch holds (async publishes in flight per loop), fast path and relay alike"`
	RelayWorkers       int           `envconfig:"RELAY_WORKERS" default:"2" desc:"Fast-path publish loops: each publishes what was committed while its previous batch was in flight"`
	DebugAddr          string        `envconfig:"DEBUG_ADDR" desc:"Listen address of the pprof endpoints (/debug/pprof/); empty disables them. Keep it private"`
	DataDir            string        `envconfig:"DATA_DIR" default:"./.hub" desc:"Directory of the embedded NATS server's store"`
	LogLevel           string        `envconfig:"LOG_LEVEL" default:"info" desc:"debug, info, warn or error"`
	LogFormat          string        `envconfig:"LOG_FORMAT" default:"json" desc:"json or text"`
}

// Validate checks the configuration and names the variable at fault.
func (c *Config) Validate() error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s_%s %s", EnvPrefix, name, fmt.Sprintf(format, args...)))
	}
	if c.DatabaseURL == "" {
		bad("DATABASE_URL", "must not be empty")
	}
	if c.DatabaseMaxConns < 2 {
		bad("DATABASE_MAX_CONNS", "must be at least 2 (ingest and relay each need one), got %d", c.DatabaseMaxConns)
	}
	if c.HTTPAddr == "" {
		bad("HTTP_ADDR", "must not be empty")
	}
	if c.Stream == "" || strings.ContainsAny(c.Stream, " \t\r\n.*>/\\") {
		bad("STREAM", "must be a JetStream stream name without spaces, '.', '*', '>', '/' or '\\', got %q", c.Stream)
	}
	if c.StreamReplicas < 1 || c.StreamReplicas > 5 {
		bad("STREAM_REPLICAS", "must be between 1 and 5, got %d", c.StreamReplicas)
	}
	if c.DuplicateWindow < time.Second {
		bad("DUPLICATE_WINDOW", "must be at least 1s (the relay's retries must fit inside it), got %s", c.DuplicateWindow)
	}
	for _, s := range []struct {
		name    string
		secrets []string
	}{{"PADDLE_SECRETS", c.PaddleSecrets}, {"CLERK_SECRETS", c.ClerkSecrets}} {
		for i, v := range s.secrets {
			if strings.TrimSpace(v) == "" {
				bad(s.name, "has an empty secret at position %d", i+1)
			}
		}
	}
	if c.SignatureTolerance <= 0 {
		bad("SIGNATURE_TOLERANCE", "must be positive, got %s", c.SignatureTolerance)
	}
	if c.MaxBodyBytes < 1024 {
		bad("MAX_BODY_BYTES", "must be at least 1024, got %d", c.MaxBodyBytes)
	}
	if c.ShutdownTimeout <= 0 {
		bad("SHUTDOWN_TIMEOUT", "must be positive, got %s", c.ShutdownTimeout)
	}
	if c.CommitTimeout <= 0 {
		bad("COMMIT_TIMEOUT", "must be positive, got %s", c.CommitTimeout)
	}
	if c.BatchMax < 1 || c.BatchMax > 10000 {
		bad("BATCH_MAX", "must be between 1 and 10000, got %d", c.BatchMax)
	}
	if c.BatchCommitters < 1 || c.BatchCommitters > 64 {
		bad("BATCH_COMMITTERS", "must be between 1 and 64, got %d", c.BatchCommitters)
	}
	if c.RelayWorkers < 1 || c.RelayWorkers > 64 {
		bad("RELAY_WORKERS", "must be between 1 and 64, got %d", c.RelayWorkers)
	}
	if int(c.DatabaseMaxConns) < c.RelayWorkers+1 {
		bad("DATABASE_MAX_CONNS", "must exceed HUB_RELAY_WORKERS (%d): each relay worker holds a connection while it publishes", c.RelayWorkers)
	}
	if c.RelayBatchSize < 1 || c.RelayBatchSize > 10000 {
		bad("RELAY_BATCH_SIZE", "must be between 1 and 10000, got %d", c.RelayBatchSize)
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		bad("LOG_LEVEL", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	switch strings.ToLower(c.LogFormat) {
	case "json", "text":
	default:
		bad("LOG_FORMAT", "must be json or text, got %q", c.LogFormat)
	}
	return errors.Join(errs...)
}

// ProviderSecrets returns the configured secrets by provider name, for the
// providers that have any, with surrounding spaces trimmed.
func (c *Config) ProviderSecrets() map[string][]string {
	out := map[string][]string{}
	for name, secrets := range map[string][]string{"paddle": c.PaddleSecrets, "clerk": c.ClerkSecrets} {
		for _, s := range secrets {
			if s = strings.TrimSpace(s); s != "" {
				out[name] = append(out[name], s)
			}
		}
	}
	return out
}

// ValidProviderName reports whether name can be a provider: a subject token
// that fits the archive's VARCHAR(32).
func ValidProviderName(name string) bool { return len(name) <= 32 && schema.ValidToken(name) }
