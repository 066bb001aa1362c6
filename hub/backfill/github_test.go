package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/backfill/fakeapi"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
)

// ghT0 is the tests' now, for the fake and the source alike.
var ghT0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// ghHarness is a fake GitHub API and a source pointed at it, whose
// rate-limit waits are recorded instead of slept.
// The names the hub gives the GitHub source's settings (hub/service), as
// the tests pass them.
const (
	GitHubTokenVar = "HUB_GITHUB_TOKEN"
	GitHubHookVar  = "HUB_GITHUB_HOOK"
	GitHubURLVar   = "HUB_GITHUB_API_URL"
)

var githubNames = Names{SettingToken: GitHubTokenVar, SettingHook: GitHubHookVar, SettingAPIURL: GitHubURLVar}

type ghHarness struct {
	fake *fakeapi.GitHub
	src  *GitHub

	mu    sync.Mutex
	waits []time.Duration
}

func newGHHarness(t *testing.T) *ghHarness {
	t.Helper()
	h := &ghHarness{fake: fakeapi.NewGitHub(t, fakeapi.GitHubOptions{Now: func() time.Time { return ghT0 }})}
	h.src = h.source(t, h.fake.Token)
	return h
}

// source returns a source for the harness's fake with token.
func (h *ghHarness) source(t *testing.T, token string) *GitHub {
	t.Helper()
	src, err := NewGitHub(GitHubConfig{BaseURL: h.fake.URL, Token: token, Hook: h.fake.Hook, Names: githubNames})
	require.NoError(t, err)
	src.now = func() time.Time { return ghT0 }
	src.api.sleep = func(ctx context.Context, d time.Duration) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.waits = append(h.waits, d)
		return ctx.Err()
	}
	return src
}

func (h *ghHarness) recordedWaits() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Duration(nil), h.waits...)
}

// ghSampler builds webhook bodies and signs them as GitHub would.
func ghSampler(t *testing.T) *provider.GitHub {
	t.Helper()
	p, err := provider.NewGitHub([]string{"It's a Secret to Everybody"}, provider.Options{})
	require.NoError(t, err)
	return p
}

// addGH adds an original delivery of a new event of typ at at, with a
// realistic payload, and returns it.
func addGH(t *testing.T, fake *fakeapi.GitHub, typ string, at time.Time) fakeapi.GitHubDelivery {
	t.Helper()
	guid := uuid.NewString()
	body, err := samples.Body(ghSampler(t).Name(), guid, typ, nil, at)
	require.NoError(t, err)
	event, _, _ := strings.Cut(typ, ".")
	return fake.Add(fakeapi.GitHubDelivery{GUID: guid, DeliveredAt: at, Event: event, Payload: body})
}

// addGHMinutes adds n events delivered a minute apart, the newest at
// ghT0 - 1m, and returns them newest first.
func addGHMinutes(t *testing.T, fake *fakeapi.GitHub, n int) []fakeapi.GitHubDelivery {
	t.Helper()
	types := []string{"push", "pull_request.opened", "issues.closed", "issue_comment.created", "release.published"}
	out := make([]fakeapi.GitHubDelivery, n)
	for i := range n {
		out[i] = addGH(t, fake, types[i%len(types)], ghT0.Add(-time.Duration(i+1)*time.Minute))
	}
	return out
}

// listAll pages through src's listing and returns its events and the
// number of pages.
func listAll(t *testing.T, src *GitHub, since, until time.Time) ([]Event, int) {
	t.Helper()
	var all []Event
	cursor, pages := "", 0
	for {
		page, err := src.List(context.Background(), since, until, cursor)
		require.NoError(t, err)
		pages++
		all = append(all, page.Events...)
		if page.Next == "" {
			return all, pages
		}
		require.Less(t, pages, 100, "paging does not end")
		cursor = page.Next
	}
}

func ids(evs []Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

func TestGitHubListPages(t *testing.T) {
	h := newGHHarness(t)
	want := addGHMinutes(t, h.fake, 250)

	evs, pages := listAll(t, h.src, time.Time{}, time.Time{})
	assert.Equal(t, 3, pages)
	require.Len(t, evs, 250)
	for i, ev := range evs { // newest first, as GitHub lists them
		assert.Equal(t, want[i].GUID, ev.ID)
		assert.Equal(t, want[i].DeliveredAt, ev.OccurredAt)
		assert.Nil(t, ev.Body, "the listing carries no bodies")
	}

	reqs := h.fake.Requests()
	require.Len(t, reqs, 3)
	for i, r := range reqs {
		assert.Equal(t, http.MethodGet, r.Method)
		assert.Equal(t, "/"+h.fake.Hook+"/deliveries", r.Path)
		q, err := url.ParseQuery(r.RawQuery)
		require.NoError(t, err)
		assert.Equal(t, "100", q.Get("per_page"))
		if i == 0 {
			assert.Empty(t, q.Get("cursor"))
		} else {
			assert.Equal(t, fmt.Sprintf("v1_%d", want[100*i].ID), q.Get("cursor"), "the cursor of the Link header's rel=next")
		}
		assert.Equal(t, "Bearer "+h.fake.Token, r.Header.Get("Authorization"))
		assert.Equal(t, "application/vnd.github+json", r.Header.Get("Accept"))
		assert.Equal(t, "2022-11-28", r.Header.Get("X-GitHub-Api-Version"))
	}
}

func TestGitHubListWindow(t *testing.T) {
	h := newGHHarness(t)
	all := addGHMinutes(t, h.fake, 250) // all[i] at ghT0 - (i+1)m
	at := func(min int) time.Time { return ghT0.Add(-time.Duration(min) * time.Minute) }

	tests := []struct {
		name         string
		since, until time.Time
		first, last  int // the expected events: all[first:last]
		requests     int // pages fetched: paging stops past since
	}{
		{name: "no bounds", first: 0, last: 250, requests: 3},
		{name: "since within the first page", since: at(50), first: 0, last: 50, requests: 1},
		{name: "since at the first page's last delivery, inclusive", since: at(100), first: 0, last: 100, requests: 2},
		{name: "since and until", since: at(150), until: at(100), first: 100, last: 150, requests: 2},
		{name: "until only, exclusive", until: at(200), first: 200, last: 250, requests: 3},
		{name: "until excludes the newest", until: at(1), first: 1, last: 250, requests: 3},
		{name: "window before every delivery", since: at(400), until: at(300), first: 0, last: 0, requests: 3},
		{name: "window after every delivery", since: ghT0, first: 0, last: 0, requests: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(h.fake.Requests())
			evs, _ := listAll(t, h.src, tt.since, tt.until)
			want := []string{}
			for _, d := range all[tt.first:tt.last] {
				want = append(want, d.GUID)
			}
			assert.Equal(t, want, ids(evs))
			assert.Equal(t, tt.requests, len(h.fake.Requests())-before, "requests")
		})
	}
}

func TestGitHubListRedeliveries(t *testing.T) {
	h := newGHHarness(t)
	hours := func(n float64) time.Time { return ghT0.Add(-time.Duration(n * float64(time.Hour))) }
	redeliver := func(d fakeapi.GitHubDelivery, at time.Time) {
		d.ID, d.Redelivery, d.DeliveredAt, d.StatusCode = 0, true, at, 200
		h.fake.Add(d)
	}
	a := addGH(t, h.fake, "pull_request.opened", hours(5))
	b := addGH(t, h.fake, "issues.closed", hours(3))
	c := addGH(t, h.fake, "push", hours(10)) // before since
	var fillers []fakeapi.GitHubDelivery
	for i := range 150 { // between b and a: a's original is on the second page
		fillers = append(fillers, addGH(t, h.fake, "push", hours(4).Add(-time.Duration(i)*time.Second)))
	}
	redeliver(a, hours(0.5))
	redeliver(a, hours(1))
	redeliver(c, hours(2)) // its original is before since: not listed
	redeliver(b, hours(2).Add(-time.Second))

	evs, pages := listAll(t, h.src, hours(6), time.Time{})
	assert.Equal(t, 2, pages)
	want := []string{b.GUID}
	for _, f := range fillers {
		want = append(want, f.GUID)
	}
	want = append(want, a.GUID)
	assert.Equal(t, want, ids(evs), "each event once, at its original delivery's place")
	last := evs[len(evs)-1]
	assert.Equal(t, a.DeliveredAt, last.OccurredAt, "OccurredAt is the original delivery's time")
	assert.Equal(t, "pull_request.opened", last.Type)
}

// TestGitHubIDAndTypeAsTheVerifier checks that the events List and Fetch
// return carry the id and type hub/provider's GitHub verifier extracts
// from the webhook of the same delivery, verified as the server does.
func TestGitHubIDAndTypeAsTheVerifier(t *testing.T) {
	sampler := ghSampler(t)
	tests := []struct {
		name    string
		typ     string          // for Sample
		payload json.RawMessage // instead of Sample's
		form    bool            // the hook's content type is form-encoded
	}{
		{name: "push has no action", typ: "push"},
		{name: "ping has no action", typ: "ping"},
		{name: "pull_request.opened", typ: "pull_request.opened"},
		{name: "issues.closed", typ: "issues.closed"},
		{name: "issue_comment.created", typ: "issue_comment.created"},
		{name: "unknown event with action", typ: "merge_group.checks_requested"},
		{name: "form-encoded delivery", typ: "pull_request.closed", form: true},
		{name: "action not a string", typ: "workflow_job", payload: json.RawMessage(`{"action": {"x": 1}, "workflow_job": {"id": 1}}`)},
		{name: "empty action", typ: "check_run", payload: json.RawMessage(`{"action": "", "check_run": {}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newGHHarness(t)
			guid := uuid.NewString()
			payload := []byte(tt.payload)
			if payload == nil {
				var err error
				payload, err = samples.Body(sampler.Name(), guid, tt.typ, nil, ghT0)
				require.NoError(t, err)
			}
			event, _, _ := strings.Cut(tt.typ, ".")
			contentType := "application/json"
			webhookBody := payload
			if tt.form {
				contentType = "application/x-www-form-urlencoded"
				webhookBody = []byte("payload=" + url.QueryEscape(string(payload)))
			}
			d := h.fake.Add(fakeapi.GitHubDelivery{
				GUID: guid, DeliveredAt: ghT0.Add(-time.Hour), Event: event, Payload: payload,
				Headers: map[string]string{"Content-Type": contentType},
			})

			// The webhook GitHub sent for this delivery, as the server verifies it.
			hdr, _, err := sampler.Sign(guid, "", webhookBody, ghT0)
			require.NoError(t, err)
			hdr.Set("Content-Type", contentType)
			hdr.Set(provider.GitHubEventHeader, d.Headers["X-GitHub-Event"])
			want, err := provider.VerifyDelivery(sampler, provider.Request{Header: hdr, Body: webhookBody, URI: "/webhooks/github", Now: ghT0})
			require.NoError(t, err)

			evs, _ := listAll(t, h.src, time.Time{}, time.Time{})
			require.Len(t, evs, 1)
			assert.Equal(t, want.ID, evs[0].ID, "List's id")
			assert.Equal(t, want.Type, evs[0].Type, "List's type")

			got, err := h.src.Fetch(context.Background(), evs[0])
			require.NoError(t, err)
			assert.Equal(t, want.ID, got.ID, "Fetch's id")
			assert.Equal(t, want.Type, got.Type, "Fetch's type")
		})
	}
}

func TestGitHubFetch(t *testing.T) {
	t.Run("body is the payload's JSON, not its bytes", func(t *testing.T) {
		h := newGHHarness(t)
		sent := []byte(`{"zen": "Design for failure.",  "hook_id": 42, "action":"opened", "pull_request": {"number": 7}}`)
		d := h.fake.Add(fakeapi.GitHubDelivery{GUID: uuid.NewString(), DeliveredAt: ghT0.Add(-time.Hour), Event: "pull_request", Payload: sent})
		evs, _ := listAll(t, h.src, time.Time{}, time.Time{})
		require.Len(t, evs, 1)
		got, err := h.src.Fetch(context.Background(), evs[0])
		require.NoError(t, err)
		assert.JSONEq(t, string(sent), string(got.Body))
		assert.NotEqual(t, string(sent), string(got.Body), "GitHub re-encodes the payload")
		assert.Equal(t, Event{ID: d.GUID, Type: "pull_request.opened", OccurredAt: d.DeliveredAt, OccurredAtAPIOnly: true, Body: got.Body}, got)
		last := h.fake.Requests()[len(h.fake.Requests())-1]
		assert.Equal(t, fmt.Sprintf("/%s/deliveries/%d", h.fake.Hook, d.ID), last.Path)
	})

	t.Run("a source that did not list the event finds it", func(t *testing.T) {
		h := newGHHarness(t)
		all := addGHMinutes(t, h.fake, 150)
		target := all[120] // on the second page
		fresh := h.source(t, h.fake.Token)
		got, err := fresh.Fetch(context.Background(), Event{ID: target.GUID, OccurredAt: target.DeliveredAt})
		require.NoError(t, err)
		assert.JSONEq(t, string(target.Payload), string(got.Body))
		assert.Equal(t, "push", got.Type)
		assert.Len(t, h.fake.Requests(), 3, "two pages of listing, then the delivery")
	})

	t.Run("the original delivery is fetched, not a redelivery", func(t *testing.T) {
		h := newGHHarness(t)
		d := addGH(t, h.fake, "issues.opened", ghT0.Add(-2*time.Hour))
		re := d
		re.ID, re.Redelivery, re.DeliveredAt = 0, true, ghT0.Add(-time.Hour)
		h.fake.Add(re)
		_, err := h.src.Fetch(context.Background(), Event{ID: d.GUID, OccurredAt: d.DeliveredAt})
		require.NoError(t, err)
		reqs := h.fake.Requests()
		assert.Equal(t, fmt.Sprintf("/%s/deliveries/%d", h.fake.Hook, d.ID), reqs[len(reqs)-1].Path)
	})

	t.Run("an event GitHub no longer lists", func(t *testing.T) {
		h := newGHHarness(t)
		addGHMinutes(t, h.fake, 3)
		_, err := h.src.Fetch(context.Background(), Event{ID: uuid.NewString()})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no delivery of it is listed")
	})

	t.Run("a delivery without a payload", func(t *testing.T) {
		h := newGHHarness(t)
		h.fake.Add(fakeapi.GitHubDelivery{GUID: uuid.NewString(), DeliveredAt: ghT0.Add(-time.Hour), Event: "push", Payload: []byte("not json")})
		evs, _ := listAll(t, h.src, time.Time{}, time.Time{})
		require.Len(t, evs, 1)
		_, err := h.src.Fetch(context.Background(), evs[0])
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no JSON object payload")
	})
}

func TestGitHubRedeliver(t *testing.T) {
	h := newGHHarness(t)
	d := addGH(t, h.fake, "pull_request.synchronize", ghT0.Add(-2*time.Hour))
	addGHMinutes(t, h.fake, 5)
	evs, _ := listAll(t, h.src, ghT0.Add(-3*time.Hour), time.Time{})
	require.Len(t, evs, 6)
	ev := evs[len(evs)-1]
	require.Equal(t, d.GUID, ev.ID)

	require.NoError(t, h.src.Redeliver(context.Background(), ev))
	assert.Equal(t, []int64{d.ID}, h.fake.Attempts())
	reqs := h.fake.Requests()
	last := reqs[len(reqs)-1]
	assert.Equal(t, http.MethodPost, last.Method)
	assert.Equal(t, fmt.Sprintf("/%s/deliveries/%d/attempts", h.fake.Hook, d.ID), last.Path)
	assert.Equal(t, http.StatusAccepted, last.Status)

	// GitHub lists the redelivery, newest; the event is still listed once.
	assert.True(t, h.fake.Deliveries()[0].Redelivery)
	again, _ := listAll(t, h.src, ghT0.Add(-3*time.Hour), time.Time{})
	assert.Equal(t, ids(evs), ids(again))

	// Redelivering an event this source never listed finds it first.
	fresh := h.source(t, h.fake.Token)
	require.NoError(t, fresh.Redeliver(context.Background(), Event{ID: d.GUID, OccurredAt: d.DeliveredAt}))
	assert.Equal(t, []int64{d.ID, d.ID}, h.fake.Attempts(), "the original delivery is redelivered")
}

func TestGitHubRefusedToken(t *testing.T) {
	h := newGHHarness(t)
	addGHMinutes(t, h.fake, 3)
	src := h.source(t, "ghp_wrong_token_value")
	_, err := src.List(context.Background(), time.Time{}, time.Time{}, "")
	require.ErrorIs(t, err, ErrUnauthorized)
	assert.Contains(t, err.Error(), "HUB_GITHUB_TOKEN")
	assert.NotContains(t, err.Error(), "ghp_wrong_token_value")
	assert.Empty(t, h.recordedWaits(), "a refused token is not retried")
	err = src.Redeliver(context.Background(), Event{ID: "x"})
	require.ErrorIs(t, err, ErrUnauthorized)
}

func TestGitHubUnknownHook(t *testing.T) {
	h := newGHHarness(t)
	src, err := NewGitHub(GitHubConfig{BaseURL: h.fake.URL, Token: h.fake.Token, Hook: "repos/octocat/Spoon-Knife/hooks/9", Names: githubNames})
	require.NoError(t, err)
	_, err = src.List(context.Background(), time.Time{}, time.Time{}, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "404")
	assert.Contains(t, err.Error(), "HUB_GITHUB_HOOK")
	assert.NotErrorIs(t, err, ErrUnauthorized)
}

func TestGitHubRateLimits(t *testing.T) {
	tests := []struct {
		name     string
		failures []fakeapi.GitHubFailure
		waits    []time.Duration
		err      error // nil: the listing succeeds after the waits
	}{
		{
			name:     "primary limit: 403 until x-ratelimit-reset",
			failures: []fakeapi.GitHubFailure{fakeapi.GitHubPrimaryLimit(90 * time.Second)},
			waits:    []time.Duration{91 * time.Second},
		},
		{
			name:     "primary limit as 429",
			failures: []fakeapi.GitHubFailure{{Status: 429, Reset: 42 * time.Minute}},
			waits:    []time.Duration{42*time.Minute + time.Second},
		},
		{
			name:     "secondary limit: 429 with Retry-After",
			failures: []fakeapi.GitHubFailure{fakeapi.GitHubSecondaryLimit(429, 30*time.Second)},
			waits:    []time.Duration{30 * time.Second},
		},
		{
			name:     "secondary limit: 403 with Retry-After",
			failures: []fakeapi.GitHubFailure{fakeapi.GitHubSecondaryLimit(403, 7*time.Second), fakeapi.GitHubSecondaryLimit(403, 9*time.Second)},
			waits:    []time.Duration{7 * time.Second, 9 * time.Second},
		},
		{
			name:     "secondary limit: 403 naming no time waits a minute",
			failures: []fakeapi.GitHubFailure{{Status: 403, Message: "You have exceeded a secondary rate limit."}},
			waits:    []time.Duration{time.Minute},
		},
		{
			name:     "a bare 429 backs off",
			failures: []fakeapi.GitHubFailure{{Status: 429, Message: "Too Many Requests"}, {Status: 429, Message: "Too Many Requests"}},
			waits:    []time.Duration{time.Second, 2 * time.Second},
		},
		{
			name:     "a 403 that is no rate limit refuses the token",
			failures: []fakeapi.GitHubFailure{{Status: 403, Message: "Resource not accessible by personal access token"}},
			err:      ErrUnauthorized,
		},
		{
			name: "still limited after the retries",
			failures: []fakeapi.GitHubFailure{
				fakeapi.GitHubSecondaryLimit(429, time.Second), fakeapi.GitHubSecondaryLimit(429, time.Second),
				fakeapi.GitHubSecondaryLimit(429, time.Second), fakeapi.GitHubSecondaryLimit(429, time.Second),
				fakeapi.GitHubSecondaryLimit(429, time.Second), fakeapi.GitHubSecondaryLimit(429, time.Second),
			},
			waits: []time.Duration{time.Second, time.Second, time.Second, time.Second, time.Second},
			err:   ErrRateLimited,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newGHHarness(t)
			want := addGHMinutes(t, h.fake, 3)
			h.fake.FailNext(tt.failures...)
			page, err := h.src.List(context.Background(), time.Time{}, time.Time{}, "")
			assert.Equal(t, tt.waits, h.recordedWaits())
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				if errors.Is(tt.err, ErrUnauthorized) {
					assert.Contains(t, err.Error(), "HUB_GITHUB_TOKEN")
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{want[0].GUID, want[1].GUID, want[2].GUID}, ids(page.Events))
		})
	}
}

func TestNewGitHubConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     GitHubConfig
		errVar  string // "" when valid
		base    string
		hookOut string
	}{
		{name: "repository hook", cfg: GitHubConfig{Token: "t", Hook: "repos/octo-org/hello.world_2/hooks/123"}, base: "https://api.github.com", hookOut: "repos/octo-org/hello.world_2/hooks/123"},
		{name: "organization hook, slashes trimmed", cfg: GitHubConfig{Token: "t", Hook: "/orgs/octo-org/hooks/9/"}, base: "https://api.github.com", hookOut: "orgs/octo-org/hooks/9"},
		{name: "enterprise server", cfg: GitHubConfig{Token: "t", Hook: "orgs/o/hooks/1", BaseURL: "https://ghe.example.com/api/v3/"}, base: "https://ghe.example.com/api/v3", hookOut: "orgs/o/hooks/1"},
		{name: "no token", cfg: GitHubConfig{Hook: "orgs/o/hooks/1"}, errVar: GitHubTokenVar},
		{name: "token with a newline", cfg: GitHubConfig{Token: "t\n", Hook: "orgs/o/hooks/1"}, errVar: GitHubTokenVar},
		{name: "no hook", cfg: GitHubConfig{Token: "t"}, errVar: GitHubHookVar},
		{name: "hook id not a number", cfg: GitHubConfig{Token: "t", Hook: "repos/o/r/hooks/abc"}, errVar: GitHubHookVar},
		{name: "hook without id", cfg: GitHubConfig{Token: "t", Hook: "repos/o/r/hooks"}, errVar: GitHubHookVar},
		{name: "repository without owner", cfg: GitHubConfig{Token: "t", Hook: "repos/r/hooks/1"}, errVar: GitHubHookVar},
		{name: "app hook", cfg: GitHubConfig{Token: "t", Hook: "app/hook"}, errVar: GitHubHookVar},
		{name: "path traversal", cfg: GitHubConfig{Token: "t", Hook: "repos/o/../hooks/1"}, errVar: GitHubHookVar},
		{name: "dot repository", cfg: GitHubConfig{Token: "t", Hook: "repos/o/./hooks/1"}, errVar: GitHubHookVar},
		{name: "hook as a URL", cfg: GitHubConfig{Token: "t", Hook: "https://api.github.com/repos/o/r/hooks/1"}, errVar: GitHubHookVar},
		{name: "base URL without scheme", cfg: GitHubConfig{Token: "t", Hook: "orgs/o/hooks/1", BaseURL: "api.github.com"}, errVar: GitHubURLVar},
		{name: "base URL unparseable", cfg: GitHubConfig{Token: "t", Hook: "orgs/o/hooks/1", BaseURL: "http://[::1"}, errVar: GitHubURLVar},
		{name: "base URL with a query", cfg: GitHubConfig{Token: "t", Hook: "orgs/o/hooks/1", BaseURL: "https://api.github.com/?x=1"}, errVar: GitHubURLVar},
		{name: "base URL with credentials", cfg: GitHubConfig{Token: "t", Hook: "orgs/o/hooks/1", BaseURL: "https://u:p@api.github.com"}, errVar: GitHubURLVar},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Names = githubNames
			g, err := NewGitHub(tt.cfg)
			if tt.errVar != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.errVar)
				if tt.cfg.Token != "" {
					assert.NotContains(t, err.Error(), tt.cfg.Token+"\n")
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.base, g.api.base)
			assert.Equal(t, tt.hookOut, g.hook)
			assert.Equal(t, "github", g.Provider())
		})
	}
}

func TestGitHubNextCursor(t *testing.T) {
	const base = "https://api.github.com/repositories/1/hooks/2/deliveries?per_page=100"
	tests := []struct {
		name, link, cursor string
		err                bool
	}{
		{name: "no header"},
		{name: "next only", link: `<` + base + `&cursor=v1_5>; rel="next"`, cursor: "v1_5"},
		{name: "prev then next", link: `<` + base + `&cursor=v1_1>; rel="prev", <` + base + `&cursor=v1_9>; rel="next"`, cursor: "v1_9"},
		{name: "prev only: the last page", link: `<` + base + `&cursor=v1_1>; rel="prev"`},
		{name: "several relations, unquoted, any case", link: `<` + base + `&cursor=a%2Bb>;rel=NEXT`, cursor: "a+b"},
		{name: "rel list", link: `<` + base + `&cursor=c>; title="x"; rel="last next"`, cursor: "c"},
		{name: "next without a cursor", link: `<` + base + `>; rel="next"`, err: true},
		{name: "not a link", link: `rel="next"`, err: true},
		{name: "unclosed", link: `<` + base + `; rel="next"`, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cursor, err := githubNextCursor(tt.link)
			if tt.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.cursor, cursor)
		})
	}
}

func TestGitHubParsersReject(t *testing.T) {
	for _, b := range []string{``, `null`, `{}`, `[1`, `{"a": [1]}`} {
		_, err := parseGitHubDeliveries([]byte(b))
		assert.Error(t, err, "%s", b)
	}
	// A malformed item fails only itself: it keeps its guid when usable,
	// and the good item next to it is read.
	good := `{"id": 9, "guid": "good", "event": "push", "delivered_at": "2026-03-10T12:00:00Z"}`
	for _, c := range []struct{ item, guid string }{
		{`{}`, ""},
		{`1`, ""},
		{`{"id": 1, "guid": "", "event": "push", "delivered_at": "2026-03-10T12:00:00Z"}`, ""},
		{`{"id": 1, "guid": "g", "event": "", "delivered_at": "2026-03-10T12:00:00Z"}`, "g"},
		{`{"id": 1, "guid": "g", "event": "push"}`, "g"},
		{`{"id": 0, "guid": "g", "event": "push", "delivered_at": "2026-03-10T12:00:00Z"}`, "g"},
		{`{"id": 1, "guid": "g\n", "event": "push", "delivered_at": "2026-03-10T12:00:00Z"}`, ""},
		{`{"id": 1, "guid": "g", "event": "push", "delivered_at": "yesterday"}`, "g"},
		{`{"id": "1", "guid": "g", "event": "push", "delivered_at": "2026-03-10T12:00:00Z"}`, "g"},
	} {
		items, err := parseGitHubDeliveries([]byte(`[` + c.item + `,` + good + `]`))
		require.NoError(t, err, c.item)
		require.Len(t, items, 2)
		assert.Error(t, items[0].problem, c.item)
		assert.Equal(t, c.guid, items[0].GUID, c.item)
		assert.NoError(t, items[1].problem)
		assert.Equal(t, "good", items[1].GUID)
	}
	for _, b := range []string{``, `[]`, `{}`, `{"id": 1, "guid": "g", "event": "push", "delivered_at": "2026-03-10T12:00:00Z", "request": []}`} {
		_, err := parseGitHubDelivery([]byte(b))
		assert.Error(t, err, "%s", b)
	}
	d, err := parseGitHubDelivery([]byte(`{"id": 1, "guid": "g", "event": "push", "action": null, "delivered_at": "2026-03-10T12:00:00Z",
		"request": {"headers": {"x-github-event": "push", "X-Other": 5}, "payload": {"a": 1}}}`))
	require.NoError(t, err)
	assert.Equal(t, "push", d.header("X-GitHub-Event"))
	assert.Empty(t, d.header("X-Other"))
	assert.JSONEq(t, `{"a": 1}`, string(d.Request.Payload))
}

func FuzzGitHubDeliveries(f *testing.F) {
	f.Add([]byte(`[{"id":12345,"guid":"0b989ba4-242f-11e5-81e1-c7b6966d2516","delivered_at":"2019-06-03T00:57:16Z","redelivery":false,"duration":0.27,"status":"OK","status_code":200,"event":"issues","action":"opened","installation_id":123,"repository_id":456,"throttled_at":null}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"id":1,"guid":"g","delivered_at":"2019-06-03T00:57:16Z","event":"push","action":null}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		items, err := parseGitHubDeliveries(b)
		if err != nil {
			return
		}
		for _, d := range items {
			if d.problem != nil {
				if d.GUID != "" && provider.CheckEventID(d.GUID) != nil {
					t.Fatalf("a malformed item kept an unusable guid %q", d.GUID)
				}
				continue
			}
			if err := d.check(); err != nil {
				t.Fatalf("accepted an item that fails its check: %v", err)
			}
			if typ := githubType(d.Event, d.action()); !strings.HasPrefix(typ, d.Event) {
				t.Fatalf("type %q does not start with the event %q", typ, d.Event)
			}
		}
		var l githubDeliveryList
		if err := json.Unmarshal(b, &l); err != nil || len(l) != len(items) {
			t.Fatalf("Unmarshal disagrees with the parser: %v", err)
		}
	})
}

func FuzzGitHubDelivery(f *testing.F) {
	f.Add([]byte(`{"id":12345,"guid":"0b989ba4-242f-11e5-81e1-c7b6966d2516","delivered_at":"2019-06-03T00:57:16Z","redelivery":false,"duration":0.27,"status":"OK","status_code":200,"event":"issues","action":"opened","installation_id":123,"repository_id":456,"url":"https://www.example.com","request":{"headers":{"X-GitHub-Delivery":"0b989ba4-242f-11e5-81e1-c7b6966d2516","X-Hub-Signature-256":"sha256=6dcb09b5b57875f334f61aebed695e2e4193db5e","Accept":"*/*","X-GitHub-Hook-ID":"42","User-Agent":"GitHub-Hookshot/b8c71d8","X-GitHub-Event":"issues","X-GitHub-Hook-Installation-Target-ID":"123","X-GitHub-Hook-Installation-Target-Type":"repository","content-type":"application/json"},"payload":{"action":"opened","issue":{"body":"foo"},"repository":{"id":123},"sender":{"id":123}}},"response":{"headers":{"Content-Type":"text/html;charset=utf-8"},"payload":"ok"}}`))
	f.Add([]byte(`{"id":1,"guid":"g","delivered_at":"2019-06-03T00:57:16Z","event":"push","request":{"headers":null,"payload":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseGitHubDelivery(b)
		if err != nil {
			return
		}
		if err := d.check(); err != nil {
			t.Fatalf("accepted a delivery that fails its check: %v", err)
		}
		if ev, err := provider.GitHubEvent(githubRequestHeader{&d}, d.Request.Payload); err == nil && ev.ID != d.GUID {
			t.Fatalf("event id %q of delivery %q", ev.ID, d.GUID)
		}
	})
}

func FuzzGitHubLink(f *testing.F) {
	f.Add(`<https://api.github.com/repositories/1/hooks/2/deliveries?per_page=100&cursor=v1_5>; rel="next", <https://api.github.com/x?cursor=v1_1>; rel="prev"`)
	f.Add(``)
	f.Add(`<>; rel=next`)
	f.Add(`<a>;rel="next",<b>`)
	f.Fuzz(func(t *testing.T, link string) {
		target, ok, err := parseGitHubLink(link)
		if err != nil && ok {
			t.Fatal("an error and a target")
		}
		if !ok && target != "" {
			t.Fatal("a target without ok")
		}
		cursor, err := githubNextCursor(link)
		if err == nil && ok && cursor == "" {
			t.Fatal("a next link without a cursor accepted")
		}
		if err == nil && !ok && cursor != "" {
			t.Fatal("a cursor without a next link")
		}
	})
}
