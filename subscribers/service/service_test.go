package service_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/service"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

type testConfig struct {
	service.Common
	HTTPAddr string `split_words:"true" default:":9199"`
}

func program(cfg *testConfig) service.Program {
	p := service.New("demo", cfg, &cfg.Common, &cfg.HTTPAddr, nil)
	p.Setup = func(context.Context, service.Deps) error { return nil }
	return p
}

// Variables are read with the service's prefix only: a bare DATABASE_URL
// (or NATS_URL, HTTP_ADDR) in the environment is ignored, unlike envconfig
// with envconfig:"..." tags, which falls back to the unprefixed name.
func TestLoad(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		check   func(t *testing.T, c *testConfig)
		wantErr []string
	}{
		{"defaults", nil, func(t *testing.T, c *testConfig) {
			require.Equal(t, "postgres://postgres@127.0.0.1:5432/hub?sslmode=disable", c.DatabaseURL)
			require.Equal(t, "nats://127.0.0.1:4222", c.NatsURL)
			require.Equal(t, schema.DefaultStream, c.Stream)
			require.Equal(t, ":9199", c.HTTPAddr)
			require.Equal(t, 4, c.Concurrency)
			require.Equal(t, 5, c.MaxDeliver)
		}, nil},
		{"prefixed variables", map[string]string{
			"DEMO_DATABASE_URL": "postgres://u@db:5432/x", "DEMO_NATS_URL": "nats://n:4222", "DEMO_STREAM": "EVENTS",
			"DEMO_HTTP_ADDR": "127.0.0.1:0", "DEMO_CONCURRENCY": "2", "DEMO_MAX_DELIVER": "9",
		}, func(t *testing.T, c *testConfig) {
			require.Equal(t, "postgres://u@db:5432/x", c.DatabaseURL)
			require.Equal(t, "nats://n:4222", c.NatsURL)
			require.Equal(t, "EVENTS", c.Stream)
			require.Equal(t, "127.0.0.1:0", c.HTTPAddr)
			require.Equal(t, 2, c.Concurrency)
			require.Equal(t, 9, c.MaxDeliver)
		}, nil},
		{"unprefixed variables are ignored", map[string]string{
			"DATABASE_URL": "postgres://other@elsewhere/db", "NATS_URL": "nats://elsewhere:4222", "HTTP_ADDR": ":1", "STREAM": "OTHER",
		}, func(t *testing.T, c *testConfig) {
			require.Equal(t, "postgres://postgres@127.0.0.1:5432/hub?sslmode=disable", c.DatabaseURL)
			require.Equal(t, "nats://127.0.0.1:4222", c.NatsURL)
			require.Equal(t, ":9199", c.HTTPAddr)
			require.Equal(t, schema.DefaultStream, c.Stream)
		}, nil},
		{"invalid values", map[string]string{
			"DEMO_CONCURRENCY": "0", "DEMO_MAX_DELIVER": "0", "DEMO_ACK_WAIT": "10ms", "DEMO_LOG_LEVEL": "loud",
			"DEMO_LOG_FORMAT": "xml", "DEMO_DATABASE_URL": "", "DEMO_HTTP_ADDR": "",
		}, nil, []string{"DEMO_CONCURRENCY", "DEMO_MAX_DELIVER", "DEMO_ACK_WAIT", "DEMO_LOG_LEVEL", "DEMO_LOG_FORMAT", "DEMO_DATABASE_URL", "DEMO_HTTP_ADDR"}},
		{"the library's bounds", map[string]string{"DEMO_ACK_WAIT": "500ms", "DEMO_MAX_ACK_PENDING": "10000"}, func(t *testing.T, c *testConfig) {
			require.Equal(t, 500*time.Millisecond, c.AckWait)
			require.Equal(t, subscriber.MaxMaxAckPending, c.MaxAckPending)
		}, nil},
		{"every library setting invalid", map[string]string{
			"DEMO_STREAM": "WEB.HOOKS", "DEMO_CONCURRENCY": "2000", "DEMO_MAX_DELIVER": "-1", "DEMO_ACK_WAIT": "10ms",
			"DEMO_MAX_ACK_PENDING": "20000", "DEMO_SHUTDOWN_TIMEOUT": "0s",
		}, nil, []string{
			`DEMO_STREAM "WEB.HOOKS" must be a stream name`, "DEMO_CONCURRENCY must be between 1 and 1024, got 2000",
			"DEMO_MAX_DELIVER must be at least 1, got -1", "DEMO_ACK_WAIT must be at least 100ms, got 10ms",
			"DEMO_MAX_ACK_PENDING must be between", "DEMO_SHUTDOWN_TIMEOUT must be positive, got 0s",
		}},
		{"pool smaller than concurrency", map[string]string{"DEMO_CONCURRENCY": "16"}, nil, []string{"DEMO_DATABASE_MAX_CONNS must be at least CONCURRENCY + 2 (18)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var cfg testConfig
			err := program(&cfg).Load()
			if len(c.wantErr) > 0 {
				for _, w := range c.wantErr {
					require.ErrorContains(t, err, w)
				}
				return
			}
			require.NoError(t, err)
			c.check(t, &cfg)
		})
	}
}

func TestMainUsage(t *testing.T) {
	var cfg testConfig
	var out, errOut bytes.Buffer
	require.Equal(t, 0, service.Main(program(&cfg), []string{"--help"}, &out, &errOut))
	require.Contains(t, out.String(), "DEMO_DATABASE_URL")
	require.Contains(t, out.String(), "DEMO_HTTP_ADDR")
	out.Reset()
	require.Equal(t, 2, service.Main(program(&cfg), []string{"run"}, &out, &errOut))
	require.Contains(t, errOut.String(), `unexpected argument "run"`)
}
