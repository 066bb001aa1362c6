package service

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"

	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/console"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/schema"
)

// EnvPrefix is the prefix of every hub environment variable.
const EnvPrefix = "HUB"

// Config is the hub's whole configuration, read from HUB_* environment
// variables by envconfig, one embedded struct per concern (its group tag
// heads its variables in `hub --help` and in the configuration table of
// the docs, which mirrors it). Tags carry the full variable names and are
// processed without a prefix: with a prefix, envconfig would fall back to
// the bare name (DATABASE_URL, HTTP_ADDR, ...) when the HUB_ one is unset,
// and a stray variable meant for another program would configure the
// hub. envconfig adds a prefix for named struct fields only: the groups
// are embedded, so their variables keep their names and their fields are
// promoted (cfg.DatabaseURL).
type Config struct {
	DatabaseConfig  `group:"Database"`
	StreamConfig    `group:"NATS and stream"`
	ProvidersConfig `group:"Providers"`
	IngestConfig    `group:"Webhook listener and ingest limits"`
	BatchConfig     `group:"Batching (group commit)"`
	RelayConfig     `group:"Relay"`
	BackfillConfig  `group:"Backfill"`
	AdminConfig     `group:"Admin API and console"`
	TelemetryConfig `group:"Logs and telemetry"`
}

// DatabaseConfig is the hub's Postgres database.
type DatabaseConfig struct {
	DatabaseURL      string `envconfig:"HUB_DATABASE_URL" default:"postgres://postgres@127.0.0.1:5432/hub?sslmode=disable" desc:"Postgres URL of the hub's database"`
	DatabaseMaxConns int32  `envconfig:"HUB_DATABASE_MAX_CONNS" default:"8" desc:"Postgres connection pool size"`
}

// StreamConfig is the NATS server and the JetStream stream the hub
// publishes to.
type StreamConfig struct {
	NATSURL         string        `envconfig:"HUB_NATS_URL" desc:"NATS server URL(s), comma-separated; empty starts an embedded JetStream server (file store under HUB_DATA_DIR)"`
	DataDir         string        `envconfig:"HUB_DATA_DIR" default:"./.hub" desc:"Directory of the embedded NATS server's store, and of the record dev.json by which the operator commands find a running hub dev"`
	Stream          string        `envconfig:"HUB_STREAM" default:"WEBHOOKS" desc:"JetStream stream the hub publishes to (created when missing, checked every 2 s, restored when lost)"`
	StreamReplicas  int           `envconfig:"HUB_STREAM_REPLICAS" default:"1" desc:"Stream replicas: 1 on one server, 3 in production clusters"`
	StreamMaxAge    time.Duration `envconfig:"HUB_STREAM_MAX_AGE" default:"0" desc:"How long the stream keeps messages (e.g. 720h); 0 keeps them until removed by hand. The archive can republish older events. The hub raises but never lowers it on an existing stream"`
	DuplicateWindow time.Duration `envconfig:"HUB_DUPLICATE_WINDOW" default:"2m" desc:"Stream duplicate window; the relay's retry horizon stays inside it"`
}

// ProvidersConfig is the webhook providers the hub mounts: their secrets
// and what their schemes need.
type ProvidersConfig struct {
	// Secrets holds the secrets of each built-in provider by name, read
	// by LoadConfig from its HUB_<NAME>_SECRETS (SecretsVar):
	// comma-separated, several during a rotation. The variables are
	// derived from provider.Registry, which describes each one.
	Secrets           map[string][]string `ignored:"true"`
	TwilioTypes       []string            `envconfig:"HUB_TWILIO_TYPES" desc:"Twilio event types accepted (sms.status,call.status), comma-separated: only the URLs <HUB_PUBLIC_URL>/webhooks/twilio?type=<type> are then accepted, and no type is inferred; empty accepts any valid type and infers one for the URL without ?type="`
	PublicURL         string              `envconfig:"HUB_PUBLIC_URL" desc:"The hub's public base URL as providers call it (e.g. https://hub.example.com), for schemes that sign the URL (Twilio)"`
	StandardProviders []string            `envconfig:"HUB_STANDARD_PROVIDERS" desc:"Standard Webhooks providers to mount under names of your choice (resend,acme); each needs HUB_STANDARD_<NAME>_SECRETS"`
	// StandardSecrets holds HUB_STANDARD_<NAME>_SECRETS for each name in
	// StandardProviders (upper-cased, '-' as '_'); LoadConfig reads them.
	StandardSecrets    map[string][]string `ignored:"true"`
	SignatureTolerance time.Duration       `envconfig:"HUB_SIGNATURE_TOLERANCE" default:"5m" desc:"Largest accepted difference between a signed timestamp and the hub's clock, past or future"`
}

// IngestConfig is the webhook listener and the bounds of what it takes in.
type IngestConfig struct {
	HTTPAddr        string        `envconfig:"HUB_HTTP_ADDR" default:":8080" desc:"HTTP listen address for webhooks, /healthz and /readyz (and /metrics and /admin/ while HUB_ADMIN_ADDR is empty)"`
	MaxBodyBytes    int           `envconfig:"HUB_MAX_BODY_BYTES" default:"1048576" desc:"Largest accepted request body; larger is answered 413"`
	MaxInflight     int           `envconfig:"HUB_MAX_INFLIGHT" default:"128" desc:"Webhook requests verified and committed at once; request bodies being received hold at most HUB_MAX_INFLIGHT x HUB_MAX_BODY_BYTES of memory. Past either bound a request is answered 503 with Retry-After"`
	MaxConns        int           `envconfig:"HUB_MAX_CONNS" default:"4096" desc:"Open connections on HUB_HTTP_ADDR; past it a new connection is answered 503 with Retry-After and closed"`
	CommitTimeout   time.Duration `envconfig:"HUB_COMMIT_TIMEOUT" default:"10s" desc:"Longest wait for Postgres to commit a delivery before answering 503"`
	ShutdownTimeout time.Duration `envconfig:"HUB_SHUTDOWN_TIMEOUT" default:"25s" desc:"On SIGTERM, time allowed for in-flight requests and the relay to finish"`
	Entities        bool          `envconfig:"HUB_ENTITIES" default:"true" desc:"Keep each event's entities (the business objects its provider names) on its archive row, for the entity look-up, and on its message (Hookhub-Entity headers); false keeps them on neither (the providers still read them from the body)"`
}

// BatchConfig is the group commit of accepted webhooks.
type BatchConfig struct {
	BatchMax        int           `envconfig:"HUB_BATCH_MAX" default:"64" desc:"Group commit: most deliveries that share one transaction; 1 disables batching (one transaction per request)"`
	BatchCommitters int           `envconfig:"HUB_BATCH_COMMITTERS" default:"1" desc:"Group commit: transactions committing concurrently; one makes the largest batches, the cheapest for Postgres"`
	BatchLinger     time.Duration `envconfig:"HUB_BATCH_LINGER" default:"2ms" desc:"Group commit: longest a small batch (under an eighth of HUB_BATCH_MAX) waits for more deliveries before it commits; 0 commits at once"`
}

// RelayConfig is the outbox relay that publishes to the stream.
type RelayConfig struct {
	RelayBatchSize int `envconfig:"HUB_RELAY_BATCH_SIZE" default:"256" desc:"Most rows one publish batch holds, fast path and relay alike; a fast-path pipeline has up to four batches in flight"`
	RelayWorkers   int `envconfig:"HUB_RELAY_WORKERS" default:"1" desc:"Fast-path publish pipelines: each sends, settles and marks batches in parallel stages"`
	// keeperInterval is how often the stream keeper checks the stream;
	// zero (always, outside tests) is relay.DefaultKeeperInterval. Tests
	// shorten it with SetKeeperInterval (export_test.go).
	keeperInterval time.Duration `ignored:"true"`
}

// BackfillConfig is the backfill: each source's settings, the periodic
// run of hub serve, and the bounds of every run.
type BackfillConfig struct {
	// BackfillSettings holds the settings of the backfill sources by
	// variable, HUB_<PROVIDER>_<KEY> (BackfillVar), read by LoadConfig;
	// the variables are derived from backfill.Sources, which describes
	// each one. Read and set them with BackfillSetting and
	// SetBackfillSetting.
	BackfillSettings   map[string]string `ignored:"true"`
	BackfillInterval   time.Duration     `envconfig:"HUB_BACKFILL_INTERVAL" default:"0" desc:"hub serve backfills every provider with API credentials this often (at start, then every interval), e.g. 1h; 0 leaves it off"`
	BackfillWindow     time.Duration     `envconfig:"HUB_BACKFILL_WINDOW" default:"72h" desc:"How far back a periodic backfill looks (up to 5 minutes ago: younger events are left to their webhooks); at least HUB_BACKFILL_INTERVAL + 5m"`
	BackfillMaxPages   int               `envconfig:"HUB_BACKFILL_MAX_PAGES" default:"1000" desc:"Most API pages one backfill run reads (hub serve and hub backfill); past it the run stops with an error, keeps what it ingested, and the next run continues"`
	BackfillMaxEvents  int               `envconfig:"HUB_BACKFILL_MAX_EVENTS" default:"200000" desc:"Most events the API may list to one backfill run (inside the window or not); past it the run stops like HUB_BACKFILL_MAX_PAGES"`
	BackfillMaxRunTime time.Duration     `envconfig:"HUB_BACKFILL_MAX_RUN_TIME" default:"30m" desc:"Longest one backfill run may take; past it the run stops like HUB_BACKFILL_MAX_PAGES"`
}

// AdminConfig is the private listener of the admin API, metrics and
// pprof, and the sign-ins of the admin API and the web console.
type AdminConfig struct {
	AdminAddr            string `envconfig:"HUB_ADMIN_ADDR" desc:"Listen address of the private listener for /admin/, /metrics and /debug/pprof/ (and /healthz, /readyz); empty serves /metrics and /admin/ on HUB_HTTP_ADDR and pprof nowhere. Set it in production and keep it off the internet"`
	AdminMaxConns        int    `envconfig:"HUB_ADMIN_MAX_CONNS" default:"256" desc:"Open connections on HUB_ADMIN_ADDR (probes, Prometheus, operators), and a quarter of that from one remote address; past either a new connection is answered 503 with Retry-After and closed"`
	ReadMaxAtOnce        int    `envconfig:"HUB_READ_MAX_AT_ONCE" default:"2" desc:"Expensive reads (plans, dry runs, payload filters, exports, charts) the hub runs at once, all sessions together; past it a read is refused 429 with Retry-After. Replays and bulk actions have their own capacity"`
	ReadRowsPerSecond    int    `envconfig:"HUB_READ_ROWS_PER_SECOND" default:"10000" desc:"Archive rows (and stream messages) the expensive reads may read a second on average, with a burst of five seconds' worth; past it a read is refused 429 with Retry-After"`
	AdminToken           string `envconfig:"HUB_ADMIN_TOKEN" desc:"Bearer token of the admin API under /admin/ and the admin sign-in of the web console under /console/ (at least 32 characters); empty leaves both off"`
	ConsoleReadOnlyToken string `envconfig:"HUB_CONSOLE_READONLY_TOKEN" desc:"Token of the web console's read-only sign-in under /console/ (at least 32 characters, not HUB_ADMIN_TOKEN; needs HUB_ADMIN_TOKEN, which signs in as admin); empty: admin sign-in only"`
	// OpenID Connect sign-in to the console (docs/console.md).
	ConsoleOIDCIssuer       string   `envconfig:"HUB_CONSOLE_OIDC_ISSUER" desc:"Issuer URL of the OpenID Connect provider the web console signs operators in with (https; discovery at Issuer/.well-known/openid-configuration); empty: token sign-in only. Needs HUB_ADMIN_TOKEN"`
	ConsoleOIDCClientID     string   `envconfig:"HUB_CONSOLE_OIDC_CLIENT_ID" desc:"The console's client id at the provider (the ID token's audience)"`
	ConsoleOIDCClientSecret string   `envconfig:"HUB_CONSOLE_OIDC_CLIENT_SECRET" desc:"The console's client secret at the provider (empty for a public client: PKCE only)"`
	ConsoleOIDCRedirectURL  string   `envconfig:"HUB_CONSOLE_OIDC_REDIRECT_URL" desc:"The console's callback as registered at the provider: https://HOST/console/oidc/callback"`
	ConsoleOIDCAdmins       []string `envconfig:"HUB_CONSOLE_OIDC_ADMINS" desc:"Comma list of who signs in as admin: e-mail addresses (alice@example.com), domains (@example.com), groups (group:NAME); e-mail and domain need email_verified"`
	ConsoleOIDCReaders      []string `envconfig:"HUB_CONSOLE_OIDC_READERS" desc:"Comma list of who signs in as read-only, as HUB_CONSOLE_OIDC_ADMINS (admin wins when both match; someone matching neither is refused)"`
	ConsoleOIDCGroupsClaim  string   `envconfig:"HUB_CONSOLE_OIDC_GROUPS_CLAIM" default:"groups" desc:"ID token claim listing the operator's groups, for group:NAME entries"`
}

// TelemetryConfig is the hub's logs and traces.
type TelemetryConfig struct {
	LogLevel    string `envconfig:"HUB_LOG_LEVEL" default:"info" desc:"debug, info, warn or error"`
	LogFormat   string `envconfig:"HUB_LOG_FORMAT" default:"json" desc:"json or text"`
	OTelEnabled bool   `envconfig:"HUB_OTEL_ENABLED" default:"false" desc:"OpenTelemetry tracing: a span per delivery and per publish, exported with OTLP over HTTP as the standard OTEL_* variables say (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_SAMPLER, ...)"`
}

// problems collects the configuration's mistakes, each naming its
// variable.
type problems []error

// add records a mistake of the variable HUB_<name>.
func (p *problems) add(name, format string, args ...any) {
	*p = append(*p, fmt.Errorf("%s_%s %s", EnvPrefix, name, fmt.Sprintf(format, args...)))
}

// between records a mistake of HUB_<name> unless lo <= v <= hi.
func (p *problems) between(name string, v, lo, hi int) {
	if v < lo || v > hi {
		p.add(name, "must be between %d and %d, got %d", lo, hi, v)
	}
}

// Validate checks the configuration, group by group and then across
// groups, and names the variable at fault.
func (c *Config) Validate() error {
	var p problems
	c.DatabaseConfig.validate(&p)
	c.StreamConfig.validate(&p)
	c.ProvidersConfig.validate(&p)
	c.IngestConfig.validate(&p)
	c.BatchConfig.validate(&p)
	c.RelayConfig.validate(&p)
	c.BackfillConfig.validate(&p)
	c.AdminConfig.validate(&p)
	c.TelemetryConfig.validate(&p)
	if int(c.DatabaseMaxConns) < c.RelayWorkers+1 {
		p.add("DATABASE_MAX_CONNS", "must exceed HUB_RELAY_WORKERS (%d): each relay worker holds a connection while it publishes", c.RelayWorkers)
	}
	if c.AdminAddr != "" && c.AdminAddr == c.HTTPAddr && !strings.HasSuffix(c.AdminAddr, ":0") {
		p.add("ADMIN_ADDR", "must differ from HUB_HTTP_ADDR (%s): it is a second, private listener", c.HTTPAddr)
	}
	return errors.Join(p...)
}

func (c *DatabaseConfig) validate(p *problems) {
	if c.DatabaseURL == "" {
		p.add("DATABASE_URL", "must not be empty")
	}
	if c.DatabaseMaxConns < 2 {
		p.add("DATABASE_MAX_CONNS", "must be at least 2 (ingest and relay each need one), got %d", c.DatabaseMaxConns)
	}
}

func (c *StreamConfig) validate(p *problems) {
	if !schema.ValidStreamName(c.Stream) {
		p.add("STREAM", "must be a JetStream stream name without spaces, '.', '*', '>', '/' or '\\', got %q", c.Stream)
	}
	p.between("STREAM_REPLICAS", c.StreamReplicas, 1, 5)
	if c.StreamMaxAge < 0 || (c.StreamMaxAge > 0 && c.StreamMaxAge < c.DuplicateWindow) {
		p.add("STREAM_MAX_AGE", "must be 0 (no limit) or at least HUB_DUPLICATE_WINDOW (%s), got %s", c.DuplicateWindow, c.StreamMaxAge)
	}
	if c.DuplicateWindow < time.Second {
		p.add("DUPLICATE_WINDOW", "must be at least 1s (the relay's retries must fit inside it), got %s", c.DuplicateWindow)
	}
}

func (c *ProvidersConfig) validate(p *problems) {
	for name, secrets := range c.secretVars() {
		for i, v := range secrets {
			if strings.TrimSpace(v) == "" {
				p.add(name, "has an empty secret at position %d", i+1)
			}
		}
	}
	envNames := map[string]string{}
	for _, name := range c.StandardProviders {
		name = strings.TrimSpace(name)
		switch {
		case !provider.ValidName(name):
			p.add("STANDARD_PROVIDERS", "has %q: a provider name is 1-32 characters of [a-z0-9_-], starting with a letter or digit", name)
		case slices.Contains(provider.Names(), name):
			p.add("STANDARD_PROVIDERS", "has %q, the name of a built-in provider", name)
		case envNames[StandardSecretsVar(name)] != "":
			p.add("STANDARD_PROVIDERS", "has %q and %q, which share the variable %s", envNames[StandardSecretsVar(name)], name, StandardSecretsVar(name))
		case len(c.StandardSecrets[name]) == 0:
			*p = append(*p, fmt.Errorf("%s must hold the secrets of %q (listed in HUB_STANDARD_PROVIDERS)", StandardSecretsVar(name), name))
		}
		envNames[StandardSecretsVar(name)] = name
	}
	for i, typ := range c.TwilioTypes {
		if !provider.ValidTwilioType(strings.TrimSpace(typ)) {
			p.add("TWILIO_TYPES", "has %q at position %d: a type is lowercase tokens of [a-z0-9_-] separated by dots (sms.status), at most 128 bytes", typ, i+1)
		}
	}
	if len(c.Secrets["twilio"]) > 0 && c.PublicURL == "" {
		p.add("PUBLIC_URL", "is required with HUB_TWILIO_SECRETS: Twilio signs the URL it calls")
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			p.add("PUBLIC_URL", "must be an absolute http(s) URL without query, e.g. https://hub.example.com, got %q", c.PublicURL)
		}
	}
	if c.SignatureTolerance <= 0 {
		p.add("SIGNATURE_TOLERANCE", "must be positive, got %s", c.SignatureTolerance)
	}
}

func (c *IngestConfig) validate(p *problems) {
	if c.HTTPAddr == "" {
		p.add("HTTP_ADDR", "must not be empty")
	}
	if c.MaxBodyBytes < 1024 {
		p.add("MAX_BODY_BYTES", "must be at least 1024, got %d", c.MaxBodyBytes)
	}
	p.between("MAX_INFLIGHT", c.MaxInflight, 1, 100000)
	p.between("MAX_CONNS", c.MaxConns, 16, 1000000)
	if c.ShutdownTimeout <= 0 {
		p.add("SHUTDOWN_TIMEOUT", "must be positive, got %s", c.ShutdownTimeout)
	}
	if c.CommitTimeout <= 0 {
		p.add("COMMIT_TIMEOUT", "must be positive, got %s", c.CommitTimeout)
	}
}

func (c *BatchConfig) validate(p *problems) {
	p.between("BATCH_MAX", c.BatchMax, 1, 10000)
	p.between("BATCH_COMMITTERS", c.BatchCommitters, 1, 64)
	if c.BatchLinger < 0 || c.BatchLinger > 100*time.Millisecond {
		p.add("BATCH_LINGER", "must be within 0..100ms, got %s", c.BatchLinger)
	}
}

func (c *RelayConfig) validate(p *problems) {
	p.between("RELAY_WORKERS", c.RelayWorkers, 1, 64)
	p.between("RELAY_BATCH_SIZE", c.RelayBatchSize, 1, 10000)
}

func (c *BackfillConfig) validate(p *problems) {
	if c.BackfillInterval < 0 || (c.BackfillInterval > 0 && c.BackfillInterval < 10*time.Second) {
		p.add("BACKFILL_INTERVAL", "must be 0 (off) or at least 10s, got %s", c.BackfillInterval)
	}
	if c.BackfillInterval > 0 && c.BackfillWindow <= 0 {
		p.add("BACKFILL_WINDOW", "must be positive with HUB_BACKFILL_INTERVAL set, got %s", c.BackfillWindow)
	} else if c.BackfillInterval > 0 && c.BackfillWindow < c.BackfillInterval+BackfillSettle {
		p.add("BACKFILL_WINDOW", "must be at least HUB_BACKFILL_INTERVAL (%s) plus the %s a periodic run leaves to webhooks on their way, or events between two runs are never checked, got %s",
			c.BackfillInterval, BackfillSettle, c.BackfillWindow)
	}
	// 0 (a Config built in code) is the backfill package's default.
	if c.BackfillMaxPages < 0 {
		p.add("BACKFILL_MAX_PAGES", "must be at least 1, got %d", c.BackfillMaxPages)
	}
	if c.BackfillMaxEvents < 0 {
		p.add("BACKFILL_MAX_EVENTS", "must be at least 1, got %d", c.BackfillMaxEvents)
	}
	if c.BackfillMaxRunTime < 0 {
		p.add("BACKFILL_MAX_RUN_TIME", "must be positive, got %s", c.BackfillMaxRunTime)
	} else if c.BackfillInterval > 0 && c.BackfillMaxRunTime > c.BackfillWindow {
		p.add("BACKFILL_MAX_RUN_TIME", "must not exceed HUB_BACKFILL_WINDOW (%s), got %s", c.BackfillWindow, c.BackfillMaxRunTime)
	}
	for _, src := range backfill.Sources() {
		c.validateSource(src, p)
	}
}

// validateSource checks the settings of the backfill source src: its API
// URLs, and that its required settings are set all together or not at all.
func (c *BackfillConfig) validateSource(src backfill.SourceSpec, p *problems) {
	var set, unset []backfill.Setting
	for _, s := range src.Settings {
		v := c.BackfillSettings[BackfillVar(src.Provider, s.Key)]
		if s.URL && v != "" {
			if err := backfill.CheckAPIURL(v, BackfillVar(src.Provider, s.Key)); err != nil {
				*p = append(*p, err)
			}
		}
		switch {
		case !s.Required:
		case v != "":
			set = append(set, s)
		default:
			unset = append(unset, s)
		}
	}
	if len(set) > 0 && len(unset) > 0 {
		msg := fmt.Sprintf("%s is required with %s", BackfillVar(src.Provider, unset[0].Key), BackfillVar(src.Provider, set[0].Key))
		if unset[0].Why != "" {
			msg += ": " + unset[0].Why
		}
		*p = append(*p, errors.New(msg))
	}
}

func (c *AdminConfig) validate(p *problems) {
	if c.AdminToken != "" && len(c.AdminToken) < 32 {
		p.add("ADMIN_TOKEN", "must be at least 32 characters (e.g. openssl rand -hex 32), got %d", len(c.AdminToken))
	}
	if c.ConsoleReadOnlyToken != "" {
		switch {
		case len(c.ConsoleReadOnlyToken) < 32:
			p.add("CONSOLE_READONLY_TOKEN", "must be at least 32 characters (e.g. openssl rand -hex 32), got %d", len(c.ConsoleReadOnlyToken))
		case c.ConsoleReadOnlyToken == c.AdminToken:
			p.add("CONSOLE_READONLY_TOKEN", "must differ from HUB_ADMIN_TOKEN: it signs in as read-only")
		case c.AdminToken == "":
			p.add("CONSOLE_READONLY_TOKEN", "needs HUB_ADMIN_TOKEN: the console is off without it")
		}
	}
	c.validateOIDC(p)
	p.between("ADMIN_MAX_CONNS", c.AdminMaxConns, 16, 100000)
	p.between("READ_MAX_AT_ONCE", c.ReadMaxAtOnce, 1, 64)
	p.between("READ_ROWS_PER_SECOND", c.ReadRowsPerSecond, 1000, 10_000_000)
}

func (c *AdminConfig) validateOIDC(p *problems) {
	if c.ConsoleOIDCIssuer == "" {
		if c.ConsoleOIDCClientID != "" || c.ConsoleOIDCRedirectURL != "" || len(c.ConsoleOIDCAdmins)+len(c.ConsoleOIDCReaders) > 0 {
			p.add("CONSOLE_OIDC_ISSUER", "is required with the other HUB_CONSOLE_OIDC_* settings")
		}
		return
	}
	if c.AdminToken == "" {
		p.add("CONSOLE_OIDC_ISSUER", "needs HUB_ADMIN_TOKEN: the console is off without it")
	}
	if err := console.CheckOIDCURL(c.ConsoleOIDCIssuer); err != nil {
		p.add("CONSOLE_OIDC_ISSUER", "%v", err)
	}
	if c.ConsoleOIDCClientID == "" {
		p.add("CONSOLE_OIDC_CLIENT_ID", "is required with HUB_CONSOLE_OIDC_ISSUER")
	}
	if err := console.CheckOIDCRedirectURL(c.ConsoleOIDCRedirectURL); err != nil {
		p.add("CONSOLE_OIDC_REDIRECT_URL", "%v", err)
	}
	n := 0
	for _, r := range []struct {
		name string
		list []string
	}{{"CONSOLE_OIDC_ADMINS", c.ConsoleOIDCAdmins}, {"CONSOLE_OIDC_READERS", c.ConsoleOIDCReaders}} {
		k, err := console.CheckRoleRules(r.list)
		if err != nil {
			p.add(r.name, "%v", err)
		}
		n += k
	}
	if n == 0 {
		p.add("CONSOLE_OIDC_ADMINS", "or HUB_CONSOLE_OIDC_READERS must give someone a role")
	}
	if c.ConsoleOIDCGroupsClaim == "" {
		p.add("CONSOLE_OIDC_GROUPS_CLAIM", "must not be empty")
	}
}

// OIDC returns the console's OpenID Connect settings.
func (c *AdminConfig) OIDC() console.OIDCConfig {
	return console.OIDCConfig{Issuer: c.ConsoleOIDCIssuer, ClientID: c.ConsoleOIDCClientID, ClientSecret: c.ConsoleOIDCClientSecret,
		RedirectURL: c.ConsoleOIDCRedirectURL, Admins: c.ConsoleOIDCAdmins, Readers: c.ConsoleOIDCReaders, GroupsClaim: c.ConsoleOIDCGroupsClaim}
}

func (c *TelemetryConfig) validate(p *problems) {
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		p.add("LOG_LEVEL", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	switch strings.ToLower(c.LogFormat) {
	case "json", "text":
	default:
		p.add("LOG_FORMAT", "must be json or text, got %q", c.LogFormat)
	}
}

// secretVars maps each built-in provider's secrets variable (without the
// prefix) to its value.
func (c *ProvidersConfig) secretVars() map[string][]string {
	out := map[string][]string{}
	for _, spec := range secretSpecs() {
		out[strings.TrimPrefix(SecretsVar(spec.Name), EnvPrefix+"_")] = c.Secrets[spec.Name]
	}
	return out
}

// secretSpecs returns the built-in providers that have a secrets
// variable, in the registry's order.
func secretSpecs() []provider.Spec {
	var out []provider.Spec
	for _, spec := range provider.Registry() {
		if spec.Secrets != "" {
			out = append(out, spec)
		}
	}
	return out
}

// builtin reports whether name is a built-in provider with a secrets
// variable.
func builtin(name string) bool {
	return slices.ContainsFunc(secretSpecs(), func(s provider.Spec) bool { return s.Name == name })
}

// EnvVar is one configuration variable, as `hub --help` lists it.
type EnvVar struct {
	// Group is the concern the variable configures: the group tag of
	// Config's field that holds it ("Database").
	Group              string
	Key, Default, Desc string
}

// EnvVars returns every variable Config reads, group by group in the
// order of Config's fields (the configuration table of the docs), from
// their envconfig tags; the variables derived from a registry open their
// group: each built-in provider's HUB_<NAME>_SECRETS, described by
// provider.Registry, the providers', and each backfill source's settings,
// described by backfill.Sources, the backfill's.
// HUB_STANDARD_<NAME>_SECRETS follows HUB_STANDARD_PROVIDERS.
func EnvVars() []EnvVar {
	typ := reflect.TypeFor[Config]()
	var out []EnvVar
	for i := range typ.NumField() {
		field := typ.Field(i)
		group := field.Tag.Get("group")
		switch field.Type {
		case reflect.TypeFor[ProvidersConfig]():
			for _, spec := range secretSpecs() {
				out = append(out, EnvVar{Group: group, Key: SecretsVar(spec.Name), Desc: spec.Secrets})
			}
		case reflect.TypeFor[BackfillConfig]():
			for _, src := range backfill.Sources() {
				names := BackfillNames(src.Provider)
				for _, s := range src.Settings {
					out = append(out, EnvVar{Group: group, Key: BackfillVar(src.Provider, s.Key), Default: s.Default, Desc: s.Describe(names)})
				}
			}
		}
		for j := range field.Type.NumField() {
			tag := field.Type.Field(j).Tag
			if tag.Get("ignored") == "true" {
				continue
			}
			key := strings.ToUpper(tag.Get("envconfig"))
			out = append(out, EnvVar{Group: group, Key: key, Default: tag.Get("default"), Desc: tag.Get("desc")})
			if key == EnvPrefix+"_STANDARD_PROVIDERS" {
				out = append(out, EnvVar{Group: group, Key: StandardSecretsVar("<NAME>"),
					Desc: "secrets of each Standard Webhooks provider named in HUB_STANDARD_PROVIDERS (NAME upper-cased, '-' as '_')"})
			}
		}
	}
	return out
}

// secretsVarList lists the built-in providers' secrets variables,
// comma-separated.
func secretsVarList() string {
	var vars []string
	for _, spec := range secretSpecs() {
		vars = append(vars, SecretsVar(spec.Name))
	}
	return strings.Join(vars, ", ")
}

// SetSecrets sets the secrets of the built-in provider name, as its
// HUB_<NAME>_SECRETS would; none removes them.
func (c *Config) SetSecrets(name string, secrets ...string) {
	if len(secrets) == 0 {
		delete(c.Secrets, name)
		return
	}
	if c.Secrets == nil {
		c.Secrets = map[string][]string{}
	}
	c.Secrets[name] = secrets
}

// SecretsVar is the variable holding the secrets of the built-in provider
// name: HUB_<NAME>_SECRETS, the name upper-cased with '-' as '_'.
func SecretsVar(name string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_SECRETS"
}

// ProviderSecrets returns the configured secrets by provider name, for the
// providers that have any (Standard Webhooks names included), with
// surrounding spaces trimmed.
func (c *Config) ProviderSecrets() map[string][]string {
	out := map[string][]string{}
	add := func(name string, secrets []string) {
		for _, s := range secrets {
			if s = strings.TrimSpace(s); s != "" {
				out[name] = append(out[name], s)
			}
		}
	}
	for _, spec := range secretSpecs() {
		add(spec.Name, c.Secrets[spec.Name])
	}
	for _, name := range c.StandardProviders {
		add(strings.TrimSpace(name), c.StandardSecrets[strings.TrimSpace(name)])
	}
	return out
}

// Providers builds every configured provider, sorted by name.
func (c *Config) Providers() ([]provider.Provider, error) {
	secrets := c.ProviderSecrets()
	names := slices.Sorted(maps.Keys(secrets))
	out := make([]provider.Provider, 0, len(names))
	for _, name := range names {
		o := provider.Options{Tolerance: c.SignatureTolerance, PublicURL: c.PublicURL, TwilioTypes: c.twilioTypes()}
		kind := name
		if !builtin(name) {
			kind, o.Name = provider.StandardWebhooksName, name
		}
		p, err := provider.New(kind, secrets[name], o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", secretsVarOf(name, c), err)
		}
		out = append(out, p)
	}
	return out, nil
}

// twilioTypes returns HUB_TWILIO_TYPES with surrounding spaces trimmed.
func (c *Config) twilioTypes() []string {
	out := make([]string, 0, len(c.TwilioTypes))
	for _, typ := range c.TwilioTypes {
		out = append(out, strings.TrimSpace(typ))
	}
	return out
}

func secretsVarOf(name string, c *Config) string {
	if builtin(name) {
		return SecretsVar(name)
	}
	return StandardSecretsVar(name)
}

// StandardSecretsVar is the variable holding the secrets of the Standard
// Webhooks provider mounted as name: HUB_STANDARD_<NAME>_SECRETS, the name
// upper-cased with '-' as '_'.
func StandardSecretsVar(name string) string {
	return EnvPrefix + "_STANDARD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_SECRETS"
}

// LoadConfig reads the HUB_* variables (with those derived from the
// provider and backfill registries, and the HUB_STANDARD_<NAME>_SECRETS of
// each Standard Webhooks provider) and validates them.
func LoadConfig() (Config, error) {
	var c Config
	if err := envconfig.Process("", &c); err != nil {
		return c, err
	}
	for _, spec := range secretSpecs() {
		// As envconfig reads a list: split on commas, unset or blank is none.
		if v, ok := os.LookupEnv(SecretsVar(spec.Name)); ok && strings.TrimSpace(v) != "" {
			c.SetSecrets(spec.Name, strings.Split(v, ",")...)
		}
	}
	for _, src := range backfill.Sources() {
		for _, s := range src.Settings {
			if v, ok := os.LookupEnv(BackfillVar(src.Provider, s.Key)); ok {
				c.SetBackfillSetting(src.Provider, s.Key, v)
			}
		}
	}
	if _, ok := os.LookupEnv(EnvPrefix + "_DEBUG_ADDR"); ok {
		return c, errors.New("HUB_DEBUG_ADDR is no longer read: pprof is served under /debug/pprof/ on HUB_ADMIN_ADDR; set that instead")
	}
	c.StandardSecrets = map[string][]string{}
	for _, name := range c.StandardProviders {
		name = strings.TrimSpace(name)
		if v, ok := os.LookupEnv(StandardSecretsVar(name)); ok {
			c.StandardSecrets[name] = strings.Split(v, ",")
		}
	}
	return c, c.Validate()
}
