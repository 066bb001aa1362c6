package service_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/service"
)

const adminToken = "test-admin-token-0123456789abcdef0123456789"

func (h *testHub) admin(method, path, token, body string) (int, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.base+path, strings.NewReader(body))
	require.NoError(h.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func TestAdminAPI(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) { c.AdminToken = adminToken })
	for range 3 {
		h.deliver("paddle", "evt_admin", "subscription.created")
	}
	h.waitPublished()

	for _, token := range []string{"", "wrong", adminToken + "x", strings.ToUpper(adminToken)} {
		code, _ := h.admin(http.MethodGet, "/admin/status", token, "")
		require.Equal(t, http.StatusUnauthorized, code, "token %q", token)
	}
	code, body := h.admin(http.MethodGet, "/admin/status", adminToken, "")
	require.Equal(t, http.StatusOK, code, body)
	var st struct {
		Stream struct{ Messages int }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.Equal(t, 1, st.Stream.Messages)

	code, body = h.admin(http.MethodGet, "/admin/events?provider=paddle&since=1h", adminToken, "")
	require.Equal(t, http.StatusOK, code, body)
	var rows []struct {
		EventID    string `json:"event_id"`
		Deliveries int    `json:"deliveries"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &rows))
	require.Len(t, rows, 1)
	require.Equal(t, 3, rows[0].Deliveries)

	code, body = h.admin(http.MethodGet, "/admin/events/paddle:evt_admin", adminToken, "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"deliveries":[`)

	cases := []struct {
		method, path, body string
		want               int
	}{
		{http.MethodGet, "/admin/events/paddle:nope", "", http.StatusNotFound},
		{http.MethodGet, "/admin/events?since=yesterday", "", http.StatusBadRequest},
		{http.MethodGet, "/admin/events?status=DONE", "", http.StatusBadRequest},
		{http.MethodGet, "/admin/dlq/nobody", "", http.StatusNotFound},
		{http.MethodPost, "/admin/purge", `{"older_than":"90d","dry_run":true}`, http.StatusOK},
		{http.MethodPost, "/admin/purge", `{"older_than":"soon"}`, http.StatusBadRequest},
		{http.MethodPost, "/admin/republish", `{}`, http.StatusBadRequest},
		{http.MethodPost, "/admin/republish", `{"event":"paddle:evt_admin","dry_run":true}`, http.StatusOK},
		{http.MethodPost, "/admin/replay", `{"subscriber":"nobody","since":"1h"}`, http.StatusNotFound},
		{http.MethodPost, "/admin/dlq/nobody/redrive", `{"all":true}`, http.StatusNotFound},
		{http.MethodPost, "/admin/dlq/nobody/redrive", `{}`, http.StatusBadRequest},
	}
	for _, c := range cases {
		code, body := h.admin(c.method, c.path, adminToken, c.body)
		require.Equal(t, c.want, code, "%s %s: %s", c.method, c.path, body)
	}
}

func TestAdminAPIOffByDefault(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	code, _ := h.admin(http.MethodGet, "/admin/status", adminToken, "")
	require.Equal(t, http.StatusNotFound, code)
}
