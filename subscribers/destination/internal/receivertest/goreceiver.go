package receivertest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// GoReceiver is Node's contract in process: it verifies with Verify,
// which reads the svix-* spellings as the svix package does, so
// VerifiedStd and VerifiedSvix are its one verdict.
type GoReceiver struct {
	srv    *httptest.Server
	secret string
	stop   chan struct{} // closed when the test ends: releases Hang and EndlessBody

	mu       sync.Mutex
	control  Control
	attempts map[string]int
	accepted map[string]bool
	received []Received
}

// Go starts an in-process receiver verifying with secrets[0] (whsec_
// secrets) and stops it when the test ends.
func Go(t testing.TB, secrets ...string) *GoReceiver {
	t.Helper()
	if len(secrets) == 0 {
		t.Fatal("receivertest.Go: no secret")
	}
	if _, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secrets[0], "whsec_")); err != nil {
		t.Fatalf("receivertest.Go: secret: %v", err)
	}
	g := &GoReceiver{secret: secrets[0], stop: make(chan struct{}),
		attempts: map[string]int{}, accepted: map[string]bool{}}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(func() {
		close(g.stop)
		g.srv.CloseClientConnections()
		g.srv.Close()
	})
	return g
}

// URL is the receiver's base URL.
func (g *GoReceiver) URL() string { return g.srv.URL }

// Control sets the receiver's behaviour.
func (g *GoReceiver) Control(t testing.TB, c Control) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.control = c
	clear(g.attempts)
}

// Received returns every delivery request so far.
func (g *GoReceiver) Received(t testing.TB) []Received {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Received(nil), g.received...)
}

// Accepted returns the number of unique webhook-ids answered 2xx.
func (g *GoReceiver) Accepted(t testing.TB) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.accepted)
}

func (g *GoReceiver) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "body over 1 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rec := record(r, body)
	verr := Verify(g.secret, r.Header, body, time.Now())
	rec.VerifiedStd, rec.VerifiedSvix = verr == nil, verr == nil

	g.mu.Lock()
	c := g.control
	g.mu.Unlock()
	switch {
	case c.Handler != nil:
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w}
		defer func() { g.add(rec, sw.status) }()
		c.Handler(sw, r)
		return
	case verr != nil:
		g.add(rec, http.StatusUnauthorized)
		http.Error(w, "signature not verified", http.StatusUnauthorized)
		return
	case c.Hang:
		g.add(rec, 0)
		select {
		case <-r.Context().Done():
		case <-g.stop:
		}
		return
	case c.EndlessBody:
		g.add(rec, http.StatusOK)
		w.WriteHeader(http.StatusOK)
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for {
			select {
			case <-r.Context().Done():
				return
			case <-g.stop:
				return
			default:
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	case c.RedirectLoop:
		g.add(rec, http.StatusFound)
		http.Redirect(w, r, r.URL.RequestURI(), http.StatusFound)
		return
	}

	g.mu.Lock()
	g.attempts[rec.ID]++
	status := c.wire().answer(g.attempts[rec.ID])
	if is2xx(status) {
		if g.accepted[rec.ID] {
			rec.Duplicate, status = true, http.StatusOK
		}
		g.accepted[rec.ID] = true
	}
	rec.Status = status
	if len(g.received) < maxRecords {
		g.received = append(g.received, rec)
	}
	g.mu.Unlock()
	if c.Delay > 0 {
		select {
		case <-time.After(c.Delay):
		case <-r.Context().Done():
		case <-g.stop:
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"ok":`+map[bool]string{true: "true", false: "false"}[status < 300]+`}`)
}

// add records rec answered status.
func (g *GoReceiver) add(rec Received, status int) {
	rec.Status = status
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.received) < maxRecords {
		g.received = append(g.received, rec)
	}
}

// statusWriter remembers the status a Handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

var _ Receiver = (*GoReceiver)(nil)
