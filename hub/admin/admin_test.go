package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/admin"
	"github.com/hookhub/hookhub/hub/console"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/server"
)

// These tests cover the HTTP side of the admin API: authentication, how
// requests become operations, and that no panic escapes. The operations
// themselves run against real Postgres and JetStream in hub/ops and
// hub/service; here a recording Operator stands in for them. The API is
// mounted on the webhook listener, as without HUB_ADMIN_ADDR.

const testAdminToken = "server-test-admin-token-0123456789abcdef"

// webhookSecret signs the test webhooks (a Paddle secret).
const webhookSecret = "pdl_ntfset_01test0000000000000000000000_TestSecretForHookhubTests00"

// recordingOperator records the requests it gets and answers with empty
// results; a method it does not override panics (its embedded Operator
// is nil), as would a bug in an operation.
type recordingOperator struct {
	console.Operator
	mu     sync.Mutex
	purges []ops.PurgeRequest
	shown  []string
	listed []ops.EventFilter
	pages  []ops.EventFilter // bulk_test.go
	bulks  []ops.BulkRequest // bulk_test.go
}

func (o *recordingOperator) Now() time.Time { return time.Now() }

// Refuse records nothing: the refusals are audit_test.go's.
func (o *recordingOperator) Refuse(context.Context, string, string, any, error) error { return nil }

func (o *recordingOperator) Status(context.Context) (ops.Status, error) { return ops.Status{}, nil }

func (o *recordingOperator) ShowEvent(_ context.Context, ref string) (ops.EventDetail, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.shown = append(o.shown, ref)
	return ops.EventDetail{}, nil
}

func (o *recordingOperator) ListEvents(_ context.Context, f ops.EventFilter) ([]ops.EventRow, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.listed = append(o.listed, f)
	return []ops.EventRow{}, nil
}

func (o *recordingOperator) Purge(_ context.Context, req ops.PurgeRequest) (ops.PurgeResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.purges = append(o.purges, req)
	return ops.PurgeResult{DryRun: req.DryRun}, nil
}

// panickingIngester panics on every delivery.
type panickingIngester struct{}

func (panickingIngester) Ingest(context.Context, []hub.Delivery) ([]hub.Outcome, error) {
	panic("ingester bug")
}

type adminServer struct {
	srv  *server.Server
	op   *recordingOperator
	logs *bytes.Buffer
	p    provider.Signer
}

func newAdminServer(t *testing.T) *adminServer {
	t.Helper()
	p, err := provider.New("paddle", []string{webhookSecret}, provider.Options{Tolerance: time.Hour})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	a := &adminServer{op: &recordingOperator{}, logs: &bytes.Buffer{}, p: p.(provider.Signer)}
	m := metrics.New(reg)
	log := slog.New(slog.NewJSONHandler(a.logs, nil))
	a.srv, err = server.New(server.Config{
		Providers: []provider.Provider{p},
		Ingester:  panickingIngester{},
		Ready:     func(context.Context) error { return nil },
		Metrics:   m,
		Logger:    log,
	})
	require.NoError(t, err)
	adm, err := admin.New(admin.Config{
		Token:    testAdminToken,
		Operator: a.op,
		Gatherer: reg,
		Bodies:   a.srv.Bodies(),
		Metrics:  m,
		Logger:   log,
	})
	require.NoError(t, err)
	adm.Mount(a.srv.App())
	return a
}

func (a *adminServer) do(t *testing.T, method, path, auth, contentType, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return testRequest(t, a.srv.App(), req)
}

// testRequest sends req to app and returns the answer's status and body.
func testRequest(t *testing.T, app *fiber.App, req *http.Request) (int, string) {
	t.Helper()
	resp, err := app.Test(req, -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw)
}

// A panic in a handler, admin or webhook, is answered 500
// {"error":"internal error"}, logged with its stack, and the server goes on
// serving.
func TestPanicIsA500AndTheServerGoesOn(t *testing.T) {
	a := newAdminServer(t)
	auth := "Bearer " + testAdminToken

	// DeadLetters is not implemented by the recording operator: it panics.
	code, body := a.do(t, http.MethodGet, "/admin/dlq/credits", auth, "", "")
	require.Equal(t, http.StatusInternalServerError, code)
	require.JSONEq(t, `{"error":"internal error"}`, body)

	// A webhook whose ingest panics.
	now := time.Now()
	raw, err := samples.Body(a.p.Name(), "evt_panic", "subscription.created", nil, now)
	require.NoError(t, err)
	h, _, err := a.p.Sign("evt_panic", "", raw, now)
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, "/webhooks/paddle", bytes.NewReader(raw))
	req.Header = h
	resp, err := a.srv.App().Test(req, -1)
	require.NoError(t, err)
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)

	logs := a.logs.String()
	require.Contains(t, logs, `"msg":"request panicked"`)
	require.Contains(t, logs, `"path":"/admin/dlq/credits"`)
	require.Contains(t, logs, `"panic":"ingester bug"`)
	require.Contains(t, logs, "panickingIngester.Ingest", "the stack is logged")

	code, body = a.do(t, http.MethodGet, "/healthz", "", "", "")
	require.Equal(t, http.StatusOK, code, body)
	code, body = a.do(t, http.MethodGet, "/admin/status", auth, "", "")
	require.Equal(t, http.StatusOK, code, body)
}

// The Bearer scheme is case-insensitive and followed by one or more spaces
// (RFC 7235); anything else is 401.
func TestAdminBearerScheme(t *testing.T) {
	a := newAdminServer(t)
	cases := []struct {
		auth string
		want int
	}{
		{"Bearer " + testAdminToken, http.StatusOK},
		{"bearer " + testAdminToken, http.StatusOK},
		{"BEARER " + testAdminToken, http.StatusOK},
		{"BeArEr " + testAdminToken, http.StatusOK},
		{"Bearer    " + testAdminToken, http.StatusOK},
		{"", http.StatusUnauthorized},
		{"Bearer", http.StatusUnauthorized},
		{"Bearer ", http.StatusUnauthorized},
		{"Bearer" + testAdminToken, http.StatusUnauthorized},
		{"Basic " + testAdminToken, http.StatusUnauthorized},
		{"Bearer " + strings.ToUpper(testAdminToken), http.StatusUnauthorized},
		{"Bearer " + testAdminToken + "x", http.StatusUnauthorized},
		{"Bearer " + testAdminToken[1:], http.StatusUnauthorized},
		{"Bearers " + testAdminToken, http.StatusUnauthorized},
		{"Bearer\t" + testAdminToken, http.StatusUnauthorized},
	}
	for _, c := range cases {
		code, body := a.do(t, http.MethodGet, "/admin/status", c.auth, "", "")
		require.Equal(t, c.want, code, "Authorization %q: %s", c.auth, body)
		if code == http.StatusUnauthorized {
			require.JSONEq(t, `{"error":"missing or wrong bearer token"}`, body)
		}
	}
}

// A purge is a dry run unless the body says "dry_run": false; the body is
// strict JSON whatever its Content-Type.
func TestAdminPurgeBody(t *testing.T) {
	a := newAdminServer(t)
	auth := "Bearer " + testAdminToken
	cases := []struct {
		contentType, body string
		want              int
		dryRun            bool
		includeFailed     bool
	}{
		{"application/json", `{"older_than":"90d"}`, http.StatusOK, true, false},
		{"application/json", `{"older_than":"90d","dry_run":null}`, http.StatusOK, true, false},
		{"application/json", `{"older_than":"90d","dry_run":true}`, http.StatusOK, true, false},
		{"application/json", `{"older_than":"90d","dry_run":false}`, http.StatusOK, false, false},
		{"application/json", `{"older_than":"90d","dry_run":false,"include_failed":true}`, http.StatusOK, false, true},
		{"application/x-www-form-urlencoded", `{"older_than":"90d","dry_run":false}`, http.StatusOK, false, false}, // curl -d
		{"", ` {"older_than":"90d"} `, http.StatusOK, true, false},
		{"application/json", `{"older_than":"90d","dryrun":false}`, http.StatusBadRequest, false, false},
		{"application/json", `{"older_than":"90d","dry_run":"false"}`, http.StatusBadRequest, false, false},
		{"application/json", `{"older_than":"90d"}{"dry_run":false}`, http.StatusBadRequest, false, false},
		{"application/json", `{"older_than":"90d"`, http.StatusBadRequest, false, false},
		{"application/json", `[]`, http.StatusBadRequest, false, false},
		{"application/json", ``, http.StatusBadRequest, false, false}, // older_than missing
		{"application/json", `{"older_than":"1e308d"}`, http.StatusBadRequest, false, false},
		{"application/json", `{"older_than":"213504d"}`, http.StatusBadRequest, false, false},
		{"application/json", `{"older_than":"` + strings.Repeat("9", 100000) + `d"}`, http.StatusBadRequest, false, false},
	}
	for _, c := range cases {
		before := len(a.op.purges)
		code, body := a.do(t, http.MethodPost, "/admin/purge", auth, c.contentType, c.body)
		require.Equal(t, c.want, code, "%s: %s", c.body, body)
		require.Less(t, len(body), 600, "an error never echoes the whole body")
		if c.want != http.StatusOK {
			require.Len(t, a.op.purges, before, "%s: refused before the operation", c.body)
			continue
		}
		require.Len(t, a.op.purges, before+1)
		got := a.op.purges[before]
		require.Equal(t, c.dryRun, got.DryRun, c.body)
		require.Equal(t, c.includeFailed, got.IncludeFailed, c.body)
		require.Equal(t, 90*24*time.Hour, got.OlderThan)
		require.Equal(t, ops.DefaultPurgeBatch, got.BatchSize)
		var ans struct {
			DryRun bool   `json:"dry_run"`
			Note   string `json:"note"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &ans))
		require.Equal(t, c.dryRun, ans.DryRun)
		require.Equal(t, c.dryRun, strings.Contains(ans.Note, `send "dry_run": false`), body)
	}
}

// Path parameters arrive percent-encoded; the operation gets them decoded.
func TestAdminPathParametersAreDecoded(t *testing.T) {
	a := newAdminServer(t)
	auth := "Bearer " + testAdminToken
	code, body := a.do(t, http.MethodGet, "/admin/events/paddle:evt%201%2Fa%3Ab", auth, "", "")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, []string{"paddle:evt 1/a:b"}, a.op.shown)
	// An escape Go's client would not send, written on the wire as is.
	req := httptest.NewRequest(http.MethodGet, "/admin/events/x", nil)
	req.RequestURI = "/admin/events/paddle:evt%zz"
	req.Header.Set("Authorization", auth)
	code, raw := testRequest(t, a.srv.App(), req)
	require.Equal(t, http.StatusBadRequest, code, "%s", raw)
	require.Contains(t, raw, "ref: bad percent-encoding")
}

// GET /admin/events?entity= filters by entity; a given entity is checked
// with the message the command line and the console give.
func TestAdminEventsByEntity(t *testing.T) {
	a := newAdminServer(t)
	auth := "Bearer " + testAdminToken
	code, body := a.do(t, http.MethodGet, "/admin/events?entity=cus_123&provider=stripe", auth, "", "")
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, a.op.listed, 1)
	require.Equal(t, "cus_123", a.op.listed[0].Entity)
	require.Equal(t, "stripe", a.op.listed[0].Provider)
	for q, want := range map[string]string{
		"entity=":                            "entity: required: an entity id, e.g. cus_123",
		"entity=cus%0A1":                     `entity: \"cus\\n1\" contains control characters`,
		"entity=" + strings.Repeat("x", 256): "entity: longer than 255 bytes (256)",
	} {
		code, body := a.do(t, http.MethodGet, "/admin/events?"+q, auth, "", "")
		require.Equal(t, http.StatusBadRequest, code, q)
		require.Contains(t, body, want, q)
	}
	require.Len(t, a.op.listed, 1, "a refused entity reaches no operation")
}
