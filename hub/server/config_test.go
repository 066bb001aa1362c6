package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/server"
)

func validConfig() server.Config {
	reg := prometheus.NewRegistry()
	return server.Config{
		Providers: []provider.Provider{nil}, // Validate counts them only
		Ingester:  memoryIngester{},
		Ready:     func(context.Context) error { return nil },
		Metrics:   metrics.New(reg),
	}
}

func TestConfigWithDefaults(t *testing.T) {
	c := validConfig().WithDefaults()
	require.NoError(t, c.Validate())
	require.Equal(t, server.DefaultMaxBodyBytes, c.MaxBodyBytes)
	require.Equal(t, server.DefaultCommitTimeout, c.CommitTimeout)
	require.Equal(t, server.DefaultMaxInflight, c.MaxInflight)
	require.Equal(t, "unknown", c.NATSStatus())
	require.NotNil(t, c.Now)
	require.NotNil(t, c.Logger)
	require.NotNil(t, c.Traffic)

	set := validConfig()
	set.MaxBodyBytes, set.CommitTimeout, set.MaxInflight = 10, time.Second, 3
	c = set.WithDefaults()
	require.Equal(t, 10, c.MaxBodyBytes)
	require.Equal(t, time.Second, c.CommitTimeout)
	require.Equal(t, 3, c.MaxInflight)
}

func TestConfigValidateNamesTheField(t *testing.T) {
	cases := []struct {
		want string
		mod  func(*server.Config)
	}{
		{"server: Providers is required", func(c *server.Config) { c.Providers = nil }},
		{"server: Ingester is required", func(c *server.Config) { c.Ingester = nil }},
		{"server: Ready is required", func(c *server.Config) { c.Ready = nil }},
		{"server: Metrics is required", func(c *server.Config) { c.Metrics = nil }},
		{"server: MaxBodyBytes must be at least 1, got -1", func(c *server.Config) { c.MaxBodyBytes = -1 }},
		{"server: CommitTimeout must be positive, got -1s", func(c *server.Config) { c.CommitTimeout = -time.Second }},
		{"server: MaxInflight must be at least 1, got -1", func(c *server.Config) { c.MaxInflight = -1 }},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			c := validConfig()
			tc.mod(&c)
			require.EqualError(t, c.WithDefaults().Validate(), tc.want)
			_, err := server.New(c)
			require.EqualError(t, err, tc.want)
		})
	}
}
