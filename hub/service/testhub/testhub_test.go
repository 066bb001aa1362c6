package testhub_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// productionEnv is a shell set up to run the hub in production.
var productionEnv = map[string]string{
	"HUB_NATS_URL":                "nats://10.0.0.1:4222",
	"HUB_DATABASE_URL":            "postgres://x@10.0.0.9/prod",
	"HUB_HTTP_ADDR":               ":80",
	"HUB_ADMIN_ADDR":              ":9090",
	"HUB_ADMIN_TOKEN":             strings.Repeat("p", 40),
	"HUB_BATCH_MAX":               "1",
	"HUB_LOG_LEVEL":               "debug",
	"HUB_LOG_FORMAT":              "text",
	"HUB_OTEL_ENABLED":            "true",
	"HUB_STRIPE_SECRETS":          "whsec_production",
	"HUB_PADDLE_SECRETS":          "pdl_production",
	"HUB_STRIPE_API_KEY":          "sk_live_production",
	"HUB_BACKFILL_INTERVAL":       "1h",
	"HUB_STREAM":                  "PRODUCTION",
	"HUB_STREAM_REPLICAS":         "3",
	"HUB_SHUTDOWN_TIMEOUT":        "2m",
	"HUB_STANDARD_PROVIDERS":      "resend",
	"HUB_STANDARD_RESEND_SECRETS": "whsec_cmVzZW5kLXByb2R1Y3Rpb24tc2VjcmV0",
}

// A shell set up for production changes nothing a test's hub runs with:
// testhub's configuration is the defaults, as the hub loads them in an
// empty environment.
func TestConfigIgnoresTheEnvironment(t *testing.T) {
	for k, v := range productionEnv {
		t.Setenv(k, v)
	}
	cfg := testhub.Config(t, "postgres://postgres@127.0.0.1:5432/test", "nats://127.0.0.1:4711")
	require.Equal(t, "postgres://postgres@127.0.0.1:5432/test", cfg.DatabaseURL)
	require.Equal(t, "nats://127.0.0.1:4711", cfg.NATSURL)
	require.Equal(t, "127.0.0.1:0", cfg.HTTPAddr)
	require.Empty(t, cfg.AdminAddr)
	require.Empty(t, cfg.AdminToken)
	require.Equal(t, 64, cfg.BatchMax)
	require.Equal(t, "info", cfg.LogLevel)
	require.Equal(t, "json", cfg.LogFormat)
	require.False(t, cfg.OTelEnabled)
	require.Empty(t, cfg.ProviderSecrets())
	require.Empty(t, cfg.BackfillSetting("stripe", backfill.SettingAPIKey))
	require.Zero(t, cfg.BackfillInterval)
	require.Equal(t, "WEBHOOKS", cfg.Stream)
	require.Equal(t, 1, cfg.StreamReplicas)
	require.Empty(t, cfg.StandardProviders)

	// And it is what the hub loads when nothing is set.
	clearHubEnv(t)
	loaded, err := service.LoadConfig()
	require.NoError(t, err)
	require.Equal(t, loaded, testhub.Defaults(t))
}

// A test that loads the configuration from the environment starts from a
// cleared one (hubtest.ClearEnv in TestMain).
func TestClearEnv(t *testing.T) {
	for k, v := range productionEnv {
		t.Setenv(k, v)
	}
	t.Setenv("HUB_TEST_DATABASE_URL", hubtest.AdminURL())
	t.Setenv("CREDITS_NATS_URL", "nats://10.0.0.1:4222")
	t.Setenv("PATH_LIKE_OTHER", "kept")
	hubtest.ClearEnv("CREDITS_")
	for k := range productionEnv {
		_, ok := os.LookupEnv(k)
		require.False(t, ok, "%s is still set", k)
	}
	_, ok := os.LookupEnv("CREDITS_NATS_URL")
	require.False(t, ok)
	require.Equal(t, hubtest.AdminURL(), os.Getenv("HUB_TEST_DATABASE_URL"), "the tests' own variables stay")
	require.Equal(t, "kept", os.Getenv("PATH_LIKE_OTHER"))
	cfg, err := service.LoadConfig()
	require.NoError(t, err)
	require.Equal(t, testhub.Defaults(t), cfg)
}

// clearHubEnv unsets every HUB_* variable for the test (restored when it
// ends).
func clearHubEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, hubtest.HubEnvPrefix) {
			t.Setenv(k, "")
			require.NoError(t, os.Unsetenv(k))
		}
	}
}
