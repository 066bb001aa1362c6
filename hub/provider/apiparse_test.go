package provider

import (
	"bytes"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
)

// The parsers of events read from a provider's API (StripeEvent,
// PaddleEvent, GitHubEvent) read what Verify reads on the same event's
// webhook, and fail where Verify would, with ErrPayload.

// apiParserCase is one input of an API event parser and what it must
// give: the event, or an error wrapping ErrPayload with this text.
type apiParserCase struct {
	name    string
	body    string
	wantErr string
	want    Event
}

// requireParsed checks what an API parser answered: the error wantErr,
// wrapping ErrPayload, and no event; or, when wantErr is "", want.
func requireParsed(t *testing.T, ev Event, err error, wantErr string, want Event) {
	t.Helper()
	if wantErr != "" {
		require.ErrorIs(t, err, ErrPayload)
		require.EqualError(t, err, wantErr)
		require.Zero(t, ev)
		return
	}
	require.NoError(t, err)
	require.Equal(t, want, ev)
}

func runAPIParserCases(t *testing.T, parse func([]byte) (Event, error), tests []apiParserCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := parse([]byte(tt.body))
			requireParsed(t, ev, err, tt.wantErr, tt.want)
		})
	}
}

func TestStripeEvent(t *testing.T) {
	runAPIParserCases(t, StripeEvent, []apiParserCase{
		{name: "an events list element", body: string(stripeTestBody),
			want: Event{ID: "evt_1NG8Du2eZvKYlo2CUI79vXWy", Type: "customer.created", OccurredAt: time.Unix(1686089970, 0), Entities: []hub.Entity{{Kind: "customer", ID: "cus_O2Dnbgvaj1YZJv"}}}},
		{name: "members in another order, spaced", body: "{ \"type\" : \"invoice.paid\", \"created\": 1700000000 , \"id\":\"evt_2\" }",
			want: Event{ID: "evt_2", Type: "invoice.paid", OccurredAt: time.Unix(1700000000, 0)}},
		{name: "created not a number", body: `{"id":"evt_3","type":"a.b","created":"yesterday"}`, want: Event{ID: "evt_3", Type: "a.b"}},
		{name: "no created", body: `{"id":"evt_4","type":"a.b"}`, want: Event{ID: "evt_4", Type: "a.b"}},
		{name: "no id", body: `{"type":"a.b"}`, wantErr: "invalid payload: body has no id"},
		{name: "no type", body: `{"id":"evt_5"}`, wantErr: "invalid payload: body has no type"},
		{name: "id not a string", body: `{"id":5,"type":"a.b"}`, wantErr: "invalid payload: id is a JSON number, not a string"},
		{name: "an array", body: `[{"id":"evt_6","type":"a.b"}]`, wantErr: "invalid payload: body is a JSON array, not an object"},
		{name: "not JSON", body: `id=evt_7`, wantErr: "invalid payload: body is not JSON: invalid character 'i' looking for beginning of value"},
		{name: "id of 256 bytes", body: `{"id":"` + strings.Repeat("e", 256) + `","type":"a.b"}`, wantErr: "invalid payload: id is longer than 255 bytes"},
		{name: "LF in type", body: `{"id":"evt_8","type":"a.b\n"}`, wantErr: "invalid payload: type contains control characters"},
	})
}

func TestPaddleEvent(t *testing.T) {
	occurred := time.Date(2024, 4, 12, 10, 18, 49, 621022000, time.UTC)
	runAPIParserCases(t, PaddleEvent, []apiParserCase{
		{name: "an events list element", body: `{"event_id":"evt_01hv8x2acma2gz3he3hs3nq0sy","event_type":"subscription.created","occurred_at":"2024-04-12T10:18:49.621022Z","notification_id":null,"data":{"id":"sub_1"}}`,
			want: Event{ID: "evt_01hv8x2acma2gz3he3hs3nq0sy", Type: "subscription.created", OccurredAt: occurred, Entities: []hub.Entity{{Kind: "subscription", ID: "sub_1"}}}},
		{name: "occurred_at not a time", body: `{"event_id":"evt_1","event_type":"a.b","occurred_at":"soon"}`, want: Event{ID: "evt_1", Type: "a.b"}},
		{name: "no occurred_at", body: `{"event_id":"evt_2","event_type":"a.b"}`, want: Event{ID: "evt_2", Type: "a.b"}},
		{name: "no event_id", body: `{"event_type":"a.b"}`, wantErr: "invalid payload: body has no event_id"},
		{name: "no event_type", body: `{"event_id":"evt_3"}`, wantErr: "invalid payload: body has no event_type"},
		{name: "event_type not a string", body: `{"event_id":"evt_4","event_type":{}}`, wantErr: "invalid payload: event_type is a JSON object, not a string"},
		{name: "a string", body: `"evt_5"`, wantErr: "invalid payload: body is a JSON string, not an object"},
		{name: "event_type of 129 bytes", body: `{"event_id":"evt_6","event_type":"` + strings.Repeat("t", 129) + `"}`, wantErr: "invalid payload: event_type is longer than 128 bytes"},
		{name: "C1 control in event_id", body: `{"event_id":"evt_\u0085","event_type":"a.b"}`, wantErr: "invalid payload: event_id contains control characters"},
	})
}

func TestGitHubEvent(t *testing.T) {
	// The headers as GitHub's deliveries API lists them under
	// request.headers (Get is case-insensitive, as on a webhook).
	headers := func(event, delivery string) http.Header {
		return githubHeader("sha256=not-checked", event, delivery)
	}
	tests := []struct {
		name    string
		h       http.Header
		payload string
		wantErr string
		want    Event
	}{
		{"an action", headers("pull_request", githubDelivery), string(githubTestBody), "", Event{ID: githubDelivery, Type: "pull_request.opened", Entities: []hub.Entity{{Kind: "repository", ID: "octocat/Hello-World"}}}},
		{"no action", headers("push", githubDelivery), `{"ref":"refs/heads/main"}`, "", Event{ID: githubDelivery, Type: "push"}},
		{"action not a string", headers("workflow_job", githubDelivery), `{"action":{"x":1}}`, "", Event{ID: githubDelivery, Type: "workflow_job"}},
		{"leading space", headers("issues", githubDelivery), " \n{\"action\":\"closed\"}", "", Event{ID: githubDelivery, Type: "issues.closed"}},
		{"no delivery header", headers("push", ""), `{}`, "invalid payload: missing X-GitHub-Delivery header", Event{}},
		{"no event header", headers("", githubDelivery), `{}`, "invalid payload: missing X-GitHub-Event header", Event{}},
		{"a form, as a webhook may be", headers("issues", githubDelivery), "payload=%7B%7D", "invalid payload: payload is not a JSON object", Event{}},
		{"null", headers("issues", githubDelivery), "null", "invalid payload: payload is not a JSON object", Event{}},
		{"not JSON", headers("issues", githubDelivery), `{"action":`, "invalid payload: body is not JSON: unexpected end of JSON input", Event{}},
		{"delivery of 256 bytes", headers("push", strings.Repeat("d", 256)), `{}`, "invalid payload: X-GitHub-Delivery is longer than 255 bytes", Event{}},
		{"action with LF", headers("issues", githubDelivery), `{"action":"opened\n"}`, "invalid payload: type contains control characters", Event{}},
		{"type too long", headers("issues", githubDelivery), `{"action":"` + strings.Repeat("a", 122) + `"}`, "invalid payload: type is longer than 128 bytes", Event{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := GitHubEvent(tt.h, []byte(tt.payload))
			requireParsed(t, ev, err, tt.wantErr, tt.want)
		})
	}
}

// agreeWithSigned is agreeWithVerify on body as p signs it (Stripe and
// Paddle carry the event id and type in the body).
func agreeWithSigned(t *testing.T, p interface {
	Provider
	Signer
}, body []byte, parsed Event, parseErr error) {
	t.Helper()
	h, target, err := p.Sign("", "", body, fuzzNow)
	if err != nil {
		t.Fatal(err)
	}
	agreeWithVerify(t, p, h, target, body, parsed, parseErr)
}

// agreeWithVerify fails t unless parsed (the API parser's result on body)
// is what p's Verify returns for body signed, less what only a webhook
// carries (the signature and its time).
func agreeWithVerify(t *testing.T, p Provider, h http.Header, target string, body []byte, parsed Event, parseErr error) {
	t.Helper()
	if parseErr != nil && !errors.Is(parseErr, ErrPayload) {
		t.Fatalf("error %v does not wrap ErrPayload", parseErr)
	}
	ev, err := p.Verify(Request{Header: h, Body: body, URI: target, Now: fuzzNow})
	if errors.Is(err, ErrInvalidSignature) || errors.Is(err, ErrTimestamp) {
		t.Fatalf("Verify refused the signed copy: %v", err)
	}
	ev.Signature, ev.SignedAt = "", time.Time{}
	if (err == nil) != (parseErr == nil) || !reflect.DeepEqual(ev, parsed) {
		t.Fatalf("parser: %+v, %v; Verify: %+v, %v; body %q", parsed, parseErr, ev, err, body)
	}
	if parseErr == nil && (CheckEventID(parsed.ID) != nil || CheckEventType(parsed.Type) != nil) {
		t.Fatalf("parsed an event VerifyDelivery refuses: %+v", parsed)
	}
	checkEntities(t, parsed.Entities)
}

func FuzzStripeEvent(f *testing.F) {
	p, err := NewStripe([]string{stripeSecret}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	for _, b := range []string{string(stripeTestBody), `{"id":"evt_1","type":"a.b","created":1}`, `{"id":"","type":"a"}`, `[]`, `{"id":"a\u0000","type":"b"}`, `{"id":"x","type":"y","created":1e3}`} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := StripeEvent(body)
		agreeWithSigned(t, p, body, ev, err)
	})
}

func FuzzPaddleEvent(f *testing.F) {
	p := newTestProvider(f, "paddle", paddleSecret).(*Paddle)
	for _, b := range []string{`{"event_id":"evt_1","event_type":"a.b","occurred_at":"2024-04-12T10:18:49.621022Z"}`, `{"event_id":"evt_1"}`, `{}`, `"x"`, `{"event_id":"e","event_type":"t","occurred_at":5}`} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := PaddleEvent(body)
		agreeWithSigned(t, p, body, ev, err)
	})
}

func FuzzGitHubEvent(f *testing.F) {
	g, err := NewGitHub([]string{githubSecret}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(githubDelivery, "pull_request", githubTestBody)
	f.Add(githubDelivery, "push", []byte(`{}`))
	f.Add("", "push", []byte(`{"action":"x"}`))
	f.Add(githubDelivery, "issues", []byte(`{"action":5}`))
	f.Add(githubDelivery, "issues", []byte(`payload=%7B%7D`))
	f.Fuzz(func(t *testing.T, delivery, event string, payload []byte) {
		h := http.Header{}
		h.Set(GitHubDeliveryHeader, delivery)
		h.Set(GitHubEventHeader, event)
		ev, err := GitHubEvent(h, payload)
		if !bytes.HasPrefix(bytes.TrimLeft(payload, " \t\r\n"), []byte("{")) {
			if !errors.Is(err, ErrPayload) {
				t.Fatalf("accepted a payload that is no JSON object: %q (%v)", payload, err)
			}
			return
		}
		h.Set(GitHubSignatureHeader, githubSig(githubSecret, payload))
		agreeWithVerify(t, g, h, "/webhooks/github", payload, ev, err)
	})
}
