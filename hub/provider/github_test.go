package provider

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/stretchr/testify/require"
)

const githubDelivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"

var githubTestBody = []byte(`{"action":"opened","number":2,"pull_request":{"id":1,"title":"Update the README"},"repository":{"full_name":"octocat/Hello-World"},"sender":{"login":"octocat"}}`)

func githubSig(secret string, body []byte) string {
	return "sha256=" + hex.EncodeToString(refHMACSHA256(secret, body))
}

func githubHeader(sig, event, delivery string) http.Header {
	return headerOf("X-Hub-Signature-256", sig, "X-GitHub-Event", event, "X-GitHub-Delivery", delivery)
}

func TestGitHubVerify(t *testing.T) {
	good := githubSig(githubSecret, githubTestBody)
	form := []byte("payload=" + url.QueryEscape(string(githubTestBody)))
	formSig := githubSig(githubSecret, form)
	sha1Only := http.Header{"X-Hub-Signature": {"sha1=126f2c800419c60137ce748d7672e77b65cf16d6"}, "X-Github-Event": {"ping"}, "X-Github-Delivery": {githubDelivery}}

	tests := []struct {
		name     string
		secrets  []string
		header   http.Header
		body     []byte
		wantErr  error
		wantType string
	}{
		{"valid", []string{githubSecret}, githubHeader(good, "pull_request", githubDelivery), githubTestBody, nil, "pull_request.opened"},
		{"uppercase hex", []string{githubSecret}, githubHeader("sha256="+strings.ToUpper(good[7:]), "pull_request", githubDelivery), githubTestBody, nil, "pull_request.opened"},
		{"legacy SHA-1 header next to SHA-256 is ignored", []string{githubSecret}, func() http.Header {
			h := githubHeader(good, "pull_request", githubDelivery)
			h.Set("X-Hub-Signature", "sha1=0000000000000000000000000000000000000000")
			return h
		}(), githubTestBody, nil, "pull_request.opened"},
		{"form-encoded delivery", []string{githubSecret}, githubHeader(formSig, "pull_request", githubDelivery), form, nil, "pull_request.opened"},
		{"tampered form", []string{githubSecret}, githubHeader(formSig, "pull_request", githubDelivery), append(form, '&', 'x', '=', '1'), ErrInvalidSignature, ""},
		{"form signature over the decoded JSON is not enough", []string{githubSecret}, githubHeader(good, "pull_request", githubDelivery), form, ErrInvalidSignature, ""},
		{"secret differing in case", []string{strings.ToLower(githubSecret)}, githubHeader(good, "pull_request", githubDelivery), githubTestBody, ErrInvalidSignature, ""},
		{"SHA-1 only: rejected, no fallback", []string{githubOldSecret}, sha1Only, []byte(`{"yo":true}`), ErrInvalidSignature, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := NewGitHub(tt.secrets, Options{})
			require.NoError(t, err)
			// No timestamp: the verdict holds at any time.
			for _, now := range []time.Time{{}, time.Unix(1700000000, 0), time.Unix(4000000000, 0)} {
				ev, ok := requireVerify(t, g, Request{Header: tt.header, Body: tt.body, Now: now}, tt.wantErr)
				if !ok {
					continue
				}
				// Entities: TestEntityExtractors, TestEntitiesOfSamples.
				checkEntities(t, ev.Entities)
				ev.Entities = nil
				require.Equal(t, Event{ID: githubDelivery, Type: tt.wantType, Signature: tt.header.Get("X-Hub-Signature-256")}, ev)
			}
		})
	}
}

func TestGitHubMalformedHeader(t *testing.T) {
	good := githubSig(githubSecret, githubTestBody)
	tests := []struct{ name, header, wantDetail string }{
		{"missing header", "", "missing X-Hub-Signature-256 header"},
		{"no prefix", good[7:], "X-Hub-Signature-256 is not sha256= followed by 64 hex digits"},
		{"uppercase prefix", "SHA256=" + good[7:], "X-Hub-Signature-256 is not sha256= followed by 64 hex digits"},
		{"sha1 prefix", "sha1=" + good[7:], "X-Hub-Signature-256 is not sha256= followed by 64 hex digits"},
		{"sha512 prefix", "sha512=" + good[7:], "X-Hub-Signature-256 is not sha256= followed by 64 hex digits"},
		{"short", good[:70], "X-Hub-Signature-256 is not sha256= followed by 64 hex digits"},
		{"long", good + "0", "X-Hub-Signature-256 is not sha256= followed by 64 hex digits"},
		{"non-hex", "sha256=" + strings.Repeat("z", 64), "X-Hub-Signature-256 is not sha256= followed by 64 hex digits"},
		{"space after =", "sha256= " + good[8:], "X-Hub-Signature-256 is not sha256= followed by 64 hex digits"},
		{"two signatures", good + "," + good, "X-Hub-Signature-256 is not sha256= followed by 64 hex digits"},
		{"well-formed, junk MAC", "sha256=" + strings.Repeat("0", 64), "X-Hub-Signature-256 matches no secret"},
	}
	g, err := NewGitHub([]string{githubSecret}, Options{})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireInvalidSignature(t, g, Request{Header: githubHeader(tt.header, "pull_request", githubDelivery), Body: githubTestBody, Now: time.Time{}}, tt.wantDetail)
		})
	}
}

func TestGitHubPayload(t *testing.T) {
	form := func(v url.Values) string { return v.Encode() }
	tests := []struct {
		name, event, delivery, body string
		wantErr, wantType           string
	}{
		{"no action", "push", githubDelivery, `{"ref":"refs/heads/main"}`, "", "push"},
		{"empty action", "push", githubDelivery, `{"action":""}`, "", "push"},
		{"non-string action is ignored", "deployment", githubDelivery, `{"action":{"x":1}}`, "", "deployment"},
		{"nested action is not the event's", "check_run", githubDelivery, `{"check_run":{"action":"x"}}`, "", "check_run"},
		{"action", "issues", githubDelivery, `{"action":"labeled"}`, "", "issues.labeled"},
		{"form with payload", "issues", githubDelivery, form(url.Values{"payload": {`{"action":"closed"}`}}), "", "issues.closed"},
		{"missing delivery", "push", "", `{}`, "invalid payload: missing X-GitHub-Delivery header", ""},
		{"missing event", "", githubDelivery, `{}`, "invalid payload: missing X-GitHub-Event header", ""},
		{"delivery of 256 bytes", "push", strings.Repeat("d", 256), `{}`, "invalid payload: X-GitHub-Delivery is longer than 255 bytes", ""},
		{"event with a control character", "push\x7f", githubDelivery, `{}`, "invalid payload: X-GitHub-Event contains control characters", ""},
		{"action with LF", "issues", githubDelivery, `{"action":"opened\n"}`, "invalid payload: type contains control characters", ""},
		{"type too long", "issues", githubDelivery, `{"action":"` + strings.Repeat("a", 122) + `"}`, "invalid payload: type is longer than 128 bytes", ""},
		{"not JSON", "ping", githubDelivery, `{"zen":`, "invalid payload: body is not JSON: unexpected end of JSON input", ""},
		{"plain text", "ping", githubDelivery, `Hello, World!`, "invalid payload: form body has no payload field", ""},
		{"form without payload", "ping", githubDelivery, `a=1&b=2`, "invalid payload: form body has no payload field", ""},
		{"form with a bad escape", "ping", githubDelivery, `payload=%zz`, `invalid payload: body is neither JSON nor a form: invalid URL escape "%zz"`, ""},
		{"form payload not JSON", "ping", githubDelivery, `payload=hello`, "invalid payload: body is not JSON: invalid character 'h' looking for beginning of value", ""},
		{"form payload an array", "ping", githubDelivery, `payload=%5B%5D`, "invalid payload: body is a JSON array, not an object", ""},
	}
	g, err := NewGitHub([]string{githubSecret}, Options{})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			ev, err := g.Verify(Request{Header: githubHeader(githubSig(githubSecret, body), tt.event, tt.delivery), Body: body, Now: time.Time{}})
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrPayload)
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, githubDelivery, ev.ID)
			require.Equal(t, tt.wantType, ev.Type)
		})
	}
}

func TestGitHubPayloadJSON(t *testing.T) {
	g, err := NewGitHub([]string{githubSecret}, Options{})
	require.NoError(t, err)
	got, err := g.PayloadJSON(githubTestBody)
	require.NoError(t, err)
	require.Equal(t, githubTestBody, got)

	got, err = g.PayloadJSON([]byte("payload=" + url.QueryEscape(string(githubTestBody))))
	require.NoError(t, err)
	require.Equal(t, githubTestBody, got)

	for _, body := range []string{"payload=nope", "a=b", "payload=%zz"} {
		_, err = g.PayloadJSON([]byte(body))
		require.ErrorIs(t, err, ErrPayload, body)
	}
}

func TestGitHubSampleSign(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 30, 45, 0, time.UTC)
	g, err := NewGitHub([]string{githubSecret, githubOldSecret}, Options{})
	require.NoError(t, err)
	tests := []struct {
		eventType, wantEvent, wantObject string
	}{
		{"ping", "ping", "hook"},
		{"push", "push", "head_commit"},
		{"pull_request.opened", "pull_request", "pull_request"},
		{"pull_request.closed", "pull_request", "pull_request"},
		{"issues.opened", "issues", "issue"},
		{"issue_comment.created", "issue_comment", "comment"},
		{"release.published", "release", "release"},
		{"star.created", "star", "star"},
	}
	for _, tt := range tests {
		t.Run(tt.eventType, func(t *testing.T) {
			body := deterministicSample(t, g.Name(), githubDelivery, tt.eventType, now)
			var p map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(body, &p))
			require.Contains(t, p, "repository")
			require.Contains(t, p, "sender")
			require.Contains(t, p, tt.wantObject)
			_, action, hasAction := strings.Cut(tt.eventType, ".")
			if hasAction {
				require.JSONEq(t, `"`+action+`"`, string(p["action"]))
			} else {
				require.NotContains(t, p, "action")
			}
			require.Greater(t, len(body), 1000)
			require.Less(t, len(body), 4000)

			// Sign cannot know the event: the delivery is authentic but
			// has no type.
			h, _, err := g.Sign(githubDelivery, "", body, now)
			require.NoError(t, err)
			require.Equal(t, githubSig(githubSecret, body), h.Get("X-Hub-Signature-256"))
			require.Equal(t, githubDelivery, h.Get("X-GitHub-Delivery"))
			require.Empty(t, h.Get("X-GitHub-Event"))
			_, err = g.Verify(Request{Header: h, Body: body, Now: now})
			require.EqualError(t, err, "invalid payload: missing X-GitHub-Event header")

			h, target, err := g.Sign(githubDelivery, tt.eventType, body, now)
			require.NoError(t, err)
			require.Equal(t, "/webhooks/github", target)
			require.Equal(t, tt.wantEvent, h.Get("X-GitHub-Event"))
			require.Equal(t, "application/json", h.Get("Content-Type"))
			ev, err := g.Verify(Request{Header: h, Body: body, Now: now})
			require.NoError(t, err)
			checkEntities(t, ev.Entities) // their values: TestEntitiesOfSamples
			ev.Entities = nil
			require.Equal(t, Event{ID: githubDelivery, Type: tt.eventType, Signature: h.Get("X-Hub-Signature-256")}, ev)

			requireRejectedBy(t, NewGitHub, githubOldSecret, Options{}, h, body, now)
		})
	}
	t.Run("given data", func(t *testing.T) {
		body, err := samples.Body(g.Name(), githubDelivery, "pull_request.opened", []byte(`{"id":7,"title":"x"}`), now)
		require.NoError(t, err)
		var p struct {
			PullRequest struct{ ID int } `json:"pull_request"`
		}
		require.NoError(t, json.Unmarshal(body, &p))
		require.Equal(t, 7, p.PullRequest.ID)
	})
	t.Run("invalid data", func(t *testing.T) {
		for _, data := range []string{`nope`, `[1]`, `"x"`} {
			_, err := samples.Body(g.Name(), githubDelivery, "push", []byte(data), now)
			require.Error(t, err, data)
		}
	})
	t.Run("invalid input", func(t *testing.T) {
		_, err := samples.Body(g.Name(), "", "push", nil, now)
		require.Error(t, err)
		_, err = samples.Body(g.Name(), githubDelivery, ".opened", nil, now)
		require.Error(t, err)
		_, _, err = g.Sign("id\n", "", []byte("{}"), now)
		require.Error(t, err)
		_, _, err = g.Sign(githubDelivery, ".opened", []byte("{}"), now)
		require.Error(t, err)
		h, _, err := g.Sign(githubDelivery, "", []byte("{}"), now)
		require.NoError(t, err)
		require.Empty(t, h.Get(GitHubEventHeader), "no type, no X-GitHub-Event")
	})
}
