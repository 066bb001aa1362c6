package admin_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/admin"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
)

// adminOnDB is an admin API over real Ops and store on a fresh database,
// and how to send it a request with a bearer token ("": none).
func adminOnDB(t *testing.T) (*pgxpool.Pool, *admin.Server, *ops.Ops, func(token, method, path, body string) (int, string)) {
	t.Helper()
	pool, _ := hubdb.Pool(t)
	o := ops.New(ops.Config{Archive: store.New(pool), Subscribers: pool})
	reg := prometheus.NewRegistry()
	adm, err := admin.New(admin.Config{Token: testAdminToken, Operator: o, Gatherer: reg, Metrics: metrics.New(reg),
		OwnListener: true, Probes: func(fiber.Router) {}})
	require.NoError(t, err)
	return pool, adm, o, func(token, method, path, body string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return testRequest(t, adm.App(), req)
	}
}

// An action through the admin API is recorded in the audit trail as the
// token's (by its fingerprint, never the token), and the API reads the
// trail back (JSON and JSON lines) but offers no way to write it.
func TestAdminActionsAreAudited(t *testing.T) {
	t.Parallel()
	_, _, o, send := adminOnDB(t)
	do := func(method, path, body string) (int, string) {
		t.Helper()
		return send(testAdminToken, method, path, body)
	}
	sum := sha256.Sum256([]byte(testAdminToken))
	fp := "token " + hex.EncodeToString(sum[:4])

	code, body := do(http.MethodPost, "/admin/purge", `{"older_than":"30d","dry_run":true}`)
	require.Equal(t, http.StatusOK, code, body)
	code, body = do(http.MethodPost, "/admin/purge", `{"older_than":"30d","dry_run":false}`)
	require.Equal(t, http.StatusOK, code, body)
	code, body = do(http.MethodPost, "/admin/dlq/nobody/redrive", `{"all":true}`)
	require.Equal(t, http.StatusNotFound, code, body)

	code, body = do(http.MethodGet, "/admin/audit", "")
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, testAdminToken)
	var page struct {
		Entries []hub.AuditEntry `json:"entries"`
		Next    string           `json:"next"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &page))
	require.Len(t, page.Entries, 2, "the dry run is not recorded")
	redrive, purge := page.Entries[0], page.Entries[1]
	want := hub.Actor{Kind: hub.ActorToken, Name: fp, Role: "admin", Via: "admin-api"}
	require.Equal(t, want, purge.Actor)
	require.Equal(t, ops.ActionPurge, purge.Action)
	require.Equal(t, hub.AuditOK, purge.Outcome)
	require.JSONEq(t, `{"older_than":"30d","batch":5000,"include_failed":false}`, string(purge.Params))
	require.Equal(t, want, redrive.Actor)
	require.Equal(t, ops.ActionRedrive, redrive.Action)
	require.Equal(t, hub.AuditError, redrive.Outcome)
	require.Contains(t, redrive.Error, "unknown subscriber")

	code, body = do(http.MethodGet, "/admin/audit?action=purge&since=1h", "")
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &page))
	require.Len(t, page.Entries, 1)
	code, body = do(http.MethodGet, "/admin/audit?limit=1", "")
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &page))
	require.Equal(t, ops.AuditCursor(redrive), page.Next)
	code, _ = do(http.MethodGet, "/admin/audit?before=nope", "")
	require.Equal(t, http.StatusBadRequest, code)
	code, _ = do(http.MethodGet, "/admin/audit?format=xml", "")
	require.Equal(t, http.StatusBadRequest, code)

	code, body = do(http.MethodGet, "/admin/audit?format=jsonl", "")
	require.Equal(t, http.StatusOK, code, body)
	sc := bufio.NewScanner(strings.NewReader(body))
	var lines []hub.AuditEntry
	for sc.Scan() {
		var e hub.AuditEntry
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), sc.Text())
		lines = append(lines, e)
	}
	require.Len(t, lines, 2)
	require.Equal(t, purge.ID, lines[1].ID)

	// No route writes to the trail.
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		for _, p := range []string{"/admin/audit", "/admin/audit/1", "/admin/audit?format=jsonl"} {
			code, _ := do(m, p, `{"action":"replay","actor":{"name":"mallory"}}`)
			require.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, code, "%s %s", m, p)
		}
	}
	es, err := o.ListAudit(t.Context(), ops.AuditFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, es, 2)
}

// Every POST route of the admin API records a request it refuses (bad
// input, out of bounds, unknown names) in the audit trail, once, as
// refused or by its action, with the token's actor; a route missing from
// this table fails the test. An anonymous request is not recorded.
func TestAdminRefusalsAreAudited(t *testing.T) {
	t.Parallel()
	_, adm, o, as := adminOnDB(t)
	send := func(method, path, body string, token bool) (int, string) {
		t.Helper()
		if token {
			return as(testAdminToken, method, path, body)
		}
		return as("", method, path, body)
	}
	do := func(path, body string, token bool) int {
		t.Helper()
		code, _ := send(http.MethodPost, path, body, token)
		return code
	}
	cases := []struct {
		route, path, body, action string
	}{
		{"/admin/replay", "/admin/replay", `{"subscriber":"credits","since":"not a time"}`, ops.ActionReplay},
		{"/admin/replay", "/admin/replay", `{not json`, ops.ActionReplay},
		{"/admin/republish", "/admin/republish", `{"since":"1h","until":"2h"}`, ops.ActionRepublish},
		{"/admin/bulk", "/admin/bulk", `{"action":"replay","subscriber":"credits"}`, ops.ActionBulk},
		{"/admin/dlq/:subscriber/redrive", "/admin/dlq/nobody/redrive", `{}`, ops.ActionRedrive},
		{"/admin/purge", "/admin/purge", `{"older_than":"1h"}`, ops.ActionPurge},
		{"/admin/sessions/revoke", "/admin/sessions/revoke", `{}`, ops.ActionSessionRevoke},
		{"/admin/sessions/revoke", "/admin/sessions/revoke", `{"all":`, ops.ActionSessionRevoke},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.route] = true
		before, err := o.ListAudit(t.Context(), ops.AuditFilter{Limit: ops.MaxAuditLimit})
		require.NoError(t, err)
		code := do(tc.path, tc.body, true)
		require.GreaterOrEqual(t, code, 400, tc.path)
		require.Less(t, code, 500, tc.path)
		es, err := o.ListAudit(t.Context(), ops.AuditFilter{Limit: ops.MaxAuditLimit})
		require.NoError(t, err)
		require.Len(t, es, len(before)+1, "%s %s: one entry", tc.path, tc.body)
		e := es[0]
		require.Equal(t, "admin-api", e.Actor.Via, tc.path)
		require.Contains(t, []string{hub.AuditRefused, hub.AuditError}, e.Outcome, tc.path)
		require.NotEmpty(t, e.Error, tc.path)
		if e.Outcome == hub.AuditRefused && e.Action != tc.action {
			require.Equal(t, tc.action, e.Action, tc.path)
		}
	}
	for _, r := range adm.App().GetRoutes(true) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.Path, "/admin/") {
			require.True(t, covered[r.Path], "POST %s changes state: add it to this table", r.Path)
		}
	}
	// Anonymous: 401, nothing recorded (no one outside floods the trail).
	before, err := o.ListAudit(t.Context(), ops.AuditFilter{Limit: ops.MaxAuditLimit})
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, do("/admin/purge", "", false))
	after, err := o.ListAudit(t.Context(), ops.AuditFilter{Limit: ops.MaxAuditLimit})
	require.NoError(t, err)
	require.Len(t, after, len(before))
	code, body := send(http.MethodGet, "/metrics", "", true)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "hub_admin_unauthorized_total 1", "counted instead")
}
