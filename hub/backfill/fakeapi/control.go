package fakeapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Hit is one request a fake API answered.
type Hit struct {
	At        time.Time
	Method    string
	Path      string
	Query     string // the raw query
	UserAgent string
	Status    int
}

// fakeControl is what every fake shares: the requests it answered, and
// the failures a test asks for.
type fakeControl struct {
	mu       sync.Mutex
	hits     []Hit
	throttle []time.Duration // the next requests answer 429 with these Retry-After
	failures map[int]int     // request number (1-based) -> status to answer instead
	gateway  map[int]gatewayAnswer
}

// gatewayAnswer is what a proxy in front of the API answers instead of it.
type gatewayAnswer struct {
	status   int
	location string // a redirect's target, the request's path and query appended
}

// record notes a request and returns its number (1-based), a status to
// fail it with (0: none) and, for a throttled one, the Retry-After.
func (c *fakeControl) record(r *http.Request) (n, fail int, retryAfter time.Duration, throttled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hits = append(c.hits, Hit{At: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, UserAgent: r.UserAgent()})
	n = len(c.hits)
	if len(c.throttle) > 0 {
		retryAfter, c.throttle = c.throttle[0], c.throttle[1:]
		return n, http.StatusTooManyRequests, retryAfter, true
	}
	return n, c.failures[n], 0, false
}

// handle records a request and answers it, as a gateway when a test asked
// for one, else with serve, and notes the status it answered.
func (c *fakeControl) handle(w http.ResponseWriter, r *http.Request, serve func(w http.ResponseWriter, r *http.Request, fail int, retryAfter time.Duration, throttled bool) int) {
	n, fail, retryAfter, throttled := c.record(r)
	status := c.intercept(w, r, n)
	if status == 0 {
		status = serve(w, r, fail, retryAfter, throttled)
	}
	c.setStatus(n, status)
}

func (c *fakeControl) setStatus(n, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n >= 1 && n <= len(c.hits) {
		c.hits[n-1].Status = status
	}
}

// Hits returns the requests answered so far, oldest first.
func (c *fakeControl) Hits() []Hit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Hit(nil), c.hits...)
}

// Throttle makes the next len(retryAfter) requests answer 429 with the
// given Retry-After (whole seconds), as the provider does past its limit.
func (c *fakeControl) Throttle(retryAfter ...time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.throttle = append(c.throttle, retryAfter...)
}

// FailRequest makes request number n (1-based, counting every request the
// fake receives) answer status with the provider's error object.
func (c *fakeControl) FailRequest(n, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failures == nil {
		c.failures = map[int]int{}
	}
	c.failures[n] = status
}

// EchoHeaders makes request number n (1-based) answer status from a
// gateway in front of the API whose error page echoes the request's
// headers (the Authorization header with them, as some proxies' debug
// pages do), with a NUL, invalid UTF-8, terminal escapes and CR LF in
// it, padded to 100 KiB.
func (c *fakeControl) EchoHeaders(n, status int) {
	c.setGateway(n, gatewayAnswer{status: status})
}

// Redirect makes request number n (1-based) answer status (301, 302, 307,
// 308) with a Location of target followed by the request's path and query:
// a proxy sending the client to another port or host.
func (c *fakeControl) Redirect(n, status int, target string) {
	c.setGateway(n, gatewayAnswer{status: status, location: target})
}

func (c *fakeControl) setGateway(n int, a gatewayAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gateway == nil {
		c.gateway = map[int]gatewayAnswer{}
	}
	c.gateway[n] = a
}

// intercept answers request number n as a gateway when a test asked for
// it, and returns the status it answered (0: the API answers).
func (c *fakeControl) intercept(w http.ResponseWriter, r *http.Request, n int) int {
	c.mu.Lock()
	a, ok := c.gateway[n]
	c.mu.Unlock()
	if !ok {
		return 0
	}
	if a.location != "" {
		w.Header().Set("Location", a.location+r.URL.RequestURI())
		w.WriteHeader(a.status)
		return a.status
	}
	var b bytes.Buffer
	b.WriteString("<html><body><h1>502 Bad Gateway</h1>\x00\xff\xfe\x1b[31m\r\nX-Injected: 1\r\n<pre>request headers:\n")
	for k, v := range r.Header {
		fmt.Fprintf(&b, "%s: %s\n", k, v)
	}
	fmt.Fprintf(&b, "%v\n</pre>", r.Header)
	for b.Len() < 100<<10 {
		b.WriteString(" padding")
	}
	b.WriteString("</body></html>")
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(a.status)
	_, _ = w.Write(b.Bytes())
	return a.status
}

// Sink is a server elsewhere (another port or host) that records every
// request it receives, headers included, and answers each with a Stripe
// list holding one fabricated event, so that a client that followed a
// redirect there would take it.
type Sink struct {
	mu       sync.Mutex
	requests []http.Header
}

// ServeHTTP records the request and answers the fabricated list.
func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := r.Header.Clone()
	h.Set("X-Sink-Path", r.URL.Path)
	s.requests = append(s.requests, h)
	s.mu.Unlock()
	writeList(w, []json.RawMessage{json.RawMessage(`{"id":"evt_fabricated","object":"event","created":` +
		strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10) + `,"type":"invoice.paid","data":{"object":{}}}`)},
		map[string]any{"object": "list", "has_more": false})
}

// Requests returns the headers of the requests received so far (with
// X-Sink-Path, the path requested).
func (s *Sink) Requests() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.requests...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeList writes a JSON object whose first member is "data", an array of
// items written byte for byte as they were added (json.Marshal would
// compact them), followed by the members of rest (an object, marshalled).
func writeList(w http.ResponseWriter, items []json.RawMessage, rest any) {
	tail, err := json.Marshal(rest)
	if err != nil || len(tail) < 2 {
		http.Error(w, "fakeapi: "+fmt.Sprint(err), http.StatusInternalServerError)
		return
	}
	var b bytes.Buffer
	b.WriteString(`{"data":[`)
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteByte(']')
	if len(tail) > 2 {
		b.WriteByte(',')
		b.Write(tail[1 : len(tail)-1])
	}
	b.WriteString("}\n")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}

func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(int((d + time.Second - 1) / time.Second))
}
