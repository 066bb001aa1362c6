package provider

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/stretchr/testify/require"
)

// Reference signers, written straight from the documented schemes and
// independent of the code under test.

// refPaddleH1 returns the hex h1 for ts and body under secret.
func refPaddleH1(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + ":"))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// refSvixV1 returns the base64 v1 signature for id, ts and body under a
// whsec_ secret.
func refSvixV1(secret, id, ts string, body []byte) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		panic(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// headerOf returns a header holding each name and value pair of kv whose
// value is not empty.
func headerOf(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			h.Set(kv[i], kv[i+1])
		}
	}
	return h
}

func paddleHeader(value string) http.Header { return headerOf("Paddle-Signature", value) }

func svixHeader(id, ts, sig string) http.Header {
	return headerOf("svix-id", id, "svix-timestamp", ts, "svix-signature", sig)
}

// Test secrets of the newer providers: the current one and an older one
// still accepted during a rotation.
const (
	stripeSecret      = "whsec_test_secret"
	stripeOldSecret   = "whsec_0ldR0lledSecretStillActiveFor24h"
	githubSecret      = "It's a Secret to Everybody"
	githubOldSecret   = "0123456789abcdef"
	shopifySecret     = "test_secret_key"
	shopifyOldSecret  = "shpss_0ld5ecret0ld5ecret0ld5ecret"
	standardSecret    = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
	standardOldSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	twilioSecret      = "12345"
	twilioOldSecret   = "0f9e8d7c6b5a49382716051f2e3d4c5b"
	testPublicURL     = "https://hub.example.com"
)

// testSecrets maps every registered provider to its current and old test
// secret.
var testSecrets = map[string][2]string{
	"paddle":            {paddleSecret, paddleOldSecret},
	"clerk":             {clerkSecret, clerkOldSecret},
	"stripe":            {stripeSecret, stripeOldSecret},
	"github":            {githubSecret, githubOldSecret},
	"shopify":           {shopifySecret, shopifyOldSecret},
	"standard-webhooks": {standardSecret, standardOldSecret},
	"twilio":            {twilioSecret, twilioOldSecret},
}

// newTestProvider builds a registered provider with the test public URL.
func newTestProvider(t testing.TB, name string, secrets ...string) Provider {
	t.Helper()
	p, err := New(name, secrets, Options{PublicURL: testPublicURL})
	require.NoError(t, err)
	return p
}

// delivery is a signed request: headers, request-target and body.
type delivery struct {
	header http.Header
	target string
	body   []byte
}

// sampleDelivery builds a realistic signed delivery of p, as `hub send`
// does (samples.New).
func sampleDelivery(p Provider, eventID, eventType string, now time.Time) (delivery, error) {
	d, err := samples.New(p.(samples.Signer), eventID, eventType, nil, now)
	return delivery{d.Header, d.Target, d.Body}, err
}

// signDelivery signs body as eventType with p, as `hub send` does.
func signDelivery(p Provider, eventID, eventType string, body []byte, now time.Time) (delivery, error) {
	h, target, err := p.(Signer).Sign(eventID, eventType, body, now)
	return delivery{h, target, body}, err
}

// verifyDelivery verifies d with p, as the HTTP server does
// (VerifyDelivery).
func verifyDelivery(p Provider, d delivery, now time.Time) (Event, error) {
	return VerifyDelivery(p, Request{Header: d.header, Body: d.body, URI: d.target, Now: now})
}

// refStripeV1 returns the hex v1 for t and body under a Stripe secret,
// used whole as the key.
func refStripeV1(secret, t string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(t + "."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// refHMACSHA256 returns HMAC-SHA256(secret, body).
func refHMACSHA256(secret string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return m.Sum(nil)
}

// refTwilio returns Twilio's signature of a request to fullURL: the URL,
// then for a form body every parameter's name and value, sorted by name
// (and by value within a name), keyed with token. sha256 selects the
// Webhooks Rule variant.
func refTwilio(token, fullURL string, form url.Values, useSHA256 bool) string {
	s := refTwilioSigned(fullURL, form)
	newHash := sha1.New
	if useSHA256 {
		newHash = sha256.New
	}
	m := hmac.New(newHash, []byte(token))
	m.Write([]byte(s))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// refTwilioSigned returns the string Twilio signs for a request to fullURL
// with form's parameters (nil for a JSON body), as twilio-node's
// getExpectedTwilioSignature builds it: the URL, then the names in
// JavaScript's sort order and, for each, its distinct values in that
// order, each preceded by the name.
func refTwilioSigned(fullURL string, form url.Values) string {
	var b strings.Builder
	b.WriteString(fullURL)
	names := make([]string, 0, len(form))
	for name := range form {
		names = append(names, name)
	}
	for _, name := range refSortJS(names) {
		distinct := map[string]bool{}
		for _, v := range form[name] {
			distinct[v] = true
		}
		values := make([]string, 0, len(distinct))
		for v := range distinct {
			values = append(values, v)
		}
		for _, v := range refSortJS(values) {
			b.WriteString(name)
			b.WriteString(v)
		}
	}
	return b.String()
}

// refSortJS sorts ss as JavaScript's Array.prototype.sort does by
// default: by the UTF-16 code units of each string (invalid UTF-8 read as
// U+FFFD), ties by bytes.
func refSortJS(ss []string) []string {
	out := slices.Clone(ss)
	slices.SortFunc(out, func(a, b string) int {
		if c := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b))); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return out
}

// requireInvalidSignature checks that p refuses r with ErrInvalidSignature
// and the detail.
func requireInvalidSignature(t *testing.T, p Provider, r Request, detail string) {
	t.Helper()
	_, err := p.Verify(r)
	require.ErrorIs(t, err, ErrInvalidSignature)
	require.EqualError(t, err, "invalid signature: "+detail)
}

// payloadCase is a body a provider signs and verifies, and what its
// Verify answers.
type payloadCase struct {
	name, body, wantErr string // wantErr "" means the body is valid
	wantType, wantID    string // "" means any non-empty type; the signed event id
	wantOcc             time.Time
}

// testPayloads signs each case's body with p at now under eventID and
// checks what p's Verify says of it.
func testPayloads(t *testing.T, p interface {
	Provider
	Signer
}, eventID string, now time.Time, tests []payloadCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _, err := p.Sign(eventID, "", []byte(tt.body), now)
			require.NoError(t, err)
			ev, err := p.Verify(Request{Header: h, Body: []byte(tt.body), Now: now})
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrPayload)
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.wantID == "" {
				tt.wantID = eventID
			}
			require.Equal(t, tt.wantID, ev.ID)
			if tt.wantType == "" {
				require.NotEmpty(t, ev.Type)
			} else {
				require.Equal(t, tt.wantType, ev.Type)
			}
			require.True(t, tt.wantOcc.Equal(ev.OccurredAt), "OccurredAt %v", ev.OccurredAt)
		})
	}
}

// deterministicSample returns the sample body of provider name for the
// event, checking that samples.Body answers the same bytes twice.
func deterministicSample(t *testing.T, name, eventID, eventType string, now time.Time) []byte {
	t.Helper()
	body, err := samples.Body(name, eventID, eventType, nil, now)
	require.NoError(t, err)
	again, err := samples.Body(name, eventID, eventType, nil, now)
	require.NoError(t, err)
	require.Equal(t, body, again, "Sample is deterministic")
	return body
}

// requireRejectedBy checks that a verifier built by newP with secret
// alone (not the one that signed h) rejects the delivery as forged.
func requireRejectedBy[P Provider](t *testing.T, newP func([]string, Options) (P, error), secret string, o Options, h http.Header, body []byte, now time.Time) {
	t.Helper()
	other, err := newP([]string{secret}, o)
	require.NoError(t, err)
	_, err = other.Verify(Request{Header: h, Body: body, Now: now})
	require.ErrorIs(t, err, ErrInvalidSignature)
}

// requireVerify verifies r with p and checks that it fails with wantErr,
// returning no event, or, when wantErr is nil, succeeds. ok reports
// whether it succeeded.
func requireVerify(t *testing.T, p Provider, r Request, wantErr error) (ev Event, ok bool) {
	t.Helper()
	ev, err := p.Verify(r)
	if wantErr != nil {
		require.ErrorIs(t, err, wantErr)
		require.Equal(t, Event{}, ev)
		return ev, false
	}
	require.NoError(t, err)
	return ev, true
}
