package admin_test

import (
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/admin"
	"github.com/hookhub/hookhub/hub/metrics"
)

func validConfig() admin.Config {
	reg := prometheus.NewRegistry()
	return admin.Config{Gatherer: reg, Metrics: metrics.New(reg)}
}

func TestConfigWithDefaults(t *testing.T) {
	c := validConfig().WithDefaults()
	require.NoError(t, c.Validate())
	require.Equal(t, admin.DefaultMaxConns, c.MaxConns)
	require.NotNil(t, c.Bodies)
	require.NotNil(t, c.Logger)

	set := validConfig()
	set.MaxConns = 7
	require.Equal(t, 7, set.WithDefaults().MaxConns)
}

func TestConfigValidateNamesTheField(t *testing.T) {
	cases := []struct {
		want string
		mod  func(*admin.Config)
	}{
		{"admin: Gatherer is required", func(c *admin.Config) { c.Gatherer = nil }},
		{"admin: Metrics is required", func(c *admin.Config) { c.Metrics = nil }},
		{"admin: MaxConns must be at least 1, got -1", func(c *admin.Config) { c.MaxConns = -1 }},
		{"admin: Pprof needs OwnListener", func(c *admin.Config) { c.Pprof = true }},
		{"admin: Probes is required with OwnListener", func(c *admin.Config) { c.OwnListener = true }},
		{"admin: Token needs an Operator", func(c *admin.Config) { c.Token = "secret" }},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			c := validConfig()
			tc.mod(&c)
			require.EqualError(t, c.WithDefaults().Validate(), tc.want)
			_, err := admin.New(c)
			require.EqualError(t, err, tc.want)
		})
	}
}

// Serve needs the admin listener's own app.
func TestServeNeedsOwnListener(t *testing.T) {
	s, err := admin.New(validConfig())
	require.NoError(t, err)
	require.Nil(t, s.App())
	require.EqualError(t, s.Serve(nil), "admin: Serve needs Config.OwnListener")

	c := validConfig()
	c.OwnListener, c.Pprof = true, true
	c.Probes = func(r fiber.Router) {}
	s, err = admin.New(c)
	require.NoError(t, err)
	require.NotNil(t, s.App())
}
