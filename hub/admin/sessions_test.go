package admin_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
)

// The admin API lists the console's sessions and revokes them (one, a
// name's, all); each revocation is in the audit trail as the token's.
func TestAdminSessions(t *testing.T) {
	t.Parallel()
	pool, _, o, as := adminOnDB(t)
	st := store.New(pool)
	do := func(method, path, body string, token string) (int, string) {
		t.Helper()
		return as(token, method, path, body)
	}
	now := time.Now()
	for i, name := range []string{"alice@example.com", "alice@example.com", "token 1a2b3c4d"} {
		sum := sha256.Sum256([]byte{byte(i)})
		require.NoError(t, st.OpenConsoleSession(t.Context(), store.ConsoleSession{IDHash: sum[:], CSRF: "x", Role: "admin", Kind: "oidc",
			Name: name, CapKey: name, Created: now.Add(time.Duration(i) * time.Second), LastSeen: now, ExpiresAt: now.Add(time.Hour),
			Ref: hex.EncodeToString(sum[:8]), Identity: &store.ConsoleIdentity{Issuer: "https://id.example.com", Subject: name}}, 10, now))
	}
	list := func(query string) []hub.SessionInfo {
		t.Helper()
		code, body := do(http.MethodGet, "/admin/sessions"+query, "", testAdminToken)
		require.Equal(t, http.StatusOK, code, body)
		var page struct {
			Sessions []hub.SessionInfo `json:"sessions"`
			Next     string            `json:"next"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &page))
		require.NotContains(t, body, "csrf")
		return page.Sessions
	}
	all := list("")
	require.Len(t, all, 3)
	require.Equal(t, "token 1a2b3c4d", all[0].Name, "newest first")
	require.Equal(t, "https://id.example.com", all[1].Issuer)
	require.True(t, all[1].Bound)
	require.Len(t, list("?name=alice@example.com"), 2)
	require.Len(t, list("?limit=1&before="+ops.SessionCursor(all[0])), 1)

	for _, tc := range []struct{ method, path, body, token string }{
		{http.MethodGet, "/admin/sessions", "", "wrong-token-0123456789abcdef0123456789"},
		{http.MethodPost, "/admin/sessions/revoke", "", "wrong-token-0123456789abcdef0123456789"},
	} {
		code, _ := do(tc.method, tc.path, tc.body, tc.token)
		require.Equal(t, http.StatusUnauthorized, code)
	}
	for _, body := range []string{`{}`, `{"id":"a","name":"b"}`, `{"all":true,"id":"x"}`, `{"everyone":true}`, `{"name":"a\u0000b"}`} {
		code, ans := do(http.MethodPost, "/admin/sessions/revoke", body, testAdminToken)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", body, ans)
	}
	code, _ := do(http.MethodGet, "/admin/sessions?limit=0", "", testAdminToken)
	require.Equal(t, http.StatusBadRequest, code)
	code, _ = do(http.MethodGet, "/admin/sessions?before=nope", "", testAdminToken)
	require.Equal(t, http.StatusBadRequest, code)

	code, body := do(http.MethodPost, "/admin/sessions/revoke", `{"id":"`+all[0].ID+`"}`, testAdminToken)
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"revoked":1}`, body)
	code, body = do(http.MethodPost, "/admin/sessions/revoke", `{"id":"`+all[0].ID+`"}`, testAdminToken)
	require.Equal(t, http.StatusNotFound, code, body)
	code, body = do(http.MethodPost, "/admin/sessions/revoke", `{"name":"alice@example.com"}`, testAdminToken)
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"revoked":2}`, body)
	require.Empty(t, list(""))

	es, err := o.ListAudit(t.Context(), ops.AuditFilter{Action: ops.ActionSessionRevoke, Limit: 100})
	require.NoError(t, err)
	sum := sha256.Sum256([]byte(testAdminToken))
	want := hub.Actor{Kind: hub.ActorToken, Name: "token " + hex.EncodeToString(sum[:4]), Role: "admin", Via: "admin-api"}
	var outcomes []string
	for _, e := range es {
		require.Equal(t, want, e.Actor)
		outcomes = append(outcomes, e.Outcome+" "+e.Target)
	}
	require.Contains(t, outcomes, "ok sessions of alice@example.com")
	require.Contains(t, outcomes, "error session "+all[0].ID)
	require.Contains(t, outcomes, "ok session "+all[0].ID)
}
