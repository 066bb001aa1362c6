package admin_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/admin"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// While the expensive reads running hold the whole read pool, the admin
// API refuses each expensive read 429 with a Retry-After, the refusal is
// counted in hub_admission_refused_total, and once the pool is free the
// same reads are answered, a payload filter over exactly its longest
// range (since=7d) included.
func TestAdminReadsRefused429WithRetryAfter(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	o := ops.New(ops.Config{Archive: store.New(pool), Subscribers: pool, Metrics: m, ReadBudget: ops.Budget{Slots: 1}})
	adm, err := admin.New(admin.Config{Token: testAdminToken, Operator: o, Gatherer: reg, Metrics: m,
		OwnListener: true, Probes: func(fiber.Router) {}})
	require.NoError(t, err)
	do := func(method, path, body string) (*http.Response, string) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testAdminToken)
		resp, err := adm.App().Test(req, -1)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(raw)
	}
	reads := []struct {
		what, method, path, body string
	}{
		{ops.AdmitPayload, http.MethodGet, "/admin/events?since=7d&where=data.customer%3Dcus_1", ""},
		{ops.AdmitBulkPlan, http.MethodPost, "/admin/bulk", `{"action":"republish","since":"7d","where":["data.customer=cus_1"]}`},
		{ops.AdmitAuditExport, http.MethodGet, "/admin/audit?format=jsonl", ""},
	}
	held, err := o.Admit(ops.PoolReads, "test", ops.Cost{})
	require.NoError(t, err)
	for _, r := range reads {
		resp, body := do(r.method, r.path, r.body)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s: %s", r.what, body)
		require.Equal(t, "5", resp.Header.Get(fiber.HeaderRetryAfter), r.what)
		require.Contains(t, body, "expensive reads", r.what)
		require.Equal(t, 1.0, hubtest.MetricValue(t, reg, "hub_admission_refused_total", map[string]string{"pool": "reads", "what": r.what}), r.what)
	}
	held.Release()
	for _, r := range reads {
		resp, body := do(r.method, r.path, r.body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", r.what, body)
		require.Empty(t, resp.Header.Get(fiber.HeaderRetryAfter), r.what)
	}
}

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
