package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// GitHubOptions configures a fake GitHub API.
type GitHubOptions struct {
	// Token is the one token accepted ("Authorization: Bearer <token>" or
	// "token <token>"); empty means "ghp_fake".
	Token string
	// Hook is the webhook's path under the API; empty means
	// "repos/octocat/Hello-World/hooks/1".
	Hook string
	// Now is the fake's clock (rate-limit resets, redeliveries); nil means
	// time.Now.
	Now func() time.Time
}

// GitHubDelivery is one delivery the fake keeps.
type GitHubDelivery struct {
	ID          int64 // assigned when 0
	GUID        string
	DeliveredAt time.Time
	Redelivery  bool
	Event       string // the X-GitHub-Event
	// Action is the listing's action; when empty, the payload's top-level
	// "action" string (null when it has none), as GitHub does.
	Action     string
	StatusCode int    // the receiver's answer; 0 means 502 "failed to connect"
	Status     string // e.g. "OK"; empty means derived from StatusCode
	// Headers are the request headers GitHub sent; X-GitHub-Delivery,
	// X-GitHub-Event, X-GitHub-Hook-ID, Content-Type and User-Agent are
	// filled in when missing.
	Headers map[string]string
	// Payload is the event's JSON object as sent. The API serves it
	// decoded and re-encoded (keys sorted, no spaces), as GitHub's API
	// does not keep the original bytes.
	Payload []byte
}

// GitHubRequest is one request the fake received.
type GitHubRequest struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Status   int // what the fake answered
}

// GitHubFailure is an answer the fake gives instead of serving a request:
// GitHub's rate limits.
type GitHubFailure struct {
	Status int // 403 or 429
	// RetryAfter, when positive, is sent as Retry-After (whole seconds).
	RetryAfter time.Duration
	// Reset, when positive, sends x-ratelimit-remaining: 0 and
	// x-ratelimit-reset at the fake's now plus Reset.
	Reset time.Duration
	// Message is the error message; empty means GitHub's for the kind.
	Message string
}

// GitHubPrimaryLimit is GitHub's primary rate limit: 403,
// x-ratelimit-remaining 0, reset after reset.
func GitHubPrimaryLimit(reset time.Duration) GitHubFailure {
	return GitHubFailure{Status: http.StatusForbidden, Reset: reset, Message: "API rate limit exceeded for user ID 1."}
}

// GitHubSecondaryLimit is one of GitHub's secondary rate limits: status
// (403 or 429) with Retry-After.
func GitHubSecondaryLimit(status int, retryAfter time.Duration) GitHubFailure {
	return GitHubFailure{Status: status, RetryAfter: retryAfter, Message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}
}

// GitHub is a fake of GitHub's webhook deliveries REST API, following its
// documentation: GET /{hook}/deliveries (newest first, per_page up to
// 100, default 30, cursor paging through the Link header, the redelivery
// filter), GET /{hook}/deliveries/{id} (with request.headers and
// request.payload), POST /{hook}/deliveries/{id}/attempts (202, and a new
// delivery with the same guid marked redelivery). A wrong or missing token
// is a 401; queued failures (FailNext) answer the next requests. Its
// methods are safe for concurrent use.
type GitHub struct {
	URL   string // the API's base URL, the source's api_url setting
	Token string
	Hook  string

	now func() time.Time

	mu         sync.Mutex
	deliveries []GitHubDelivery
	nextID     int64
	failures   []GitHubFailure
	requests   []GitHubRequest
	attempts   []int64
	// future: list endless pages of deliveries dated a year ahead
	// (EndlessFuture).
	future int64
}

// EndlessFuture makes the listing page for ever through deliveries dated
// a year in the future (new ones on every page, each with a next link),
// as a broken GitHub Enterprise clock or a hostile API might.
func (g *GitHub) EndlessFuture() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.future = 1
}

// NewGitHub starts a fake GitHub API, closed when tb ends.
func NewGitHub(tb testing.TB, opts GitHubOptions) *GitHub {
	tb.Helper()
	g := &GitHub{Token: opts.Token, Hook: strings.Trim(opts.Hook, "/"), now: opts.Now, nextID: 1000}
	if g.Token == "" {
		g.Token = "ghp_fake"
	}
	if g.Hook == "" {
		g.Hook = "repos/octocat/Hello-World/hooks/1"
	}
	if g.now == nil {
		g.now = time.Now
	}
	srv := httptest.NewServer(http.HandlerFunc(g.serve))
	tb.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// Add stores a delivery, filling in its id and headers, and returns it.
func (g *GitHub) Add(d GitHubDelivery) GitHubDelivery {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.addLocked(d)
}

func (g *GitHub) addLocked(d GitHubDelivery) GitHubDelivery {
	if d.ID == 0 {
		g.nextID++
		d.ID = g.nextID
	}
	if d.Action == "" {
		var p struct {
			Action any `json:"action"`
		}
		if json.Unmarshal(d.Payload, &p) == nil {
			d.Action, _ = p.Action.(string)
		}
	}
	if d.StatusCode == 0 {
		d.StatusCode, d.Status = 502, "failed to connect to host"
	}
	if d.Status == "" {
		d.Status = http.StatusText(d.StatusCode)
	}
	h := make(map[string]string, len(d.Headers)+5)
	for k, v := range d.Headers {
		h[k] = v
	}
	def := map[string]string{
		"X-GitHub-Delivery": d.GUID,
		"X-GitHub-Event":    d.Event,
		"X-GitHub-Hook-ID":  g.Hook[strings.LastIndexByte(g.Hook, '/')+1:],
		"Content-Type":      "application/json",
		"User-Agent":        "GitHub-Hookshot/a2c3b5e",
		"Accept":            "*/*",
	}
	for k, v := range def {
		if _, ok := githubHeaderValue(h, k); !ok {
			h[k] = v
		}
	}
	d.Headers = h
	g.deliveries = append(g.deliveries, d)
	return d
}

// FailNext queues failures: each answers one of the next requests that
// carry the right token, in order.
func (g *GitHub) FailNext(f ...GitHubFailure) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failures = append(g.failures, f...)
}

// Requests returns the requests received so far.
func (g *GitHub) Requests() []GitHubRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.requests)
}

// Attempts returns the delivery ids redelivered so far, in order.
func (g *GitHub) Attempts() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.attempts)
}

// Deliveries returns the deliveries kept, redeliveries included, newest
// first.
func (g *GitHub) Deliveries() []GitHubDelivery {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sortedLocked()
}

// sortedLocked is the deliveries newest first (ties: the higher id first).
func (g *GitHub) sortedLocked() []GitHubDelivery {
	out := slices.Clone(g.deliveries)
	slices.SortStableFunc(out, func(a, b GitHubDelivery) int {
		if c := b.DeliveredAt.Compare(a.DeliveredAt); c != 0 {
			return c
		}
		switch {
		case a.ID > b.ID:
			return -1
		case a.ID < b.ID:
			return 1
		}
		return 0
	})
	return out
}

func (g *GitHub) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rec := GitHubRequest{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone()}
	status := g.route(w, r)
	rec.Status = status
	g.requests = append(g.requests, rec)
}

// route answers r and returns the status sent.
func (g *GitHub) route(w http.ResponseWriter, r *http.Request) int {
	auth := r.Header.Get("Authorization")
	if auth != "Bearer "+g.Token && auth != "token "+g.Token {
		return githubError(w, http.StatusUnauthorized, "Bad credentials")
	}
	if len(g.failures) > 0 {
		f := g.failures[0]
		g.failures = g.failures[1:]
		return g.fail(w, f)
	}
	g.rateHeaders(w, 4999)
	rest, ok := strings.CutPrefix(r.URL.Path, "/"+g.Hook+"/deliveries")
	if !ok {
		return githubError(w, http.StatusNotFound, "Not Found")
	}
	switch parts := strings.Split(strings.TrimPrefix(rest, "/"), "/"); {
	case rest == "":
		if r.Method != http.MethodGet {
			return githubError(w, http.StatusNotFound, "Not Found")
		}
		return g.list(w, r)
	case len(parts) == 1:
		if r.Method != http.MethodGet {
			return githubError(w, http.StatusNotFound, "Not Found")
		}
		return g.get(w, parts[0])
	case len(parts) == 2 && parts[1] == "attempts":
		if r.Method != http.MethodPost {
			return githubError(w, http.StatusNotFound, "Not Found")
		}
		return g.redeliver(w, parts[0])
	}
	return githubError(w, http.StatusNotFound, "Not Found")
}

func (g *GitHub) rateHeaders(w http.ResponseWriter, remaining int) {
	h := w.Header()
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Used", strconv.Itoa(5000-remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(g.now().Add(time.Hour).Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

func (g *GitHub) fail(w http.ResponseWriter, f GitHubFailure) int {
	if f.Reset > 0 {
		g.rateHeaders(w, 0)
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(g.now().Add(f.Reset).Unix(), 10))
	} else {
		g.rateHeaders(w, 4000)
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", retryAfterSeconds(f.RetryAfter))
	}
	msg := f.Message
	if msg == "" {
		msg = "API rate limit exceeded"
	}
	status := f.Status
	if status == 0 {
		status = http.StatusTooManyRequests
	}
	return githubError(w, status, msg)
}

func (g *GitHub) list(w http.ResponseWriter, r *http.Request) int {
	q := r.URL.Query()
	perPage := 30
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return githubError(w, http.StatusBadRequest, "per_page must be a positive integer")
		}
		perPage = min(n, 100)
	}
	if g.future > 0 {
		return g.futurePage(w, perPage)
	}
	all := g.sortedLocked()
	if v := q.Get("redelivery"); v != "" {
		want, err := strconv.ParseBool(v)
		if err != nil {
			return githubError(w, http.StatusBadRequest, "redelivery must be a boolean")
		}
		all = slices.DeleteFunc(all, func(d GitHubDelivery) bool { return d.Redelivery != want })
	}
	// A cursor "v1_<id>" starts the page at that delivery, as GitHub's
	// opaque cursors name the starting delivery.
	start := 0
	if c := q.Get("cursor"); c != "" {
		id, err := strconv.ParseInt(strings.TrimPrefix(c, "v1_"), 10, 64)
		start = slices.IndexFunc(all, func(d GitHubDelivery) bool { return d.ID == id })
		if !strings.HasPrefix(c, "v1_") || err != nil || start < 0 {
			return githubError(w, http.StatusUnprocessableEntity, "Validation Failed")
		}
	}
	end := min(start+perPage, len(all))
	page := all[start:end]
	// GitHub's links name the repository by id, not by the path the
	// client used.
	linkBase := g.URL + "/repositories/1296269/hooks" + g.Hook[strings.LastIndexByte(g.Hook, '/'):] + "/deliveries?per_page=" + strconv.Itoa(perPage)
	var links []string
	if end < len(all) {
		links = append(links, fmt.Sprintf(`<%s&cursor=v1_%d>; rel="next"`, linkBase, all[end].ID))
	}
	if start > 0 {
		links = append(links, fmt.Sprintf(`<%s&cursor=v1_%d>; rel="prev"`, linkBase, all[max(start-perPage, 0)].ID))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	items := make([]map[string]any, 0, len(page))
	for _, d := range page {
		items = append(items, githubItem(d))
	}
	writeJSON(w, http.StatusOK, items)
	return http.StatusOK
}

// futurePage answers a page of EndlessFuture's deliveries.
func (g *GitHub) futurePage(w http.ResponseWriter, perPage int) int {
	at := g.now().AddDate(1, 0, 0)
	items := make([]map[string]any, 0, perPage)
	for range perPage {
		g.future++
		items = append(items, githubItem(GitHubDelivery{ID: 1<<40 - g.future, GUID: fmt.Sprintf("f0000000-0000-4000-8000-%012d", g.future),
			DeliveredAt: at, Event: "push", StatusCode: 502, Status: "failed to connect to host"}))
	}
	linkBase := g.URL + "/repositories/1296269/hooks" + g.Hook[strings.LastIndexByte(g.Hook, '/'):] + "/deliveries?per_page=" + strconv.Itoa(perPage)
	w.Header().Set("Link", fmt.Sprintf(`<%s&cursor=v1_%d>; rel="next"`, linkBase, 1<<40-g.future-1))
	writeJSON(w, http.StatusOK, items)
	return http.StatusOK
}

func (g *GitHub) find(id string) (GitHubDelivery, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return GitHubDelivery{}, false
	}
	for _, d := range g.deliveries {
		if d.ID == n {
			return d, true
		}
	}
	return GitHubDelivery{}, false
}

func (g *GitHub) get(w http.ResponseWriter, id string) int {
	d, ok := g.find(id)
	if !ok {
		return githubError(w, http.StatusNotFound, "Not Found")
	}
	item := githubItem(d)
	var payload any // the payload as a value: re-encoded, not the bytes sent
	if json.Unmarshal(d.Payload, &payload) != nil {
		payload = nil
	}
	item["url"] = "https://hub.example.com/webhooks/github"
	item["request"] = map[string]any{"headers": d.Headers, "payload": payload}
	item["response"] = map[string]any{
		"headers": map[string]string{"Content-Type": "application/json"},
		"payload": `{"event_id":"` + d.GUID + `"}`,
	}
	writeJSON(w, http.StatusOK, item)
	return http.StatusOK
}

func (g *GitHub) redeliver(w http.ResponseWriter, id string) int {
	d, ok := g.find(id)
	if !ok {
		return githubError(w, http.StatusNotFound, "Not Found")
	}
	g.attempts = append(g.attempts, d.ID)
	d.ID, d.Redelivery, d.DeliveredAt = 0, true, g.now()
	d.StatusCode, d.Status = 200, "OK"
	g.addLocked(d)
	writeJSON(w, http.StatusAccepted, map[string]any{})
	return http.StatusAccepted
}

// githubItem is a delivery as the listing shows it.
func githubItem(d GitHubDelivery) map[string]any {
	var action any
	if d.Action != "" {
		action = d.Action
	}
	return map[string]any{
		"id":              d.ID,
		"guid":            d.GUID,
		"delivered_at":    d.DeliveredAt.UTC().Format(time.RFC3339),
		"redelivery":      d.Redelivery,
		"duration":        0.27,
		"status":          d.Status,
		"status_code":     d.StatusCode,
		"event":           d.Event,
		"action":          action,
		"installation_id": nil,
		"repository_id":   1296269,
		"throttled_at":    nil,
	}
}

// githubError writes GitHub's error object and returns status.
func githubError(w http.ResponseWriter, status int, message string) int {
	writeJSON(w, status, map[string]string{
		"message":           message,
		"documentation_url": "https://docs.github.com/rest",
		"status":            strconv.Itoa(status),
	})
	return status
}

// githubHeaderValue looks name up in h case-insensitively.
func githubHeaderValue(h map[string]string, name string) (string, bool) {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}
