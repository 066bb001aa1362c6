package service_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
)

// get returns the status and body of a GET with an optional bearer token.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw)
}

func TestAdminListenerSeparatesOperatorEndpoints(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) {
		c.AdminToken = adminToken
		c.AdminAddr = "127.0.0.1:0"
	})
	require.NotEmpty(t, h.adminBase)
	require.Equal(t, http.StatusOK, h.deliver("paddle", "evt_admin_addr", "subscription.created").status)

	// The webhook listener serves webhooks and health only.
	for _, path := range []string{"/metrics", "/admin/status", "/debug/pprof/"} {
		code, _ := get(t, h.base+path, adminToken)
		require.Equal(t, http.StatusNotFound, code, "public %s", path)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		code, body := get(t, h.base+path, "")
		require.Equal(t, http.StatusOK, code, "public %s: %s", path, body)
	}

	// The admin listener serves the operator's endpoints.
	cases := []struct {
		path, token string
		want        int
		contains    string
	}{
		{"/metrics", "", http.StatusOK, "hub_deliveries_total"},
		{"/debug/pprof/", "", http.StatusOK, "goroutine"},
		{"/debug/pprof/cmdline", "", http.StatusOK, ""},
		{"/healthz", "", http.StatusOK, "ok"},
		{"/readyz", "", http.StatusOK, "ready"},
		{"/admin/status", adminToken, http.StatusOK, "outbox_pending"},
		{"/admin/status", "", http.StatusUnauthorized, ""},
		{"/webhooks/paddle", "", http.StatusNotFound, ""},
	}
	for _, tc := range cases {
		code, body := get(t, h.adminBase+tc.path, tc.token)
		require.Equal(t, tc.want, code, "admin %s: %s", tc.path, body)
		require.True(t, strings.Contains(body, tc.contains), "admin %s lacks %q", tc.path, tc.contains)
	}
}

func TestWithoutAdminListenerPprofIsOff(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	require.Empty(t, h.adminBase)
	code, body := get(t, h.base+"/metrics", "")
	require.Equal(t, http.StatusOK, code)
	require.True(t, strings.Contains(body, "hub_nats_connected"), "metrics served on the webhook listener")
	code, _ = get(t, h.base+"/debug/pprof/", "")
	require.Equal(t, http.StatusNotFound, code)
}

// rawConn opens a TCP connection to a hub URL's host.
func rawConn(t *testing.T, base string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// signedPaddle returns the headers and body of a signed Paddle delivery.
func (h *testHub) signedPaddle(eventID string) (http.Header, []byte) {
	h.t.Helper()
	body, err := samples.Body(h.paddle.Name(), eventID, "subscription.created", nil, time.Now())
	require.NoError(h.t, err)
	hdr, _, err := h.paddle.Sign(eventID, "", body, time.Now())
	require.NoError(h.t, err)
	return hdr, body
}

// TestBodyBudgetAnswers503 holds the whole body budget (MaxInflight ×
// MaxBodyBytes) with one slow upload: the next delivery is answered 503
// with Retry-After, before anything is archived, and is accepted once the
// upload goes away.
func TestBodyBudgetAnswers503(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) { c.MaxInflight, c.MaxBodyBytes = 1, 20000 })

	// Past fasthttp's 8 KiB read-ahead the handler runs and reads what
	// arrived, growing its buffer (and its reservation) to the announced
	// 19,000 bytes, and waits for the rest of the body.
	slow := rawConn(t, h.base)
	fmt.Fprintf(slow, "POST /webhooks/paddle HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\nContent-Length: 19000\r\n\r\n")
	_, err := slow.Write([]byte(strings.Repeat(" ", 17000)))
	require.NoError(t, err)

	// Once the hub has read what was sent (its gauge shows the bytes
	// reserved), the next delivery does not fit.
	require.Eventually(t, func() bool {
		_, m := get(t, h.base+"/metrics", "")
		return strings.Contains(m, "hub_http_body_bytes 19001")
	}, 5*time.Second, 10*time.Millisecond, "the slow upload's bytes were never reserved")
	refused := "evt_budget_refused"
	hdr, body := h.signedPaddle(refused)
	last := h.post("paddle", hdr, body)
	require.Equal(t, http.StatusServiceUnavailable, last.status, last.body)
	require.Contains(t, last.body["error"], "overloaded")
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_event_status WHERE event_id = $1`, refused))

	// The slow upload ends (the client goes away): its bytes are free.
	require.NoError(t, slow.Close())
	require.Eventually(t, func() bool {
		return h.deliver("paddle", "evt_budget_after", "subscription.created").status == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)
	_, metrics := get(t, h.base+"/metrics", "")
	require.True(t, strings.Contains(metrics, `hub_deliveries_total{outcome="overloaded",provider="paddle"}`))
}

// TestMaxInflightAnswers503 holds the only in-flight slot with a delivery
// whose commit waits for a table lock: the next one is answered 503 with
// Retry-After at once, and the first one still commits.
func TestMaxInflightAnswers503(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) { c.MaxInflight = 1 })
	ctx := context.Background()
	tx, err := h.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `LOCK TABLE processed_webhook_events IN EXCLUSIVE MODE`)
	require.NoError(t, err)

	first := make(chan answer, 1)
	go func() {
		hdr, body := h.signedPaddle("evt_inflight_first")
		first <- h.post("paddle", hdr, body)
	}()
	// The first delivery waits for the lock inside its commit: its insert
	// waits on a lock (the relay's polls of the same table may wait too,
	// so any lock wait is not enough).
	require.Eventually(t, func() bool {
		var waiting int
		require.NoError(t, h.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'
			  AND query LIKE '%INSERT INTO processed_webhook_events%'`).Scan(&waiting))
		return waiting > 0
	}, 5*time.Second, 10*time.Millisecond)

	req, err := http.NewRequest(http.MethodPost, h.base+"/webhooks/paddle", strings.NewReader("{}"))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, string(raw))
	require.Equal(t, "5", resp.Header.Get("Retry-After"))
	require.Contains(t, string(raw), "overloaded")

	require.NoError(t, tx.Rollback(ctx))
	a := <-first
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, 1, h.count(`SELECT count(*) FROM webhook_event_status WHERE event_id = 'evt_inflight_first'`))
}

func TestMaxConnsAnswers503WithRetryAfter(t *testing.T) {
	t.Parallel()
	const maxConns = 16
	h := newTestHub(t, func(c *service.Config) { c.MaxConns = maxConns })
	fillConns(t, h.base, maxConns)
	require.Eventually(t, func() bool {
		a, err := h.tryDeliver("paddle", "evt_conns_after", "subscription.created")
		return err == nil && a == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)
	_, metrics := get(t, h.base+"/metrics", "")
	require.Regexp(t, `hub_http_connections_rejected_total [1-9]`, metrics)
}

// fillConns holds maxConns connections to a listener of base: every place
// is taken (the held connections are accepted at once, in order), and the
// next connection is answered 503 with Retry-After without sending
// anything. Then it closes the held connections.
func fillConns(t *testing.T, base string, maxConns int) {
	t.Helper()
	held := make([]net.Conn, 0, maxConns)
	for range maxConns {
		held = append(held, rawConn(t, base))
	}
	var resp *http.Response
	require.Eventually(t, func() bool {
		c := rawConn(t, base)
		require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
		r, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return false
		}
		resp = r
		return true
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "5", resp.Header.Get("Retry-After"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the body is as long as its Content-Length says")
	require.JSONEq(t, `{"error":"overloaded: too many connections, retry later"}`, string(body))
	for _, c := range held {
		require.NoError(t, c.Close())
	}
}

// TestUnreadBodyClosesTheConnection smuggles a second request in the body
// of requests the hub answers without reading their body: the connection
// must be closed, never read on as if the body were the next request.
func TestUnreadBodyClosesTheConnection(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) { c.MaxBodyBytes = 4096 })
	hdr, body := h.signedPaddle("evt_smuggled")
	var smuggled strings.Builder
	fmt.Fprintf(&smuggled, "POST /webhooks/paddle HTTP/1.1\r\nHost: hub\r\nContent-Length: %d\r\n", len(body))
	for k := range hdr {
		fmt.Fprintf(&smuggled, "%s: %s\r\n", k, hdr.Get(k))
	}
	smuggled.WriteString("\r\n")
	smuggled.Write(body)
	inner := smuggled.String()
	pad := strings.Repeat(" ", 5000-len(inner))

	cases := []struct {
		name, head string
		body       string
		want       int
	}{
		{"GET /healthz with a body", "GET /healthz HTTP/1.1\r\nHost: hub\r\n", inner, http.StatusOK},
		{"unknown provider", "POST /webhooks/nope HTTP/1.1\r\nHost: hub\r\n", inner, http.StatusNotFound},
		{"compressed", "POST /webhooks/paddle HTTP/1.1\r\nHost: hub\r\nContent-Encoding: gzip\r\n", inner, http.StatusUnsupportedMediaType},
		{"announced too large", "POST /webhooks/paddle HTTP/1.1\r\nHost: hub\r\n", inner + pad, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := rawConn(t, h.base)
			require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
			_, err := fmt.Fprintf(c, "%sContent-Length: %d\r\n\r\n%s", tc.head, len(tc.body), tc.body)
			require.NoError(t, err)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, tc.want, resp.StatusCode)
			require.True(t, resp.Close, "the answer must close the connection")
			_, err = http.ReadResponse(br, nil)
			require.Error(t, err, "a second answer: the body was read as a request")
		})
	}
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_event_status WHERE event_id = 'evt_smuggled'`))
}

// A client still sending a body the hub refused (413, announced too
// large) gets the answer, not a reset: the hub half-closes and lingers
// before it closes a connection whose request body it left unread. Closed
// at once, the client's next write meets a reset, and Go's client (like
// others) then reports the write error instead of the 413.
func TestRefusedBodyAnswerIsNotReset(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) { c.MaxBodyBytes = 4096 })
	body := bytes.Repeat([]byte("x"), 8<<20)
	for i := range 20 {
		resp, err := http.Post(h.base+"/webhooks/paddle", "application/json", bytes.NewReader(body))
		require.NoError(t, err, "attempt %d: the 413 must reach a client still sending its body", i)
		resp.Body.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	}
}

func TestLoadConfigRefusesTheOldDebugAddr(t *testing.T) {
	t.Setenv("HUB_DEBUG_ADDR", "127.0.0.1:6060")
	_, err := service.LoadConfig()
	require.ErrorContains(t, err, "HUB_ADMIN_ADDR")
}

func TestReadBodyAcceptsChunkedAndExactBytes(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	hdr, body := h.signedPaddle("evt_chunked")
	c := rawConn(t, h.base)
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	var req strings.Builder
	req.WriteString("POST /webhooks/paddle HTTP/1.1\r\nHost: hub\r\nTransfer-Encoding: chunked\r\n")
	for k := range hdr {
		fmt.Fprintf(&req, "%s: %s\r\n", k, hdr.Get(k))
	}
	req.WriteString("\r\n")
	// Chunks that straddle fasthttp's read-ahead.
	for rest := body; len(rest) > 0; {
		n := min(len(rest), 700)
		fmt.Fprintf(&req, "%x\r\n%s\r\n", n, rest[:n])
		rest = rest[n:]
	}
	req.WriteString("0\r\n\r\n")
	_, err := io.WriteString(c, req.String())
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var stored []byte
	require.NoError(t, h.pool.QueryRow(context.Background(), `SELECT body FROM webhook_event_status WHERE event_id = 'evt_chunked'`).Scan(&stored))
	require.Equal(t, body, stored)
}
