package provider

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/internal/jsontext"
)

// Header names of GitHub webhook deliveries, in canonical form.
const (
	GitHubSignatureHeader = "X-Hub-Signature-256"
	GitHubDeliveryHeader  = "X-Github-Delivery"
	GitHubEventHeader     = "X-Github-Event"
)

// GitHub verifies GitHub webhook deliveries.
//
// The X-Hub-Signature-256 header is "sha256=<hex>", the HMAC-SHA256 of the
// raw body keyed with the webhook secret's bytes; every secret is tried
// (GitHub sends one signature, so during a rotation the receiver holds
// both). The legacy SHA-1 X-Hub-Signature header is never accepted, not
// even as a fallback. GitHub signs no timestamp: replays are caught by
// deduplication on the event id alone.
//
// The event id is the X-GitHub-Delivery header, which a manual redelivery
// keeps, so a redelivery is answered as a duplicate. The type is the
// X-GitHub-Event header, followed by "." and the body's top-level "action"
// when it has one ("pull_request.opened"; "push"). Neither header is
// covered by the signature.
//
// Bodies are JSON, or, when the webhook's content type is
// application/x-www-form-urlencoded, a form whose "payload" field holds
// the JSON. The signature covers the raw form body; the action is read
// from the decoded payload, and PayloadJSON returns that payload for the
// archive.
//
// A GitHub is safe for concurrent use. It implements Provider, Signer
// and Payloader.
type GitHub struct {
	*bodyHMAC
}

var (
	_ Provider  = (*GitHub)(nil)
	_ Signer    = (*GitHub)(nil)
	_ Payloader = (*GitHub)(nil)
)

// NewGitHub returns a GitHub verifier that accepts a signature made with
// any of secrets (the first one signs in Sign). It fails when secrets is
// empty or a secret is the empty string. Its Name is "github". GitHub signs no timestamp, so it
// ignores o.
func NewGitHub(secrets []string, o Options) (*GitHub, error) {
	s, err := newBodyHMAC("github", secrets, githubSigPrefix, errGitHubNoHeader, errGitHubMalformed, errGitHubMismatch)
	if err != nil {
		return nil, err
	}
	return &GitHub{s}, nil
}

// Static errors of the GitHub verifier.
var (
	errGitHubNoHeader   = errSig("missing X-Hub-Signature-256 header")
	errGitHubMalformed  = errSig("X-Hub-Signature-256 is not sha256= followed by 64 hex digits")
	errGitHubMismatch   = errSig("X-Hub-Signature-256 matches no secret")
	errGitHubNoPayload  = errPayload("form body has no payload field")
	errGitHubAPIPayload = errPayload("payload is not a JSON object")
)

// Verify authenticates a GitHub delivery and returns its event.
func (g *GitHub) Verify(r Request) (Event, error) {
	header := r.Header.Get(GitHubSignatureHeader)
	if err := g.verify(header, r.Body); err != nil {
		return Event{}, err
	}
	ev, err := githubEvent(r.Header, r.Body)
	if err != nil {
		return Event{}, err
	}
	ev.Signature = header
	return ev, nil
}

// GitHubEvent returns the id and type of a GitHub delivery as GitHub's
// deliveries API returns it (GET .../hooks/{id}/deliveries/{delivery_id}):
// h, its request.headers (X-GitHub-Delivery, X-GitHub-Event), and payload,
// its request.payload, a JSON object. They are what Verify extracts from
// the same delivery's webhook, with the same code, so the dedup rows of a
// backfilled copy and of its webhook coincide; OccurredAt is zero, as a
// webhook carries no time the hub reads. Nothing is verified (the caller
// trusts the API it authenticated to). It fails with an error wrapping
// ErrPayload as Verify would on the same delivery, and when payload is not
// a JSON object.
func GitHubEvent(h Header, payload []byte) (Event, error) {
	if jsontext.FirstNonSpace(payload) != '{' {
		return Event{}, errGitHubAPIPayload
	}
	return githubEvent(h, payload)
}

// githubEvent reads the event of a GitHub delivery, signed (Verify) or
// read from the API (GitHubEvent): the id is X-GitHub-Delivery, the type
// X-GitHub-Event followed by "." and the payload's action when it has one.
func githubEvent(h Header, body []byte) (Event, error) {
	id := h.Get(GitHubDeliveryHeader)
	if err := checkText("missing X-GitHub-Delivery header", "X-GitHub-Delivery", id, maxEventIDLen); err != nil {
		return Event{}, err
	}
	event := h.Get(GitHubEventHeader)
	if err := checkText("missing X-GitHub-Event header", "X-GitHub-Event", event, maxEventTypeLen); err != nil {
		return Event{}, err
	}
	payload, err := githubPayload(body)
	if err != nil {
		return Event{}, err
	}
	action, err := githubAction(payload)
	if err != nil {
		return Event{}, err
	}
	typ := event
	if action != "" {
		typ = event + "." + action
	}
	if err := checkText("", "type", typ, maxEventTypeLen); err != nil {
		return Event{}, err
	}
	return Event{ID: id, Type: typ, Entities: githubEntities(event, payload)}, nil
}

// githubEntities returns the entities of a GitHub delivery of the event
// named event (X-GitHub-Event): the repository (repository.full_name,
// "octo/hello", kind "repository"), and the pull request ("octo/hello#12",
// "pull_request") of pull_request* events or the issue (kind "issue") of
// issues and issue_comment events, numbered as GitHub numbers them within
// the repository (an issue_comment on a pull request names it as an
// issue: GitHub numbers both alike, so the id is the same). The sender,
// organization and installation are not entities: they would name nearly
// every event of a hook.
func githubEntities(event string, payload []byte) []hub.Entity {
	var object string // the member numbered within the repository
	kind := "issue"
	switch event {
	case "pull_request", "pull_request_review", "pull_request_review_comment", "pull_request_review_thread":
		object, kind = "pull_request", "pull_request"
	case "issues", "issue_comment":
		object = "issue"
	}
	var raw [2][]byte
	names := [2]string{"repository", object}
	n := 1
	if object != "" {
		n = 2
	}
	jsonMembers(payload, names[:n], raw[:n])
	repo, ok := jsonString(jsonValue(jsonMember(raw[0], "full_name")))
	if !ok {
		return nil
	}
	out := addEntity(nil, "repository", repo)
	if number, ok := jsonDigits(jsonValue(jsonMember(raw[1], "number"))); ok && len(out) == 1 {
		out = addEntity(out, kind, repo+"#"+number)
	}
	return out
}

// githubActionMember is the one member of a GitHub payload the hub reads.
var githubActionMember = []string{"action"}

// githubAction returns the payload's top-level action when it is a string,
// or "" when it is absent or not a string. It fails when the payload is
// not a JSON object.
func githubAction(payload []byte) (string, error) {
	var raw [1][]byte
	if !topLevelMembers(payload, githubActionMember, raw[:]) {
		var b struct {
			Action json.RawMessage `json:"action"`
		}
		if err := json.Unmarshal(payload, &b); err != nil {
			return "", jsonPayloadError(err)
		}
		raw[0] = b.Action
	}
	var action string
	if len(raw[0]) > 0 && raw[0][0] == '"' && !plainString(&action, raw[0]) {
		_ = json.Unmarshal(raw[0], &action)
	}
	return action, nil
}

// githubSigPrefix starts an X-Hub-Signature-256 value.
const githubSigPrefix = "sha256="

// githubPayload returns the JSON of a GitHub body: the body itself, or the
// payload field of a form-encoded body (one whose first non-space byte is
// not '{').
func githubPayload(body []byte) ([]byte, error) {
	if jsontext.FirstNonSpace(body) == '{' {
		return body, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("%w: body is neither JSON nor a form: %v", ErrPayload, err)
	}
	payload, ok := form["payload"]
	if !ok {
		return nil, errGitHubNoPayload
	}
	return []byte(payload[0]), nil
}

// PayloadJSON returns the JSON view of a body Verify accepted, for the
// archive's payload column: the body itself when it is JSON, the decoded
// payload field of a form-encoded delivery. The result is valid JSON or an
// error wrapping ErrPayload.
func (g *GitHub) PayloadJSON(body []byte) ([]byte, error) {
	payload, err := githubPayload(body)
	if err != nil {
		return nil, err
	}
	if !json.Valid(payload) {
		return nil, errPayload("payload is not JSON")
	}
	return payload, nil
}

// Sign returns the X-Hub-Signature-256 header for body, signed with the
// first secret, with X-GitHub-Delivery (eventID), X-GitHub-Event (the
// first dot-separated token of eventType: "pull_request" for
// "pull_request.opened"; the action is in the body; none when eventType
// is empty), X-GitHub-Hook-ID, User-Agent and Content-Type:
// application/json. The target is "/webhooks/github".
func (g *GitHub) Sign(eventID, eventType string, body []byte, now time.Time) (http.Header, string, error) {
	event, _, _ := strings.Cut(eventType, ".")
	if eventType != "" && (event == "" || hasControl(event)) {
		return nil, "", errors.New("github: event type has no event name")
	}
	if eventID == "" || len(eventID) > maxEventIDLen || hasControl(eventID) {
		return nil, "", errors.New("github: event id is not a valid delivery id")
	}
	mac := g.sign(body)
	h := http.Header{}
	h.Set("User-Agent", "GitHub-Hookshot/a2c3b5e")
	h.Set("Content-Type", "application/json")
	h.Set(GitHubDeliveryHeader, eventID)
	h.Set("X-GitHub-Hook-ID", "512345678")
	h.Set("X-GitHub-Hook-Installation-Target-ID", "812345678")
	h.Set("X-GitHub-Hook-Installation-Target-Type", "repository")
	h.Set(GitHubSignatureHeader, githubSigPrefix+hex.EncodeToString(mac[:]))
	if event != "" {
		h.Set(GitHubEventHeader, event)
	}
	return h, "/webhooks/github", nil
}
