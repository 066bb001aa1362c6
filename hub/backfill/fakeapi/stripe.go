// Package fakeapi has local fake provider APIs for tests of hub/backfill,
// written from each provider's public API reference: their paging, their
// error objects, 401 on a wrong key and 429 with Retry-After on demand.
// They answer from the events a test adds, never from what the code under
// test expects, and record every request (Hits) so tests can check what
// was asked and when.
package fakeapi

import (
	"encoding/json"

	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// StripeAPI is a fake of Stripe's GET /v1/events: events newest first
// (created descending, then the most recently added first), filters
// created[gt|gte|lt|lte], limit 1..100 (default 10), starting_after and
// ending_before (ids of listed events), a list object with has_more. Errors
// are Stripe's {"error": {"type", "message", ...}}: 401 for a missing or
// wrong key (Authorization: Bearer), 400 for a bad parameter, 429
// (Throttle), any status (FailRequest).
type StripeAPI struct {
	fakeControl
	key string

	mu     sync.Mutex
	events []stripeEvent // in the order added
	// The misbehaviours a test asks for (Endless, Loop, MalformAfter).
	endless      bool
	fabricated   int
	loop         bool
	malformAfter map[string]bool
}

// Endless makes the API page for ever: every answer holds limit new
// events, fabricated inside the query's created range, and has_more, as
// a broken or hostile API might.
func (s *StripeAPI) Endless() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endless = true
}

// Loop makes the listing's cursors loop: the last page says has_more, and
// the page after it is the first again (cursors A, B, A, ...).
func (s *StripeAPI) Loop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loop = true
}

// MalformAfter makes every request with starting_after=id answer 200 with
// a list the hub's parser refuses (has_more, but no id to continue from),
// until the test ends.
func (s *StripeAPI) MalformAfter(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.malformAfter == nil {
		s.malformAfter = map[string]bool{}
	}
	s.malformAfter[id] = true
}

type stripeEvent struct {
	id      string
	created int64
	raw     json.RawMessage
}

// NewStripe returns a fake Stripe API accepting key.
func NewStripe(key string) *StripeAPI { return &StripeAPI{key: key} }

// Add stores events (Stripe event objects: id, created, ...) as the API
// returns them, byte for byte.
func (s *StripeAPI) Add(bodies ...[]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range bodies {
		var ev struct {
			ID      string `json:"id"`
			Created int64  `json:"created"`
		}
		if err := json.Unmarshal(b, &ev); err != nil || ev.ID == "" {
			return fmt.Errorf("fakeapi: not a Stripe event object: %v", err)
		}
		s.events = append(s.events, stripeEvent{id: ev.ID, created: ev.Created, raw: slices.Clone(b)})
	}
	return nil
}

type stripeError struct {
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
}

func stripeFail(w http.ResponseWriter, status int, e stripeError) {
	writeJSON(w, status, map[string]stripeError{"error": e})
}

// ServeHTTP answers the API.
func (s *StripeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handle(w, r, s.serve) }

func (s *StripeAPI) serve(w http.ResponseWriter, r *http.Request, fail int, retryAfter time.Duration, throttled bool) int {
	auth := r.Header.Get("Authorization")
	switch {
	case auth == "":
		stripeFail(w, 401, stripeError{Type: "invalid_request_error", Message: "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth."})
		return 401
	case auth != "Bearer "+s.key:
		key := strings.TrimPrefix(auth, "Bearer ")
		stripeFail(w, 401, stripeError{Type: "invalid_request_error", Message: "Invalid API Key provided: " + maskKey(key)})
		return 401
	case throttled:
		w.Header().Set("Retry-After", retryAfterSeconds(retryAfter))
		stripeFail(w, 429, stripeError{Type: "invalid_request_error", Code: "rate_limit", Message: "Too many requests hit the API too quickly. We recommend an exponential backoff of your requests."})
		return 429
	case fail != 0:
		stripeFail(w, fail, stripeError{Type: "api_error", Message: "Something went wrong on Stripe's end (injected by the test)."})
		return fail
	case r.Method != http.MethodGet || r.URL.Path != "/v1/events":
		stripeFail(w, 404, stripeError{Type: "invalid_request_error", Message: "Unrecognized request URL (" + r.Method + ": " + r.URL.Path + ")."})
		return 404
	}
	q := r.URL.Query()
	limit := 10
	if v := q.Get("limit"); v != "" {
		l, err := strconv.Atoi(v)
		if err != nil || l < 1 || l > 100 {
			stripeFail(w, 400, stripeError{Type: "invalid_request_error", Param: "limit", Message: "Invalid integer: " + v + "; limit must be between 1 and 100."})
			return 400
		}
		limit = l
	}
	bounds := map[string]int64{}
	for _, op := range []string{"gt", "gte", "lt", "lte"} {
		v := q.Get("created[" + op + "]")
		if v == "" {
			continue
		}
		t, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			stripeFail(w, 400, stripeError{Type: "invalid_request_error", Param: "created[" + op + "]", Message: "Invalid integer: " + v})
			return 400
		}
		bounds[op] = t
	}
	s.mu.Lock()
	if s.malformAfter[q.Get("starting_after")] {
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"object":"event","type":"invoice.paid"}],"has_more":true}`))
		return 200
	}
	if s.endless {
		data := s.fabricateLocked(limit, bounds)
		s.mu.Unlock()
		writeList(w, data, map[string]any{"object": "list", "has_more": true, "url": "/v1/events"})
		return 200
	}
	loop, list := s.loop, s.withinLocked(bounds)
	s.mu.Unlock()
	slices.SortStableFunc(list, func(a, b stripeEvent) int { return -cmpInt(a.created, b.created) })
	start, end := 0, len(list)
	if id := q.Get("starting_after"); id != "" {
		i := slices.IndexFunc(list, func(e stripeEvent) bool { return e.id == id })
		if i < 0 {
			stripeFail(w, 400, stripeError{Type: "invalid_request_error", Code: "resource_missing", Param: "starting_after", Message: "No such event: '" + id + "'"})
			return 400
		}
		start = i + 1
		if loop && start >= len(list) {
			start = 0
		}
	} else if id := q.Get("ending_before"); id != "" {
		i := slices.IndexFunc(list, func(e stripeEvent) bool { return e.id == id })
		if i < 0 {
			stripeFail(w, 400, stripeError{Type: "invalid_request_error", Code: "resource_missing", Param: "ending_before", Message: "No such event: '" + id + "'"})
			return 400
		}
		end, start = i, max(0, i-limit)
	}
	page := list[start:min(end, start+limit)]
	data := make([]json.RawMessage, len(page))
	for i, ev := range page {
		data[i] = ev.raw
	}
	writeList(w, data, struct {
		Object  string `json:"object"`
		HasMore bool   `json:"has_more"`
		URL     string `json:"url"`
	}{"list", loop || start+len(page) < len(list), "/v1/events"})
	return 200
}

// withinLocked returns the events created within bounds ("gt", "gte",
// "lt", "lte" of created), newest added first.
func (s *StripeAPI) withinLocked(bounds map[string]int64) []stripeEvent {
	list := make([]stripeEvent, 0, len(s.events))
	for i := len(s.events) - 1; i >= 0; i-- { // newest added first among equal created
		ev := s.events[i]
		if t, ok := bounds["gt"]; ok && ev.created <= t {
			continue
		}
		if t, ok := bounds["gte"]; ok && ev.created < t {
			continue
		}
		if t, ok := bounds["lt"]; ok && ev.created >= t {
			continue
		}
		if t, ok := bounds["lte"]; ok && ev.created > t {
			continue
		}
		list = append(list, ev)
	}
	return list
}

// fabricateLocked makes n new events created inside bounds (the newest
// second the query allows).
func (s *StripeAPI) fabricateLocked(n int, bounds map[string]int64) []json.RawMessage {
	created := time.Now().Unix() - 600
	if t, ok := bounds["lt"]; ok {
		created = t - 1
	}
	out := make([]json.RawMessage, n)
	for i := range out {
		s.fabricated++
		out[i] = json.RawMessage(fmt.Sprintf(`{"id":"evt_fabricated%08d","object":"event","api_version":"2024-06-20","created":%d,"type":"invoice.paid","livemode":false,"pending_webhooks":0,"request":{"id":null,"idempotency_key":null},"data":{"object":{"id":"in_fabricated","object":"invoice"}}}`, s.fabricated, created))
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// maskKey shows a key as Stripe's errors do: its prefix and last four.
func maskKey(k string) string {
	if len(k) <= 8 {
		return "****"
	}
	return k[:8] + "****" + k[len(k)-4:]
}
