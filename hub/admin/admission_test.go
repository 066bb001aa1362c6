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
