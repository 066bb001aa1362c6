package relay_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/schema"
)

func TestConfigWithDefaults(t *testing.T) {
	cases := []struct {
		name  string
		cfg   relay.Config
		check func(t *testing.T, c relay.Config)
	}{
		{"defaults", relay.Config{Stream: schema.DefaultStream, DuplicateWindow: 2 * time.Minute}, func(t *testing.T, c relay.Config) {
			require.Equal(t, relay.DefaultBatchSize, c.BatchSize)
			require.Equal(t, relay.DefaultPublishTimeout, c.PublishTimeout)
			require.Equal(t, 3*relay.DefaultPublishTimeout, c.Lease)
			require.Equal(t, relay.DefaultFastPublishTimeout, c.FastPublishTimeout)
			require.Equal(t, relay.DefaultMinBackoff, c.MinBackoff)
			require.Equal(t, relay.DefaultMaxBackoff, c.MaxBackoff)
			require.Equal(t, relay.DefaultPollInterval, c.PollInterval)
			require.Equal(t, relay.DefaultMarkDelay, c.MarkDelay)
			require.Equal(t, relay.DefaultMarkBatch, c.MarkBatch)
			require.Equal(t, relay.DefaultWorkers, c.Workers)
			require.Equal(t, relay.DefaultGrace, c.Grace)
			require.NotNil(t, c.Logger)
			require.NotNil(t, c.Now)
		}},
		{"derived from other fields", relay.Config{Stream: "S", DuplicateWindow: 8 * time.Second, PublishTimeout: time.Second}, func(t *testing.T, c relay.Config) {
			require.Equal(t, 3*time.Second, c.Lease)
			require.Equal(t, time.Second, c.FastPublishTimeout)
			require.Equal(t, 2*time.Second, c.MaxBackoff, "a quarter of the window")
		}},
		{"a tiny window", relay.Config{Stream: "S", DuplicateWindow: 100 * time.Millisecond}, func(t *testing.T, c relay.Config) {
			require.Equal(t, relay.DefaultMinBackoff, c.MaxBackoff, "never below MinBackoff")
		}},
		{"set fields are kept", relay.Config{Stream: "S", DuplicateWindow: time.Minute, BatchSize: 7, MinBackoff: time.Millisecond, MaxBackoff: time.Hour}, func(t *testing.T, c relay.Config) {
			require.Equal(t, 7, c.BatchSize)
			require.Equal(t, time.Millisecond, c.MinBackoff)
			require.Equal(t, time.Hour, c.MaxBackoff)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg.WithDefaults()
			require.NoError(t, c.Validate())
			tc.check(t, c)
		})
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	valid := relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute}
	cases := []struct {
		field string
		mod   func(*relay.Config)
	}{
		{"Stream", func(c *relay.Config) { c.Stream = "" }},
		{"DuplicateWindow", func(c *relay.Config) { c.DuplicateWindow = 0 }},
		{"BatchSize", func(c *relay.Config) { c.BatchSize = -1 }},
		{"PublishTimeout", func(c *relay.Config) {
			c.PublishTimeout, c.Lease, c.FastPublishTimeout = -time.Second, time.Second, time.Second
		}},
		{"MaxBackoff", func(c *relay.Config) { c.MinBackoff, c.MaxBackoff = time.Second, time.Millisecond }},
		{"MarkBatch", func(c *relay.Config) { c.MarkBatch = -1 }},
		{"Grace", func(c *relay.Config) { c.Grace = -time.Second }},
		{"Workers", func(c *relay.Config) { c.Workers = -1 }},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			c := valid
			tc.mod(&c)
			err := c.WithDefaults().Validate()
			require.ErrorContains(t, err, "relay: "+tc.field+" ")
			require.Equal(t, 1, strings.Count(err.Error(), "relay: "), "only %s is at fault: %v", tc.field, err)
		})
	}
	require.Error(t, relay.Config{}.Validate(), "zero fields fail until their defaults are filled in")
}

func TestKeeperConfig(t *testing.T) {
	c := relay.KeeperConfig{Stream: relay.StreamConfig{Name: schema.DefaultStream, Providers: []string{"paddle"}}}.WithDefaults()
	require.NoError(t, c.Validate())
	require.Equal(t, relay.DefaultKeeperInterval, c.Interval)
	require.Equal(t, relay.DefaultRestoreBatch, c.RestoreBatch)

	c.Stream.Providers, c.RestoreBatch = nil, -1
	err := c.Validate()
	require.ErrorContains(t, err, "keeper: Stream.Providers is required")
	require.ErrorContains(t, err, "keeper: RestoreBatch must be at least 1")
	_, err = relay.NewKeeper(nil, nil, nil, relay.KeeperConfig{})
	require.ErrorContains(t, err, "keeper: Stream.Name is required")
}
