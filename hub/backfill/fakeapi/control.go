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
	At     time.Time
	Method string
	Path   string
	Query  string // the raw query
	Status int
}

// fakeControl is what every fake shares: the requests it answered, and
// the failures a test asks for.
type fakeControl struct {
	mu       sync.Mutex
	hits     []Hit
	throttle []time.Duration // the next requests answer 429 with these Retry-After
	failures map[int]int     // request number (1-based) -> status to answer instead
}

// record notes a request and returns its number (1-based), a status to
// fail it with (0: none) and, for a throttled one, the Retry-After.
func (c *fakeControl) record(r *http.Request) (n, fail int, retryAfter time.Duration, throttled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hits = append(c.hits, Hit{At: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery})
	n = len(c.hits)
	if len(c.throttle) > 0 {
		retryAfter, c.throttle = c.throttle[0], c.throttle[1:]
		return n, http.StatusTooManyRequests, retryAfter, true
	}
	return n, c.failures[n], 0, false
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
