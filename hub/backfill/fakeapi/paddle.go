package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PaddleAPI is a fake of Paddle Billing's GET /events: cursor paging by
// event id (order_by id[ASC], the default, or id[DESC]; after returns the
// events past that id in that order), per_page 1..200 (default 50; more is
// answered with 200), and meta.pagination {per_page, next (this URL's
// query with after set to the page's last id, always present), has_more,
// estimated_total}. No time filter: the API has none. Errors are Paddle's
// {"error": {"type", "code", "detail", "documentation_url"}, "meta":
// {"request_id"}}: 401 for a missing or wrong key (Authorization: Bearer),
// 400 for a bad parameter, 429 with Retry-After (Throttle), any status
// (FailRequest).
type PaddleAPI struct {
	fakeControl
	key string
	// BaseURL is what next URLs start with (the test server's URL).
	BaseURL string

	mu     sync.Mutex
	events map[string]json.RawMessage // by event_id
}

// NewPaddle returns a fake Paddle API accepting key.
func NewPaddle(key string) *PaddleAPI {
	return &PaddleAPI{key: key, events: map[string]json.RawMessage{}}
}

// Add stores event entities (event_id, event_type, occurred_at, data) as
// the API returns them, byte for byte. Paddle's ids sort in the order the
// events were created.
func (p *PaddleAPI) Add(bodies ...[]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range bodies {
		var ev struct {
			EventID string `json:"event_id"`
		}
		if err := json.Unmarshal(b, &ev); err != nil || ev.EventID == "" {
			return fmt.Errorf("fakeapi: not a Paddle event entity: %v", err)
		}
		p.events[ev.EventID] = slices.Clone(b)
	}
	return nil
}

type paddleError struct {
	Type             string `json:"type"`
	Code             string `json:"code"`
	Detail           string `json:"detail"`
	DocumentationURL string `json:"documentation_url"`
}

func paddleFail(w http.ResponseWriter, status int, typ, code, detail string) {
	writeJSON(w, status, map[string]any{
		"error": paddleError{Type: typ, Code: code, Detail: detail, DocumentationURL: "https://developer.paddle.com/errors/shared/" + code},
		"meta":  map[string]string{"request_id": requestID()},
	})
}

var requestSeq struct {
	sync.Mutex
	n int
}

func requestID() string {
	requestSeq.Lock()
	defer requestSeq.Unlock()
	requestSeq.n++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", requestSeq.n)
}

// ServeHTTP answers the API.
func (p *PaddleAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.handle(w, r, p.serve) }

func (p *PaddleAPI) serve(w http.ResponseWriter, r *http.Request, fail int, retryAfter time.Duration, throttled bool) int {
	auth := r.Header.Get("Authorization")
	switch {
	case auth == "":
		paddleFail(w, 401, "request_error", "authentication_missing", "Authentication header missing")
		return 401
	case auth != "Bearer "+p.key:
		paddleFail(w, 401, "request_error", "invalid_token", "Authentication token passed is invalid")
		return 401
	case throttled:
		w.Header().Set("Retry-After", retryAfterSeconds(retryAfter))
		paddleFail(w, 429, "api_error", "too_many_requests", "IP address exceeded the allowed rate limit. Retry after the number of seconds in the Retry-After header.")
		return 429
	case fail != 0:
		paddleFail(w, fail, "api_error", "internal_error", "Something went wrong (injected by the test)")
		return fail
	case r.Method != http.MethodGet || r.URL.Path != "/events":
		paddleFail(w, 404, "request_error", "not_found", "Path "+r.URL.Path+" not found")
		return 404
	}
	q := r.URL.Query()
	perPage := 50
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			paddleFail(w, 400, "request_error", "bad_request", "Invalid request: per_page must be a positive integer")
			return 400
		}
		perPage = min(n, 200)
	}
	desc := false
	switch q.Get("order_by") {
	case "", "id[ASC]":
	case "id[DESC]":
		desc = true
	default:
		paddleFail(w, 400, "request_error", "bad_request", "Invalid request: order_by must be id[ASC] or id[DESC]")
		return 400
	}
	after := q.Get("after")
	p.mu.Lock()
	ids := make([]string, 0, len(p.events))
	for id := range p.events {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if desc {
		slices.Reverse(ids)
	}
	matching := len(ids)
	if after != "" {
		i := slices.IndexFunc(ids, func(id string) bool {
			if desc {
				return id < after
			}
			return id > after
		})
		if i < 0 {
			i = len(ids)
		}
		ids = ids[i:]
	}
	page := ids[:min(perPage, len(ids))]
	data := make([]json.RawMessage, len(page))
	for i, id := range page {
		data[i] = p.events[id]
	}
	p.mu.Unlock()
	next := url.Values{}
	for k, v := range q {
		next[k] = v
	}
	if len(page) > 0 {
		next.Set("after", page[len(page)-1])
	}
	writeList(w, data, map[string]any{
		"meta": map[string]any{
			"request_id": requestID(),
			"pagination": map[string]any{
				"per_page":        perPage,
				"next":            strings.TrimRight(p.BaseURL, "/") + "/events?" + next.Encode(),
				"has_more":        len(ids) > len(page),
				"estimated_total": matching,
			},
		},
	})
	return 200
}
