package service_test

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/schema"
)

func TestDefaultsAreValid(t *testing.T) {
	var cfg service.Config
	require.NoError(t, envconfig.Process("", &cfg))
	require.NoError(t, cfg.Validate())
	require.Equal(t, "postgres://postgres@127.0.0.1:5432/hub?sslmode=disable", cfg.DatabaseURL)
	require.Equal(t, ":8080", cfg.HTTPAddr)
	require.Equal(t, schema.DefaultStream, cfg.Stream)
	require.Equal(t, 1, cfg.StreamReplicas)
	require.Equal(t, 2*time.Minute, cfg.DuplicateWindow)
	require.Equal(t, 5*time.Minute, cfg.SignatureTolerance)
	require.Equal(t, 1<<20, cfg.MaxBodyBytes)
	require.Equal(t, 25*time.Second, cfg.ShutdownTimeout)
	require.Empty(t, cfg.NATSURL)
}

func TestInvalidConfigNamesTheVariable(t *testing.T) {
	base := func() service.Config {
		var cfg service.Config
		require.NoError(t, envconfig.Process("", &cfg))
		return cfg
	}
	cases := []struct {
		variable string
		mod      func(*service.Config)
	}{
		{"HUB_STREAM_REPLICAS", func(c *service.Config) { c.StreamReplicas = 0 }},
		{"HUB_STREAM", func(c *service.Config) { c.Stream = "WEB.HOOKS" }},
		{"HUB_DUPLICATE_WINDOW", func(c *service.Config) { c.DuplicateWindow = time.Millisecond }},
		{"HUB_PADDLE_SECRETS", func(c *service.Config) { c.SetSecrets("paddle", "a", " ") }},
		{"HUB_SIGNATURE_TOLERANCE", func(c *service.Config) { c.SignatureTolerance = 0 }},
		{"HUB_MAX_BODY_BYTES", func(c *service.Config) { c.MaxBodyBytes = 10 }},
		{"HUB_SHUTDOWN_TIMEOUT", func(c *service.Config) { c.ShutdownTimeout = -time.Second }},
		{"HUB_ADMIN_MAX_CONNS", func(c *service.Config) { c.AdminMaxConns = 0 }},
		{"HUB_ADMIN_MAX_CONNS", func(c *service.Config) { c.AdminMaxConns = 1000001 }},
		{"HUB_LOG_LEVEL", func(c *service.Config) { c.LogLevel = "loud" }},
		{"HUB_DATABASE_MAX_CONNS", func(c *service.Config) { c.DatabaseMaxConns = 1 }},
		{"HUB_STREAM_MAX_AGE", func(c *service.Config) { c.StreamMaxAge = time.Second }},
		{"HUB_CONSOLE_READONLY_TOKEN", func(c *service.Config) {
			c.AdminToken, c.ConsoleReadOnlyToken = strings.Repeat("a", 32), "short"
		}},
		{"HUB_CONSOLE_READONLY_TOKEN", func(c *service.Config) {
			c.AdminToken, c.ConsoleReadOnlyToken = strings.Repeat("a", 32), strings.Repeat("a", 32)
		}},
		{"HUB_CONSOLE_READONLY_TOKEN", func(c *service.Config) { c.ConsoleReadOnlyToken = strings.Repeat("r", 32) }},
		{"HUB_BACKFILL_INTERVAL", func(c *service.Config) { c.BackfillInterval = time.Second }},
		{"HUB_BACKFILL_WINDOW", func(c *service.Config) { c.BackfillInterval, c.BackfillWindow = time.Hour, 0 }},
		{"HUB_BACKFILL_WINDOW", func(c *service.Config) { c.BackfillInterval, c.BackfillWindow = 2*time.Hour, time.Hour }},
		{"HUB_BACKFILL_WINDOW", func(c *service.Config) { c.BackfillInterval, c.BackfillWindow = time.Hour, time.Hour }},
		{"HUB_GITHUB_HOOK", func(c *service.Config) { c.GitHubToken = "ghp_x" }},
		{"HUB_GITHUB_TOKEN", func(c *service.Config) { c.GitHubHook = "repos/o/r/hooks/1" }},
	}
	for _, c := range cases {
		t.Run(c.variable, func(t *testing.T) {
			cfg := base()
			c.mod(&cfg)
			err := cfg.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), c.variable)
		})
	}
}

// A bare variable meant for another program never configures the hub.
func TestNoUnprefixedFallback(t *testing.T) {
	t.Setenv("HTTP_ADDR", ":1234")
	t.Setenv("DATABASE_URL", "postgres://elsewhere/db")
	cfg, err := service.LoadConfig()
	require.NoError(t, err)
	require.Equal(t, ":8080", cfg.HTTPAddr)
	require.Equal(t, "postgres://postgres@127.0.0.1:5432/hub?sslmode=disable", cfg.DatabaseURL)
}

// configDoc is the document whose tables list the configuration variables.
const configDoc = "../../docs/configuration.md"

// documentedVariables returns the variables the rows of configDoc's tables
// name in their first column, whatever the headings and tables they are
// grouped under.
func documentedVariables(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile(configDoc)
	require.NoError(t, err)
	vars := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		// A row: | `HUB_X` | default | meaning |
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "| `")
		if !ok {
			continue
		}
		name, _, ok := strings.Cut(rest, "` |")
		if ok && strings.HasPrefix(name, service.EnvPrefix+"_") {
			require.False(t, vars[name], "docs/configuration.md has two rows for %s", name)
			vars[name] = true
		}
	}
	require.NotEmpty(t, vars, "docs/configuration.md has no configuration table")
	return vars
}

// The configuration tables of docs/configuration.md document every
// variable, and only variables the hub reads.
func TestDocsDocumentEveryVariable(t *testing.T) {
	documented := documentedVariables(t)
	typ := reflect.TypeFor[service.Config]()
	for i := range typ.NumField() {
		if typ.Field(i).Tag.Get("ignored") == "true" {
			continue
		}
		key := typ.Field(i).Tag.Get("envconfig")
		require.True(t, documented[key], "docs/configuration.md has no table row for %s", key)
	}
	// The secrets variables derived from the provider registry too.
	read := map[string]bool{service.SecretsVar("standard_<name>"): true}
	for _, v := range service.EnvVars() {
		require.True(t, documented[v.Key], "docs/configuration.md has no table row for %s", v.Key)
		read[v.Key] = true
	}
	for key := range documented {
		require.True(t, read[key], "docs/configuration.md has a row for %s, which the hub does not read", key)
	}
}

// A backfill source needs its API credentials and the provider's webhook
// secrets; each mistake names the variable.
func TestBackfillSourceNamesTheVariable(t *testing.T) {
	var cfg service.Config
	require.NoError(t, envconfig.Process("", &cfg))
	require.Equal(t, 72*time.Hour, cfg.BackfillWindow)
	require.Equal(t, "https://api.stripe.com", cfg.StripeAPIURL)
	require.Equal(t, "https://api.paddle.com", cfg.PaddleAPIURL)
	require.Equal(t, "https://api.github.com", cfg.GitHubAPIURL)
	_, err := cfg.BackfillSource("stripe", nil)
	require.ErrorIs(t, err, service.ErrNoBackfillCredentials)
	require.ErrorContains(t, err, "HUB_STRIPE_API_KEY")
	_, err = cfg.BackfillSource("paddle", nil)
	require.ErrorContains(t, err, "HUB_PADDLE_API_KEY")
	_, err = cfg.BackfillSource("github", nil)
	require.ErrorContains(t, err, "HUB_GITHUB_TOKEN")
	_, err = cfg.BackfillSource("clerk", nil)
	require.ErrorContains(t, err, "no backfill for provider")
	cfg.StripeAPIKey = "sk_test_x"
	_, err = cfg.BackfillSource("stripe", nil)
	require.ErrorContains(t, err, "HUB_STRIPE_SECRETS")
	cfg.SetSecrets("stripe", "whsec_x")
	cfg.StripeAPIURL = "api.stripe.com"
	_, err = cfg.BackfillSource("stripe", nil)
	require.ErrorContains(t, err, "HUB_STRIPE_API_URL")
	cfg.StripeAPIURL = "https://api.stripe.com/"
	src, err := cfg.BackfillSource("stripe", nil)
	require.NoError(t, err)
	require.Equal(t, "stripe", src.Provider())
	srcs, err := cfg.BackfillSources(nil)
	require.NoError(t, err)
	require.Len(t, srcs, 1)

	// GitHub: the token and the hook, and the webhook secrets; its source
	// fetches payloads and can redeliver.
	cfg.GitHubToken, cfg.GitHubHook = "ghp_x", "repos/octo/hello/hooks/1"
	_, err = cfg.BackfillSource("github", nil)
	require.ErrorContains(t, err, "HUB_GITHUB_SECRETS")
	cfg.SetSecrets("github", "gh_secret")
	cfg.GitHubHook = "hooks/1"
	_, err = cfg.BackfillSource("github", nil)
	require.ErrorContains(t, err, "HUB_GITHUB_HOOK")
	cfg.GitHubHook = "repos/octo/hello/hooks/1"
	src, err = cfg.BackfillSource("github", nil)
	require.NoError(t, err)
	require.Equal(t, "github", src.Provider())
	require.Implements(t, (*backfill.Fetcher)(nil), src)
	require.Implements(t, (*backfill.Redeliverer)(nil), src)
	srcs, err = cfg.BackfillSources(nil)
	require.NoError(t, err)
	require.Len(t, srcs, 2)
}

// Each built-in provider's HUB_<NAME>_SECRETS is derived from the provider
// registry: read by LoadConfig, listed by EnvVars (after
// HUB_DUPLICATE_WINDOW), filled in by WithDevSecrets, named in errors.
func TestSecretsVariablesFromTheRegistry(t *testing.T) {
	var keys []string
	for _, v := range service.EnvVars() {
		keys = append(keys, v.Key)
	}
	i := slices.Index(keys, "HUB_DUPLICATE_WINDOW")
	require.GreaterOrEqual(t, i, 0)
	want := []string{"HUB_PADDLE_SECRETS", "HUB_CLERK_SECRETS", "HUB_STRIPE_SECRETS", "HUB_GITHUB_SECRETS", "HUB_SHOPIFY_SECRETS", "HUB_TWILIO_SECRETS"}
	require.Equal(t, want, keys[i+1:i+1+len(want)])
	require.Equal(t, "HUB_TWILIO_TYPES", keys[i+1+len(want)])
	require.Contains(t, service.ErrNoProviders.Error(), strings.Join(want, ", ")+", HUB_STANDARD_PROVIDERS")

	t.Setenv("HUB_STRIPE_SECRETS", "whsec_a,whsec_b")
	t.Setenv("HUB_SHOPIFY_SECRETS", " ")
	cfg, err := service.LoadConfig()
	require.NoError(t, err)
	require.Equal(t, []string{"whsec_a", "whsec_b"}, cfg.Secrets["stripe"])
	require.Empty(t, cfg.Secrets["shopify"])

	t.Setenv("HUB_GITHUB_SECRETS", "a,")
	_, err = service.LoadConfig()
	require.ErrorContains(t, err, "HUB_GITHUB_SECRETS has an empty secret at position 2")

	filled := cfg.WithDevSecrets()
	require.Equal(t, []string{"clerk", "github", "paddle", "shopify", "twilio"}, filled)
	for _, p := range provider.Registry() {
		if p.Secrets != "" {
			require.NotEmpty(t, cfg.ProviderSecrets()[p.Name], p.Name)
		}
	}
}
