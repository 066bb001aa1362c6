package destination_test

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hookhub/hookhub/subscribers/destination"
)

// bounded fails the test when f takes longer than limit: an upper bound
// on an attempt that must be cut, never a measure of speed.
func bounded(t *testing.T, limit time.Duration, f func() destination.Result) destination.Result {
	t.Helper()
	start := time.Now()
	r := f()
	if took := time.Since(start); took > limit {
		t.Fatalf("the attempt took %v, want it cut within %v: %+v", took, limit, r)
	}
	return r
}

func TestDoSendsTheRequest(t *testing.T) {
	type seen struct {
		method, path, ct, team, body string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), r.Header.Get("X-Team"), string(b)}
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "thanks")
	}))
	defer srv.Close()
	c := destination.NewClient(destination.ClientConfig{})
	defer c.Close()
	h := http.Header{"Content-Type": {"application/json"}, "X-Team": {"billing"}}
	r := c.Do(context.Background(), srv.URL+"/hooks?x=1", h, []byte(`{"a":1}`))
	if r.Err != nil || r.Status != 202 || !r.OK() || r.Class() != "2xx" || r.Response != "thanks" || r.Latency <= 0 {
		t.Fatalf("result %+v", r)
	}
	if s := <-got; s != (seen{"POST", "/hooks?x=1", "application/json", "billing", `{"a":1}`}) {
		t.Fatalf("server saw %+v", s)
	}
	if h.Get("X-Team") != "billing" || len(h) != 2 {
		t.Fatalf("Do changed the caller's headers: %v", h)
	}
}

func TestDoTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	r := destination.NewClient(destination.ClientConfig{}).Do(context.Background(), srv.URL, nil, nil)
	var uae x509.UnknownAuthorityError
	if r.Status != 0 || !errors.As(r.Err, &uae) || r.Class() != "error" {
		t.Fatalf("an unknown CA was accepted with the system roots: %+v", r)
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	r = destination.NewClient(destination.ClientConfig{RootCAs: pool}).Do(context.Background(), srv.URL, nil, nil)
	if r.Err != nil || r.Status != 200 {
		t.Fatalf("with its CA: %+v", r)
	}
}

func TestDoDoesNotFollowRedirects(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Redirect(w, r, r.URL.Path, http.StatusFound) // a loop
	}))
	defer srv.Close()
	r := destination.NewClient(destination.ClientConfig{}).Do(context.Background(), srv.URL+"/loop", nil, []byte("x"))
	if r.Err != nil || r.Status != 302 || r.OK() || r.Class() != "3xx" {
		t.Fatalf("result %+v", r)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("%d requests, want 1", got)
	}
}

// An endless body is cut at MaxBody (and the snippet at 1 KiB): the
// attempt ends long before its timeout.
func TestDoEndlessBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("y", 4096))
		deadline := time.Now().Add(20 * time.Second) // bounded even if the client never leaves
		for time.Now().Before(deadline) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c := destination.NewClient(destination.ClientConfig{Timeout: 5 * time.Second, MaxBody: 64 << 10})
	r := bounded(t, 5*time.Second+2*time.Second, func() destination.Result {
		return c.Do(context.Background(), srv.URL, nil, nil)
	})
	if r.Status != 200 || r.Err != nil {
		t.Fatalf("result %+v", r)
	}
	if len(r.Response) > destination.MaxResponseSnippet || !strings.HasPrefix(r.Response, "yyyy") || !strings.HasSuffix(r.Response, "…") {
		t.Fatalf("snippet of %d bytes: %.40q…", len(r.Response), r.Response)
	}
	srv.CloseClientConnections()
}

// A body dripped slowly is cut by Timeout: the status stands, Err says
// timeout, and the bytes read so far are kept.
func TestDoSlowDrip(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for i := 0; i < 200; i++ { // at most 10 s
			if _, err := w.Write([]byte("d")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(50 * time.Millisecond):
			case <-r.Context().Done():
				return
			case <-stop:
				return
			}
		}
	}))
	defer srv.Close()
	defer close(stop)
	c := destination.NewClient(destination.ClientConfig{Timeout: 300 * time.Millisecond})
	r := bounded(t, 3*time.Second, func() destination.Result {
		return c.Do(context.Background(), srv.URL, nil, nil)
	})
	if r.Status != 200 || !errors.Is(r.Err, destination.ErrTimeout) || !strings.HasPrefix(r.Response, "d") {
		t.Fatalf("result %+v", r)
	}
}

// A server that accepts and never answers: the attempt ends at Timeout
// with a timeout error.
func TestDoHangingServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	defer func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	c := destination.NewClient(destination.ClientConfig{Timeout: 300 * time.Millisecond})
	r := bounded(t, 3*time.Second, func() destination.Result {
		return c.Do(context.Background(), "http://"+ln.Addr().String()+"/h?token=s3cret", nil, []byte("x"))
	})
	if r.Status != 0 || !errors.Is(r.Err, destination.ErrTimeout) || r.Class() != "error" {
		t.Fatalf("result %+v", r)
	}
	if strings.Contains(r.Err.Error(), "s3cret") {
		t.Fatalf("the error shows the URL: %v", r.Err)
	}
}

// Connecting to an address that does not answer is bounded by the
// connect timeout (or fails at once where the network is unreachable).
func TestDoUnroutable(t *testing.T) {
	c := destination.NewClient(destination.ClientConfig{Timeout: 2 * time.Second, ConnectTimeout: 300 * time.Millisecond})
	r := bounded(t, 3*time.Second, func() destination.Result {
		return c.Do(context.Background(), "http://10.255.255.1:81/", nil, nil)
	})
	if r.Status != 0 {
		t.Skipf("10.255.255.1:81 answers %d here: no unroutable address to test with", r.Status)
	}
	if r.Err == nil {
		t.Fatalf("result %+v", r)
	}
}

func TestDoConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r := destination.NewClient(destination.ClientConfig{}).Do(context.Background(), "http://"+addr+"/", nil, nil)
	if r.Status != 0 || r.Err == nil || errors.Is(r.Err, destination.ErrTimeout) {
		t.Fatalf("result %+v", r)
	}
	r = destination.NewClient(destination.ClientConfig{}).Do(context.Background(), "://bad", nil, nil)
	if r.Status != 0 || r.Err == nil {
		t.Fatalf("bad URL: %+v", r)
	}
}

func TestDoCancelled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	r := bounded(t, 3*time.Second, func() destination.Result {
		return destination.NewClient(destination.ClientConfig{Timeout: time.Minute}).Do(ctx, srv.URL, nil, nil)
	})
	if r.Status != 0 || !errors.Is(r.Err, context.Canceled) || errors.Is(r.Err, destination.ErrTimeout) {
		t.Fatalf("result %+v", r)
	}
}

func TestDoRetryAfter(t *testing.T) {
	date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		status int
		value  string
		min    time.Duration
		max    time.Duration
	}{
		{429, "7", 7 * time.Second, 7 * time.Second},
		{503, "7", 7 * time.Second, 7 * time.Second},
		{429, date, 20 * time.Second, 31 * time.Second},
		{429, "999999999", 24 * time.Hour, 24 * time.Hour},
		{429, "soon", 0, 0},
		{429, "", 0, 0},
		{500, "7", 0, 0}, // only 429 and 503 ask to wait
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tc.value != "" {
				w.Header().Set("Retry-After", tc.value)
			}
			w.WriteHeader(tc.status)
		}))
		r := destination.NewClient(destination.ClientConfig{}).Do(context.Background(), srv.URL, nil, nil)
		srv.Close()
		if r.Status != tc.status || r.RetryAfter < tc.min || r.RetryAfter > tc.max {
			t.Errorf("%d Retry-After %q: %+v, want RetryAfter in [%v, %v]", tc.status, tc.value, r, tc.min, tc.max)
		}
	}
}

func TestDoSanitizesTheResponse(t *testing.T) {
	body := "a\x00b\xff\xfec" + strings.Repeat("é", 2000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusGone)
		io.WriteString(w, body)
	}))
	defer srv.Close()
	r := destination.NewClient(destination.ClientConfig{}).Do(context.Background(), srv.URL, nil, nil)
	if !r.Gone() || r.Class() != "4xx" || r.OK() {
		t.Fatalf("result %+v", r)
	}
	if !utf8.ValidString(r.Response) || strings.IndexByte(r.Response, 0) >= 0 || len(r.Response) > 1024 ||
		!strings.HasPrefix(r.Response, "a b\uFFFD\uFFFDcé") {
		t.Fatalf("response %q (%d bytes)", r.Response, len(r.Response))
	}
}

// The response headers are capped.
func TestDoHugeHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 40 {
			w.Header().Set("X-Big-"+string(rune('a'+i%26))+string(rune('a'+i/26)), strings.Repeat("h", 4000))
		}
	}))
	defer srv.Close()
	r := destination.NewClient(destination.ClientConfig{}).Do(context.Background(), srv.URL, nil, nil)
	if r.Status != 0 || r.Err == nil {
		t.Fatalf("160 KB of headers accepted: %+v", r)
	}
}

func TestResultClass(t *testing.T) {
	for status, want := range map[int]string{0: "error", 99: "error", 200: "2xx", 204: "2xx", 301: "3xx", 404: "4xx", 410: "4xx", 503: "5xx", 600: "error"} {
		if got := (destination.Result{Status: status}).Class(); got != want {
			t.Errorf("Class(%d) = %q, want %q", status, got, want)
		}
	}
}
