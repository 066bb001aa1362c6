package service_test

import (
	"os"
	"path/filepath"
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
		{"HUB_BATCH_LINGER", func(c *service.Config) { c.BatchLinger = -time.Millisecond }},
		{"HUB_BATCH_LINGER", func(c *service.Config) { c.BatchLinger = time.Second }},
		{"HUB_ADMIN_MAX_CONNS", func(c *service.Config) { c.AdminMaxConns = 0 }},
		{"HUB_ADMIN_MAX_CONNS", func(c *service.Config) { c.AdminMaxConns = 1000001 }},
		{"HUB_READ_MAX_AT_ONCE", func(c *service.Config) { c.ReadMaxAtOnce = 0 }},
		{"HUB_READ_ROWS_PER_SECOND", func(c *service.Config) { c.ReadRowsPerSecond = 10 }},
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
		{"HUB_CONSOLE_OIDC_ISSUER", func(c *service.Config) { c.ConsoleOIDCClientID = "hub" }},
		{"HUB_CONSOLE_OIDC_ISSUER", func(c *service.Config) { oidc(c); c.AdminToken = "" }},
		{"HUB_CONSOLE_OIDC_ISSUER", func(c *service.Config) { oidc(c); c.ConsoleOIDCIssuer = "http://idp.example.com" }},
		{"HUB_CONSOLE_OIDC_CLIENT_ID", func(c *service.Config) { oidc(c); c.ConsoleOIDCClientID = "" }},
		{"HUB_CONSOLE_OIDC_REDIRECT_URL", func(c *service.Config) { oidc(c); c.ConsoleOIDCRedirectURL = "" }},
		{"HUB_CONSOLE_OIDC_REDIRECT_URL", func(c *service.Config) { oidc(c); c.ConsoleOIDCRedirectURL = "https://hub.example.com/elsewhere" }},
		{"HUB_CONSOLE_OIDC_ADMINS", func(c *service.Config) { oidc(c); c.ConsoleOIDCAdmins = []string{"alice"} }},
		{"HUB_CONSOLE_OIDC_READERS", func(c *service.Config) { oidc(c); c.ConsoleOIDCReaders = []string{"group:"} }},
		{"HUB_CONSOLE_OIDC_ADMINS", func(c *service.Config) { oidc(c); c.ConsoleOIDCAdmins, c.ConsoleOIDCReaders = nil, nil }},
		{"HUB_CONSOLE_OIDC_GROUPS_CLAIM", func(c *service.Config) { oidc(c); c.ConsoleOIDCGroupsClaim = "" }},
		{"HUB_BACKFILL_INTERVAL", func(c *service.Config) { c.BackfillInterval = time.Second }},
		{"HUB_BACKFILL_WINDOW", func(c *service.Config) { c.BackfillInterval, c.BackfillWindow = time.Hour, 0 }},
		{"HUB_BACKFILL_WINDOW", func(c *service.Config) { c.BackfillInterval, c.BackfillWindow = 2*time.Hour, time.Hour }},
		{"HUB_BACKFILL_WINDOW", func(c *service.Config) { c.BackfillInterval, c.BackfillWindow = time.Hour, time.Hour }},
		{"HUB_GITHUB_HOOK", func(c *service.Config) { c.SetBackfillSetting("github", backfill.SettingToken, "ghp_x") }},
		{"HUB_GITHUB_TOKEN", func(c *service.Config) { c.SetBackfillSetting("github", backfill.SettingHook, "repos/o/r/hooks/1") }},
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

// oidc sets a valid OpenID Connect configuration of the console.
func oidc(c *service.Config) {
	c.AdminToken = strings.Repeat("a", 32)
	c.ConsoleOIDCIssuer, c.ConsoleOIDCClientID = "https://idp.example.com", "hub"
	c.ConsoleOIDCRedirectURL = "https://hub.example.com/console/oidc/callback"
	c.ConsoleOIDCAdmins, c.ConsoleOIDCReaders = []string{"alice@example.com", "group:ops"}, []string{"@example.com"}
}

// A valid OpenID Connect configuration passes, and the list variables are
// comma lists.
func TestOIDCConfig(t *testing.T) {
	t.Setenv("HUB_ADMIN_TOKEN", strings.Repeat("a", 32))
	t.Setenv("HUB_CONSOLE_OIDC_ISSUER", "https://idp.example.com")
	t.Setenv("HUB_CONSOLE_OIDC_CLIENT_ID", "hub")
	t.Setenv("HUB_CONSOLE_OIDC_REDIRECT_URL", "https://hub.example.com/console/oidc/callback")
	t.Setenv("HUB_CONSOLE_OIDC_ADMINS", "alice@example.com,group:ops")
	t.Setenv("HUB_CONSOLE_OIDC_READERS", "@example.com")
	cfg, err := service.LoadConfig()
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	o := cfg.OIDC()
	require.Equal(t, []string{"alice@example.com", "group:ops"}, o.Admins)
	require.Equal(t, []string{"@example.com"}, o.Readers)
	require.Equal(t, "groups", o.GroupsClaim)
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

// configDoc is the document holding the configuration table, from the
// repository's root.
const configDoc = "docs/configuration.md"

// The configuration table documents every variable, group by group as
// `hub --help` lists them: under each group's bold heading (**Database**),
// a table with a row for each of the group's variables.
func TestDocsDocumentEveryVariable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", configDoc))
	require.NoError(t, err)
	lines := strings.Split(string(doc), "\n")
	// table returns the rows of the table under the heading "## group".
	table := func(group string) string {
		i := slices.Index(lines, "## "+group)
		require.GreaterOrEqual(t, i, 0, "%s has no heading \"## %s\"", configDoc, group)
		var rows []string
		for _, l := range lines[i+1:] {
			if strings.HasPrefix(l, "|") {
				rows = append(rows, l)
			} else if len(rows) > 0 {
				break
			}
		}
		return strings.Join(rows, "\n")
	}
	vars := service.EnvVars()
	seen := map[string]bool{}
	for _, v := range vars {
		require.Contains(t, table(v.Group), "| `"+v.Key+"` |", "%s has no row for %s under ## %s", configDoc, v.Key, v.Group)
		seen[v.Key] = true
	}
	// Every variable Config reads is among them, those of the providers'
	// and the backfill sources' registries too.
	typ := reflect.TypeFor[service.Config]()
	for i := range typ.NumField() {
		group := typ.Field(i)
		require.True(t, group.Anonymous, "Config's field %s is not an embedded group", group.Name)
		require.NotEmpty(t, group.Tag.Get("group"), "Config's group %s has no group tag", group.Name)
		for j := range group.Type.NumField() {
			f := group.Type.Field(j)
			if f.Tag.Get("ignored") != "true" {
				require.True(t, seen[f.Tag.Get("envconfig")], "EnvVars lacks %s", f.Tag.Get("envconfig"))
			}
		}
	}
	for _, src := range backfill.Sources() {
		for _, s := range src.Settings {
			require.True(t, seen[service.BackfillVar(src.Provider, s.Key)], "EnvVars lacks %s", service.BackfillVar(src.Provider, s.Key))
		}
	}
	// And only variables the hub reads: every row of the document names
	// one of them.
	for _, line := range lines {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "| `")
		if !ok {
			continue
		}
		if name, _, ok := strings.Cut(rest, "` |"); ok && strings.HasPrefix(name, service.EnvPrefix+"_") {
			require.True(t, seen[name], "%s has a row for %s, which the hub does not read", configDoc, name)
		}
	}
}

// A backfill source needs its API credentials and the provider's webhook
// secrets; each mistake names the variable.
func TestBackfillSourceNamesTheVariable(t *testing.T) {
	var cfg service.Config
	require.NoError(t, envconfig.Process("", &cfg))
	require.Equal(t, 72*time.Hour, cfg.BackfillWindow)
	require.Equal(t, "https://api.stripe.com", cfg.BackfillSetting("stripe", backfill.SettingAPIURL))
	require.Equal(t, "https://api.paddle.com", cfg.BackfillSetting("paddle", backfill.SettingAPIURL))
	require.Equal(t, "https://api.github.com", cfg.BackfillSetting("github", backfill.SettingAPIURL))
	_, err := cfg.BackfillSource("stripe", nil)
	require.ErrorIs(t, err, service.ErrNoBackfillCredentials)
	require.ErrorContains(t, err, "HUB_STRIPE_API_KEY")
	_, err = cfg.BackfillSource("paddle", nil)
	require.ErrorContains(t, err, "HUB_PADDLE_API_KEY")
	_, err = cfg.BackfillSource("github", nil)
	require.ErrorContains(t, err, "HUB_GITHUB_TOKEN")
	_, err = cfg.BackfillSource("clerk", nil)
	require.ErrorContains(t, err, "no backfill for provider")
	// Each step sets what the last one's error named; the source comes
	// once nothing is missing (want empty), then BackfillSources has
	// sources of them. GitHub needs the token and the hook, and the
	// webhook secrets; its source fetches payloads and can redeliver.
	var src backfill.Source
	for _, step := range []struct {
		provider string
		set      func(*service.Config)
		want     string
		sources  int
	}{
		{"stripe", func(c *service.Config) { c.SetBackfillSetting("stripe", backfill.SettingAPIKey, "sk_test_x") }, "HUB_STRIPE_SECRETS", 0},
		{"stripe", func(c *service.Config) {
			c.SetSecrets("stripe", "whsec_x")
			c.SetBackfillSetting("stripe", backfill.SettingAPIURL, "api.stripe.com")
		}, "HUB_STRIPE_API_URL", 0},
		{"stripe", func(c *service.Config) {
			c.SetBackfillSetting("stripe", backfill.SettingAPIURL, "https://api.stripe.com/")
		}, "", 1},
		{"github", func(c *service.Config) {
			c.SetBackfillSetting("github", backfill.SettingToken, "ghp_x")
			c.SetBackfillSetting("github", backfill.SettingHook, "repos/octo/hello/hooks/1")
		}, "HUB_GITHUB_SECRETS", 0},
		{"github", func(c *service.Config) {
			c.SetSecrets("github", "gh_secret")
			c.SetBackfillSetting("github", backfill.SettingHook, "hooks/1")
		}, "HUB_GITHUB_HOOK", 0},
		{"github", func(c *service.Config) {
			c.SetBackfillSetting("github", backfill.SettingHook, "repos/octo/hello/hooks/1")
		}, "", 2},
	} {
		step.set(&cfg)
		src, err = cfg.BackfillSource(step.provider, nil)
		if step.want != "" {
			require.ErrorContains(t, err, step.want)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, step.provider, src.Provider())
		srcs, err := cfg.BackfillSources(nil)
		require.NoError(t, err)
		require.Len(t, srcs, step.sources)
	}
	require.Implements(t, (*backfill.Fetcher)(nil), src)
	require.Implements(t, (*backfill.Redeliverer)(nil), src)
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

// Each backfill source's variables are derived from the backfill
// registry: listed by EnvVars (opening the backfill group, with the
// registry's defaults and descriptions), read by LoadConfig, hidden as
// credentials, named in errors.
func TestBackfillVariablesFromTheRegistry(t *testing.T) {
	var got []service.EnvVar
	for _, v := range service.EnvVars() {
		if v.Group == "Backfill" {
			got = append(got, v)
		}
	}
	want := []service.EnvVar{
		{Key: "HUB_STRIPE_API_KEY"}, {Key: "HUB_STRIPE_API_URL", Default: "https://api.stripe.com"},
		{Key: "HUB_PADDLE_API_KEY"}, {Key: "HUB_PADDLE_API_URL", Default: "https://api.paddle.com"},
		{Key: "HUB_GITHUB_TOKEN"}, {Key: "HUB_GITHUB_HOOK"}, {Key: "HUB_GITHUB_API_URL", Default: "https://api.github.com"},
		{Key: "HUB_BACKFILL_INTERVAL", Default: "0"}, {Key: "HUB_BACKFILL_WINDOW", Default: "72h"},
		{Key: "HUB_BACKFILL_MAX_PAGES", Default: "1000"}, {Key: "HUB_BACKFILL_MAX_EVENTS", Default: "200000"},
		{Key: "HUB_BACKFILL_MAX_RUN_TIME", Default: "30m"},
	}
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].Key, got[i].Key)
		require.Equal(t, want[i].Default, got[i].Default, want[i].Key)
		require.NotEmpty(t, got[i].Desc, want[i].Key)
	}
	require.Equal(t, "Stripe secret or restricted key (read access to events) for backfill (hub backfill, HUB_BACKFILL_INTERVAL); never logged", got[0].Desc)
	require.Equal(t, "GitHub token that can read the webhook's deliveries (HUB_GITHUB_HOOK), for backfill; never logged", got[4].Desc)
	require.Equal(t, "HUB_STRIPE_API_KEY, HUB_PADDLE_API_KEY, HUB_GITHUB_TOKEN with HUB_GITHUB_HOOK", service.BackfillCredentialVars())

	t.Setenv("HUB_GITHUB_TOKEN", "ghp_secret")
	t.Setenv("HUB_GITHUB_HOOK", "orgs/o/hooks/1")
	t.Setenv("HUB_PADDLE_API_URL", "https://sandbox-api.paddle.com")
	t.Setenv("HUB_STRIPE_API_URL", "") // empty is the default
	cfg, err := service.LoadConfig()
	require.NoError(t, err)
	require.Equal(t, "ghp_secret", cfg.BackfillSetting("github", backfill.SettingToken))
	require.Equal(t, "orgs/o/hooks/1", cfg.BackfillSetting("github", backfill.SettingHook))
	require.Equal(t, "https://sandbox-api.paddle.com", cfg.BackfillSetting("paddle", backfill.SettingAPIURL))
	require.Equal(t, "https://api.stripe.com", cfg.BackfillSetting("stripe", backfill.SettingAPIURL))
	require.Contains(t, cfg.BackfillSecrets(), "ghp_secret")

	// A copy keeps its own settings.
	other := cfg
	other.SetBackfillSetting("github", backfill.SettingToken, "")
	require.Equal(t, "ghp_secret", cfg.BackfillSetting("github", backfill.SettingToken))

	t.Setenv("HUB_GITHUB_HOOK", "")
	_, err = service.LoadConfig()
	require.ErrorContains(t, err, "HUB_GITHUB_HOOK is required with HUB_GITHUB_TOKEN: the webhook whose deliveries to backfill")
}

// The configuration refuses a backfill API URL that would send a key in
// clear (http:// to a host other than loopback), naming the variable;
// loopback http stays allowed for local tests.
func TestValidateBackfillAPIURLs(t *testing.T) {
	var cfg service.Config
	require.NoError(t, envconfig.Process("", &cfg))
	cfg.DatabaseURL = "postgres://postgres@127.0.0.1:5432/x"
	require.NoError(t, cfg.Validate())
	for _, c := range []struct {
		set  func(*service.Config, string)
		name string
	}{
		{func(c *service.Config, u string) { c.SetBackfillSetting("stripe", backfill.SettingAPIURL, u) }, "HUB_STRIPE_API_URL"},
		{func(c *service.Config, u string) { c.SetBackfillSetting("paddle", backfill.SettingAPIURL, u) }, "HUB_PADDLE_API_URL"},
		{func(c *service.Config, u string) { c.SetBackfillSetting("github", backfill.SettingAPIURL, u) }, "HUB_GITHUB_API_URL"},
	} {
		bad := cfg
		c.set(&bad, "http://api.example.com")
		err := bad.Validate()
		require.ErrorContains(t, err, c.name)
		require.ErrorContains(t, err, "plain http")
		for _, ok := range []string{"http://127.0.0.1:12111", "http://localhost:8080/", "https://api.example.com/api/v3"} {
			good := cfg
			c.set(&good, ok)
			require.NoError(t, good.Validate(), ok)
		}
	}
}
