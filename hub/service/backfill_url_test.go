package service_test

import (
	"testing"

	"github.com/kelseyhightower/envconfig"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/service"
)

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
