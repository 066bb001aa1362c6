package backfill

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/internal/jsontext"
	"github.com/hookhub/hookhub/internal/outbound"
)

const (
	// GitHubDefaultBaseURL is the REST API of github.com. GitHub
	// Enterprise Server's is https://HOST/api/v3.
	GitHubDefaultBaseURL = "https://api.github.com"
	githubAPIVersion     = "2022-11-28"
	githubPerPage        = 100
	// githubMaxWait caps one rate-limit wait: a primary limit resets
	// within the hour, and GitHub asks not to retry before it does.
	githubMaxWait = time.Hour
	// githubSecondaryWait is what GitHub asks for after a secondary rate
	// limit that names no time.
	githubSecondaryWait = time.Minute
	// githubRefHorizon is how long a listed delivery's id is remembered
	// for Fetch and Redeliver: longer than any retention (github.com keeps
	// deliveries 3 days, GitHub Enterprise Server 7).
	githubRefHorizon = 8 * 24 * time.Hour
	// githubMaxRefs bounds the deliveries remembered (about 100 bytes
	// each), githubMaxRefPages the pages read to find one not remembered.
	githubMaxRefs     = 200_000
	githubMaxRefPages = DefaultMaxPages
)

// githubHookPattern is a webhook's path under the API: a repository's or
// an organization's hook.
var githubHookPattern = regexp.MustCompile(`^(repos/[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+|orgs/[A-Za-z0-9][A-Za-z0-9-]*)/hooks/[1-9][0-9]{0,18}$`)

// GitHubConfig configures the GitHub source.
type GitHubConfig struct {
	// BaseURL is the REST API's base URL (SettingAPIURL); empty means
	// GitHubDefaultBaseURL.
	BaseURL string
	// Token (SettingToken) is sent as "Authorization: Bearer". It must
	// be allowed to read the hook (classic tokens: admin:repo_hook or
	// admin:org_hook; fine-grained: the "Webhooks" permission, read to
	// list and fetch, write to redeliver). Never logged.
	Token string
	// Hook (SettingHook) is the webhook's path under the API:
	// "repos/OWNER/REPO/hooks/ID" or "orgs/ORG/hooks/ID".
	Hook string
	// Client sends the requests (default: a client with a 30 s timeout).
	// Its Transport is wrapped, never modified.
	Client *http.Client
	// Names names the settings (SettingToken, SettingHook, SettingAPIURL)
	// in errors.
	Names Names
}

// GitHub lists one GitHub webhook's deliveries through the REST API
// (GET /{hook}/deliveries), fetches a delivery's payload
// (GET /{hook}/deliveries/{id}) and asks GitHub to redeliver one
// (POST /{hook}/deliveries/{id}/attempts). It implements Source, Fetcher
// and Redeliverer.
//
// An event's ID is the delivery's guid, which GitHub sends as
// X-GitHub-Delivery and keeps across redeliveries, and its Type is the
// event followed by "." and the action when there is one
// ("pull_request.opened", "push"): what hub/provider's GitHub verifier
// extracts from the same event's webhook, so a webhook arriving after the
// backfill is answered as a duplicate. OccurredAt is when GitHub first
// delivered it (or tried to), marked OccurredAtAPIOnly: a GitHub webhook
// carries no time the hub reads, so a backfilled copy is archived without
// one too (no Hub-Occurred-At), exactly like its webhook.
//
// GitHub keeps deliveries for a limited time only (3 days on github.com,
// 7 on GitHub Enterprise Server): older events cannot be backfilled.
//
// A GitHub is safe for concurrent use.
type GitHub struct {
	api   api
	hook  string
	names Names
	now   func() time.Time

	mu   sync.Mutex
	refs map[string]githubRef // guid → a delivery of it, for Fetch and Redeliver
}

var (
	_ Source      = (*GitHub)(nil)
	_ Fetcher     = (*GitHub)(nil)
	_ Redeliverer = (*GitHub)(nil)
)

// githubRef is one delivery of an event: its id in the API and when it
// was made.
type githubRef struct {
	id          int64
	deliveredAt time.Time
	original    bool
}

// NewGitHub returns the GitHub source for cfg. It fails, naming the
// variable, when the token is empty, the hook is not one of the two forms
// or the base URL is not an http(s) URL.
func NewGitHub(cfg GitHubConfig) (*GitHub, error) {
	token, tokenName := cfg.Token, cfg.Names.of(SettingToken)
	switch {
	case token == "":
		return nil, fmt.Errorf("%s is empty: set a GitHub token that may read the webhook's deliveries", tokenName)
	case hasSpaceOrControl(token):
		return nil, fmt.Errorf("%s contains spaces or control characters", tokenName)
	}
	hook := strings.Trim(cfg.Hook, "/")
	if !githubHookPattern.MatchString(hook) || strings.Contains(hook, "/./") || strings.Contains(hook, "/../") {
		return nil, fmt.Errorf("%s %q is not repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID", cfg.Names.of(SettingHook), cfg.Hook)
	}
	base, err := baseURL(cfg.BaseURL, GitHubDefaultBaseURL, cfg.Names.of(SettingAPIURL), "")
	if err != nil {
		return nil, err
	}
	a, err := newAPI(cfg.Client, base, tokenName, token, func(h http.Header) {
		h.Set("Authorization", "Bearer "+token)
		h.Set("Accept", "application/vnd.github+json")
		h.Set("X-GitHub-Api-Version", githubAPIVersion)
	})
	if err != nil {
		return nil, err
	}
	a.maxWait = githubMaxWait
	g := &GitHub{api: *a, hook: hook, names: cfg.Names, now: time.Now, refs: make(map[string]githubRef)}
	g.api.limited = func(ans answer, body []byte) (time.Duration, bool) { return githubRateLimit(ans, body, g.now()) }
	return g, nil
}

// Provider returns "github".
func (g *GitHub) Provider() string { return "github" }

// List returns a page of the hook's deliveries, newest first as GitHub
// lists them, as events: one per event, from its original delivery
// (redeliveries share its guid and are left out), when that delivery was
// made within [since, until) (a zero bound is no bound). The cursor is
// GitHub's, taken from the Link header's rel="next"; Next is "" on the
// last page and on the first page reaching past since.
//
// An event whose original delivery is no longer kept by GitHub while a
// redelivery still is, is not listed: it happened before GitHub's
// retention, so before any since that retention allows.
func (g *GitHub) List(ctx context.Context, since, until time.Time, cursor string) (Page, error) {
	if cursor == "" {
		g.prune()
	}
	items, next, err := g.listPage(ctx, cursor)
	if err != nil {
		return Page{}, err
	}
	// The listing is newest first: a page reaching past since is the
	// last one needed (a redelivery counts: its original is older still).
	for _, d := range items {
		if !since.IsZero() && !d.DeliveredAt.IsZero() && d.DeliveredAt.Before(since) {
			next = ""
		}
	}
	var page Page
	seen := make(map[string]struct{}, len(items))
	for _, d := range items {
		outside := (!since.IsZero() && d.DeliveredAt.Before(since)) || (!until.IsZero() && !d.DeliveredAt.Before(until))
		if d.problem != nil {
			// Malformed: counted failed by the engine (with its guid
			// when it has a usable one), never fatal to the page.
			if !outside || d.DeliveredAt.IsZero() {
				page.Events = append(page.Events, Event{ID: d.GUID, OccurredAt: d.DeliveredAt, OccurredAtAPIOnly: true, Invalid: d.problem})
			}
			continue
		}
		if outside {
			continue // not remembered either: only what the run may fetch
		}
		g.remember(d)
		if d.Redelivery {
			continue
		}
		if _, dup := seen[d.GUID]; dup {
			continue
		}
		seen[d.GUID] = struct{}{}
		page.Events = append(page.Events, Event{ID: d.GUID, Type: githubType(d.Event, d.action()), OccurredAt: d.DeliveredAt, OccurredAtAPIOnly: true})
	}
	page.Next = next
	return page, nil
}

// listPage GETs one page of deliveries and the cursor of the next.
func (g *GitHub) listPage(ctx context.Context, cursor string) ([]githubDelivery, string, error) {
	q := url.Values{"per_page": {strconv.Itoa(githubPerPage)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var list githubDeliveryList
	ans, err := g.do(ctx, http.MethodGet, "/"+g.hook+"/deliveries?"+q.Encode(), &list)
	if err != nil {
		return nil, "", err
	}
	next, err := githubNextCursor(ans.header.Get("Link"))
	if err != nil {
		return nil, "", g.api.scrub(fmt.Errorf("list github deliveries: %w", err))
	}
	if next != "" && next == cursor {
		return nil, "", g.api.scrub(fmt.Errorf("list github deliveries: the next page's cursor %q is this page's", next))
	}
	return list, next, nil
}

// Fetch returns ev with Body set to the payload GitHub keeps for the
// delivery (request.payload) and Type derived from that delivery's
// X-GitHub-Event header and payload by hub/provider's GitHubEvent, the
// GitHub verifier's own code (List's Type
// comes from the listing's event and action, which GitHub takes from the
// same payload; Fetch's is authoritative).
//
// GitHub returns the payload as a JSON object inside its answer, not as
// the bytes it sent: the body is that object's bytes as the API encodes
// it, which can differ from the webhook's original bytes in whitespace,
// key order and escaping (and for a hook with content type
// application/x-www-form-urlencoded it is the JSON, not the form). It
// carries the same JSON value, but a signature over the original bytes
// does not match it.
func (g *GitHub) Fetch(ctx context.Context, ev Event) (Event, error) {
	out, err := g.fetch(ctx, ev)
	return out, g.api.scrub(err)
}

func (g *GitHub) fetch(ctx context.Context, ev Event) (Event, error) {
	ref, err := g.ref(ctx, ev)
	if err != nil {
		return Event{}, err
	}
	var d githubDeliveryDetail
	if _, err := g.do(ctx, http.MethodGet, "/"+g.hook+"/deliveries/"+strconv.FormatInt(ref.id, 10), &d); err != nil {
		return Event{}, err
	}
	if d.GUID != ev.ID {
		return Event{}, fmt.Errorf("github delivery %d is of event %q, not %q", ref.id, d.GUID, ev.ID)
	}
	if jsontext.FirstNonSpace(d.Request.Payload) != '{' {
		return Event{}, fmt.Errorf("github delivery %d (event %s) has no JSON object payload", ref.id, ev.ID)
	}
	pe, err := provider.GitHubEvent(githubRequestHeader{&d}, d.Request.Payload)
	if err != nil {
		return Event{}, fmt.Errorf("github delivery %d (event %s): %w", ref.id, ev.ID, err)
	}
	out := ev
	out.Type = pe.Type
	out.Entities = pe.Entities
	out.Body = d.Request.Payload
	if out.OccurredAt.IsZero() {
		out.OccurredAt = d.DeliveredAt
	}
	out.OccurredAtAPIOnly = true
	return out, nil
}

// Redeliver asks GitHub to send ev's webhook again (POST
// .../deliveries/{id}/attempts, answered 202): the hub then receives it,
// signed, with its original bytes and X-GitHub-Delivery. GitHub redelivers
// only deliveries of the last 3 days (7 on GitHub Enterprise Server), and
// the token needs write access to the hook.
func (g *GitHub) Redeliver(ctx context.Context, ev Event) error {
	ref, err := g.ref(ctx, ev)
	if err != nil {
		return g.api.scrub(err)
	}
	_, err = g.do(ctx, http.MethodPost, "/"+g.hook+"/deliveries/"+strconv.FormatInt(ref.id, 10)+"/attempts", nil)
	return g.api.scrub(err)
}

// do sends a request through the shared API client and returns what it
// saw of the last answer; a 404 error names the hook's setting.
func (g *GitHub) do(ctx context.Context, method, path string, out any) (answer, error) {
	ans, err := g.api.call(ctx, method, path, nil, out)
	if err != nil && ans.status == http.StatusNotFound {
		return ans, fmt.Errorf("%w (check %s, and that %s may read that hook)", err, g.names.of(SettingHook), g.names.of(SettingToken))
	}
	return ans, err
}

// ref returns a delivery of ev: one List saw, or else one found by
// listing from the newest delivery back to ev.OccurredAt.
func (g *GitHub) ref(ctx context.Context, ev Event) (githubRef, error) {
	if ev.ID == "" {
		return githubRef{}, errors.New("github event has no id")
	}
	g.mu.Lock()
	ref, ok := g.refs[ev.ID]
	g.mu.Unlock()
	if ok {
		return ref, nil
	}
	cursor := ""
	seen := map[string]struct{}{}
	for pages := 1; ; pages++ {
		items, next, err := g.listPage(ctx, cursor)
		if err != nil {
			return githubRef{}, err
		}
		past := false
		for _, d := range items {
			if d.problem != nil {
				continue
			}
			g.remember(d)
			if !ev.OccurredAt.IsZero() && d.DeliveredAt.Before(ev.OccurredAt.Add(-time.Minute)) {
				past = true
			}
		}
		g.mu.Lock()
		ref, ok = g.refs[ev.ID]
		g.mu.Unlock()
		if ok {
			return ref, nil
		}
		if next == "" || past {
			return githubRef{}, fmt.Errorf("github event %s: no delivery of it is listed (GitHub keeps deliveries for a few days only)", ev.ID)
		}
		if _, loop := seen[next]; loop || pages >= githubMaxRefPages {
			return githubRef{}, fmt.Errorf("github event %s: no delivery of it found in %d pages of deliveries", ev.ID, pages)
		}
		seen[next] = struct{}{}
		cursor = next
	}
}

// remember records d as a delivery of its event, preferring the original,
// up to githubMaxRefs events (past it, Fetch and Redeliver find a delivery
// by listing).
func (g *GitHub) remember(d githubDelivery) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old, ok := g.refs[d.GUID]
	if (ok && old.original && d.Redelivery) || (!ok && len(g.refs) >= githubMaxRefs) {
		return
	}
	g.refs[d.GUID] = githubRef{id: d.ID, deliveredAt: d.DeliveredAt, original: !d.Redelivery}
}

// prune forgets deliveries older than any retention, and any dated in the
// future.
func (g *GitHub) prune() {
	now := g.now()
	horizon := now.Add(-githubRefHorizon)
	g.mu.Lock()
	defer g.mu.Unlock()
	for guid, ref := range g.refs {
		if ref.deliveredAt.Before(horizon) || ref.deliveredAt.After(now.Add(time.Hour)) {
			delete(g.refs, guid)
		}
	}
}

// githubType is the hub's type of a GitHub event: the X-GitHub-Event
// value, followed by "." and the action when there is one.
func githubType(event, action string) string {
	if action == "" {
		return event
	}
	return event + "." + action
}

// githubDelivery is one item of GitHub's deliveries listing.
type githubDelivery struct {
	// problem is why a listed item is unusable (malformed; its GUID and
	// DeliveredAt are kept when readable), nil for a good one.
	problem     error
	ID          int64     `json:"id"`
	GUID        string    `json:"guid"`
	DeliveredAt time.Time `json:"delivered_at"`
	Redelivery  bool      `json:"redelivery"`
	StatusCode  int       `json:"status_code"`
	Event       string    `json:"event"`
	Action      *string   `json:"action"`
}

func (d *githubDelivery) action() string {
	if d.Action == nil {
		return ""
	}
	return *d.Action
}

// check reports what makes d unusable: an event the hub could not have
// taken as a webhook either.
func (d *githubDelivery) check() error {
	if d.ID <= 0 {
		return errors.New("no id")
	}
	if err := provider.CheckEventID(d.GUID); err != nil {
		return fmt.Errorf("delivery %d: guid %q: %w", d.ID, d.GUID, err)
	}
	if err := provider.CheckEventType(d.Event); err != nil {
		return fmt.Errorf("delivery %d: event %q: %w", d.ID, d.Event, err)
	}
	if d.DeliveredAt.IsZero() {
		return fmt.Errorf("delivery %d: no delivered_at", d.ID)
	}
	return nil
}

// githubDeliveryList is GitHub's deliveries listing, checked as it is
// decoded.
type githubDeliveryList []githubDelivery

// UnmarshalJSON decodes a listing with parseGitHubDeliveries.
func (l *githubDeliveryList) UnmarshalJSON(b []byte) error {
	items, err := parseGitHubDeliveries(b)
	if err != nil {
		return err
	}
	*l = items
	return nil
}

// parseGitHubDeliveries decodes a deliveries listing: a JSON array of
// deliveries, each with an id, a guid, an event and a delivered_at. An
// item without them is returned with its problem set (and its guid and
// delivered_at when readable): one malformed item does not fail the page.
func parseGitHubDeliveries(b []byte) ([]githubDelivery, error) {
	if jsontext.FirstNonSpace(b) != '[' {
		return nil, errors.New("deliveries answer is not a JSON array")
	}
	var raws pageItems
	if err := json.Unmarshal(b, &raws); err != nil {
		return nil, fmt.Errorf("deliveries answer: %w", err)
	}
	items := make([]githubDelivery, len(raws))
	for i, raw := range raws {
		d := &items[i]
		err := json.Unmarshal(raw, d)
		if err == nil {
			err = d.check()
		}
		if err != nil {
			var lenient struct {
				GUID        string `json:"guid"`
				DeliveredAt string `json:"delivered_at"`
			}
			_ = json.Unmarshal(raw, &lenient)
			*d = githubDelivery{problem: fmt.Errorf("deliveries answer: item %d: %w", i, err)}
			if provider.CheckEventID(lenient.GUID) == nil {
				d.GUID = lenient.GUID
			}
			if at, err := time.Parse(time.RFC3339, lenient.DeliveredAt); err == nil {
				d.DeliveredAt = at
			}
		}
	}
	return items, nil
}

// githubDeliveryDetail is GitHub's answer for one delivery.
type githubDeliveryDetail struct {
	githubDelivery
	Request struct {
		Headers map[string]json.RawMessage `json:"headers"`
		Payload json.RawMessage            `json:"payload"`
	} `json:"request"`
}

// UnmarshalJSON decodes a delivery with parseGitHubDelivery.
func (d *githubDeliveryDetail) UnmarshalJSON(b []byte) error {
	v, err := parseGitHubDelivery(b)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// parseGitHubDelivery decodes one delivery with its request: a JSON
// object with the listing's fields and request.headers and
// request.payload.
func parseGitHubDelivery(b []byte) (githubDeliveryDetail, error) {
	if jsontext.FirstNonSpace(b) != '{' {
		return githubDeliveryDetail{}, errors.New("delivery answer is not a JSON object")
	}
	// A type without the method, so that Unmarshal does not recurse.
	type plain githubDeliveryDetail
	var d plain
	if err := json.Unmarshal(b, &d); err != nil {
		return githubDeliveryDetail{}, fmt.Errorf("delivery answer: %w", err)
	}
	if err := d.check(); err != nil {
		return githubDeliveryDetail{}, fmt.Errorf("delivery answer: %w", err)
	}
	return githubDeliveryDetail(d), nil
}

// githubRequestHeader is a delivery's request headers as
// provider.GitHubEvent reads them: X-GitHub-Delivery is the delivery's
// guid, X-GitHub-Event the header GitHub recorded, or else the delivery's
// event.
type githubRequestHeader struct{ d *githubDeliveryDetail }

// Get returns the header name (matched case-insensitively).
func (h githubRequestHeader) Get(name string) string {
	switch {
	case strings.EqualFold(name, provider.GitHubDeliveryHeader):
		return h.d.GUID
	case strings.EqualFold(name, provider.GitHubEventHeader):
		return cmp.Or(h.d.header(name), h.d.Event)
	}
	return h.d.header(name)
}

// header returns the delivery's request header name (matched
// case-insensitively), "" when absent or not a string.
func (d *githubDeliveryDetail) header(name string) string {
	for k, raw := range d.Request.Headers {
		if !strings.EqualFold(k, name) {
			continue
		}
		var v string
		if json.Unmarshal(raw, &v) == nil {
			return v
		}
	}
	return ""
}

// githubNextCursor returns the cursor of a Link header's rel="next"
// target, "" when there is no next page. A malformed header, or a next
// target without a cursor, is an error: stopping there would silently
// skip the older deliveries.
func githubNextCursor(link string) (string, error) {
	target, ok, err := parseGitHubLink(link)
	if err != nil || !ok {
		return "", err
	}
	u, err := url.Parse(target)
	if err != nil {
		return "", fmt.Errorf("link rel=next %q: %w", target, err)
	}
	cursor := u.Query().Get("cursor")
	if cursor == "" {
		return "", fmt.Errorf("link rel=next %q has no cursor", target)
	}
	return cursor, nil
}

// parseGitHubLink returns the target of an RFC 8288 Link header's
// rel="next" link: entries `<target>; param; rel="a b"`, separated by
// commas.
func parseGitHubLink(h string) (target string, ok bool, err error) {
	for {
		h = strings.TrimLeft(h, " \t,")
		if h == "" {
			return "", false, nil
		}
		if h[0] != '<' {
			return "", false, fmt.Errorf("link header: expected '<' at %q", snippet([]byte(h)))
		}
		end := strings.IndexByte(h, '>')
		if end < 0 {
			return "", false, errors.New("link header: '<' without '>'")
		}
		t := h[1:end]
		h = h[end+1:]
		params := h
		if i := strings.IndexByte(h, '<'); i >= 0 {
			params, h = h[:i], h[i:]
		} else {
			h = ""
		}
		for _, p := range strings.Split(params, ";") {
			k, v, found := strings.Cut(p, "=")
			if !found || !strings.EqualFold(strings.TrimSpace(k), "rel") {
				continue
			}
			v = strings.Trim(strings.TrimSpace(strings.TrimRight(strings.TrimSpace(v), ",")), `"`)
			for _, rel := range strings.Fields(v) {
				if strings.EqualFold(rel, "next") {
					return t, true, nil
				}
			}
		}
	}
}

// githubRateLimit is GitHub's retry rule for the shared client (api.limited):
// a 403 or 429 answer that is one of GitHub's rate limits is retried after
// what githubRateLimitWait says, in whole seconds (rounded up), so that
// the client waits instead of reporting a refused token.
func githubRateLimit(ans answer, body []byte, now time.Time) (time.Duration, bool) {
	if ans.status != http.StatusForbidden && ans.status != http.StatusTooManyRequests {
		return 0, false
	}
	wait, ok := githubRateLimitWait(ans.header, body, now)
	if !ok {
		return 0, false
	}
	// As Retry-After would say it: beyond a Duration's range in whole
	// seconds the product would wrap; the client caps the wait anyway.
	secs := min(int64(math.Ceil(wait.Seconds())), int64(math.MaxInt64/time.Second))
	return time.Duration(secs) * time.Second, true
}

// githubRateLimitWait says whether a 403 or 429 answer is one of GitHub's
// rate limits and how long GitHub asks to wait: Retry-After when present;
// else until x-ratelimit-reset (epoch seconds) when x-ratelimit-remaining
// is 0; else a minute when the message says it is a secondary rate limit.
func githubRateLimitWait(h http.Header, body []byte, now time.Time) (time.Duration, bool) {
	if d, ok := outbound.RetryAfter(h.Get("Retry-After"), now, math.MaxInt64); ok {
		return d, true
	}
	if strings.TrimSpace(h.Get("X-RateLimit-Remaining")) == "0" {
		if reset, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-RateLimit-Reset")), 10, 64); err == nil && reset > 0 {
			// A second more: the reset is a whole second, and a request
			// at it can still be refused.
			return max(time.Unix(reset, 0).Sub(now), 0) + time.Second, true
		}
		return githubSecondaryWait, true
	}
	if bytes.Contains(bytes.ToLower(body), []byte("rate limit")) {
		return githubSecondaryWait, true
	}
	return 0, false
}
