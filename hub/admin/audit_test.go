package admin_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
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
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// An action through the admin API is recorded in the audit trail as the
// token's (by its fingerprint, never the token), and the API reads the
// trail back (JSON and JSON lines) but offers no way to write it.
// adminOnDB is an admin API over ops on a fresh database, and a request
// to it with a bearer token.
func adminOnDB(t *testing.T) (*pgxpool.Pool, *ops.Ops, func(token, method, path, body string) (int, string)) {
	t.Helper()
	pool, _ := hubtest.Pool(t)
	o := ops.New(ops.Config{Archive: store.New(pool), Subscribers: pool})
	reg := prometheus.NewRegistry()
	adm, err := admin.New(admin.Config{Token: testAdminToken, Operator: o, Gatherer: reg, Metrics: metrics.New(reg),
		OwnListener: true, Probes: func(fiber.Router) {}})
	require.NoError(t, err)
	return pool, o, func(token, method, path, body string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := adm.App().Test(req, -1)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(raw)
	}
}

func TestAdminActionsAreAudited(t *testing.T) {
	t.Parallel()
	_, o, as := adminOnDB(t)
	do := func(method, path, body string) (int, string) {
		t.Helper()
		return as(testAdminToken, method, path, body)
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
