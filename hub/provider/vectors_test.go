package provider

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// vector is one entry of testdata/vectors.json: a test vector copied from a
// provider's SDK or documentation, or computed where it publishes none
// (its name says which: provider/source/case).
type vector struct {
	Name          string            `json:"name"`
	Provider      string            `json:"provider"`
	Secret        string            `json:"secret"`
	URL           *string           `json:"url"`
	Headers       map[string]string `json:"headers"`
	Body          string            `json:"body"`
	ExpectedValid bool              `json:"expected_valid"`
	NowUnix       *int64            `json:"now_unix"`
	ToleranceS    *int64            `json:"tolerance_s"`
	Source        string            `json:"source"`
	Notes         string            `json:"notes"`
}

func loadVectors(t testing.TB) []vector {
	t.Helper()
	raw, err := os.ReadFile("testdata/vectors.json")
	require.NoError(t, err)
	var vs []vector
	require.NoError(t, json.Unmarshal(raw, &vs))
	return vs
}

func (v vector) header() http.Header {
	h := http.Header{}
	for name, value := range v.Headers {
		h.Set(name, value)
	}
	return h
}

func (v vector) tolerance() time.Duration {
	if v.ToleranceS == nil {
		return 0 // the provider's default
	}
	return time.Duration(*v.ToleranceS) * time.Second
}

// splitURL splits a vector's Twilio URL into the public base URL (scheme
// and authority) and the request-target the hub would receive.
func splitURL(t testing.TB, raw string) (base, target string) {
	t.Helper()
	scheme, rest, ok := strings.Cut(raw, "://")
	require.True(t, ok, "url %q", raw)
	i := strings.IndexAny(rest, "/?")
	require.GreaterOrEqual(t, i, 0, "url %q", raw)
	return scheme + "://" + rest[:i], rest[i:]
}

// verifyVector checks v with its provider at time now.
//
// Twilio's official vectors sign https://mycompany.com/myapp.php?foo=1&bar=2,
// a URL the hub never accepts: its path is not TwilioPath and its query
// holds keys other than type and bodySHA256 (see Twilio.Verify).
// They are checked against Twilio's scheme itself (checkSignature, the
// code Verify authenticates with, on the vector's own URL), and
// TestTwilioVectorsRefusedByTheHub pins that the hub refuses them.
func verifyVector(t testing.TB, v vector, now time.Time) (Provider, Event, error) {
	t.Helper()
	if v.Provider == "twilio" {
		return verifyTwilioScheme(t, v)
	}
	require.Nil(t, v.URL, "only twilio vectors have a url")
	p, err := New(v.Provider, []string{v.Secret}, Options{Tolerance: v.tolerance()})
	require.NoError(t, err)
	ev, err := p.Verify(Request{Header: v.header(), Body: []byte(v.Body), Now: now})
	return p, ev, err
}

// verifyTwilioScheme checks a Twilio vector under Twilio's scheme alone,
// as the official SDKs do: the MAC of the vector's URL (either port
// variant) plus the form's sorted parameters, or of the URL alone with
// the body hashing to its bodySHA256; then it reads the event from the
// form as Verify would for a URL without a type.
func verifyTwilioScheme(t testing.TB, v vector) (Provider, Event, error) {
	t.Helper()
	require.NotNil(t, v.URL, "every twilio vector has a url")
	base, target := splitURL(t, *v.URL)
	path, rawQuery, hasQuery := strings.Cut(target, "?")
	tw, err := NewTwilio([]string{v.Secret}, Options{PublicURL: base})
	require.NoError(t, err)
	bases, err := twilioBases(base + path)
	require.NoError(t, err)
	tw.bases = [2][]byte{[]byte(bases[0]), []byte(bases[1])} // the vector's URL, not base + TwilioPath
	query := ""
	if hasQuery {
		query = "?" + rawQuery
	}
	parsed, err := url.ParseQuery(rawQuery)
	require.NoError(t, err)
	var form url.Values
	bodyHash := parsed.Get("bodySHA256")
	if bodyHash == "" {
		form, err = url.ParseQuery(v.Body)
		require.NoError(t, err)
	}
	header, err := tw.checkSignature(v.header(), query, form, bodyHash, []byte(v.Body))
	if err != nil {
		return tw, Event{}, err
	}
	ev, err := twilioEvent(v.header(), "", form)
	if err != nil {
		return tw, Event{}, err
	}
	ev.Signature = header
	return tw, ev, nil
}

// The hub's own rules refuse every official Twilio vector, authentic or
// not, before any MAC: their URL's path is /myapp.php. Moved to the mount
// path, their query (foo=1&bar=2) is refused in turn.
func TestTwilioVectorsRefusedByTheHub(t *testing.T) {
	n := 0
	for _, v := range loadVectors(t) {
		if v.Provider != "twilio" {
			continue
		}
		n++
		t.Run(v.Name, func(t *testing.T) {
			base, target := splitURL(t, *v.URL)
			tw, err := NewTwilio([]string{v.Secret}, Options{PublicURL: base})
			require.NoError(t, err)
			ev, err := tw.Verify(Request{Header: v.header(), Body: []byte(v.Body), URI: target})
			require.ErrorIs(t, err, errTwilioBadPath)
			require.Equal(t, Event{}, ev)
			_, query, _ := strings.Cut(target, "?")
			_, err = tw.Verify(Request{Header: v.header(), Body: []byte(v.Body), URI: TwilioPath + "?" + query})
			require.ErrorIs(t, err, errTwilioBadQuery)
		})
	}
	require.Equal(t, 9, n)
}

// The vectors' verdicts are about authenticity only. Several authentic
// vectors carry bodies that are no provider event at all ({"data": […]},
// "hello-world", {"test": 2432232314}), or lack what the hub needs beyond
// the signature (a JSON Twilio body with no idempotency token); the hub
// rejects those with ErrPayload after authenticating them.
var vectorPayloadErrors = map[string]bool{
	"paddle/node-sdk/valid":                            true,
	"paddle/node-sdk/valid-at-edge-5s":                 true,
	"paddle/node-sdk/multi-h1-plus-unknown-h2":         true,
	"paddle/python-sdk/multi-h1-rotation-valid":        true,
	"clerk/svix-go/valid":                              true,
	"clerk/svix-go/secret-without-prefix":              true,
	"clerk/svix-go/edge-300s-still-valid":              true,
	"clerk/svix-go/multi-signature-rotation":           true,
	"standard-webhooks/rust/valid":                     true,
	"standard-webhooks/go/valid":                       true,
	"standard-webhooks/rust/multi-signature-one-valid": true,
	"github/docs/valid":                                true,
	"twilio/python/valid-json-bodySHA256":              true,
}

// timestamped lists the providers whose scheme signs a timestamp, with
// their default tolerance.
var timestamped = map[string]time.Duration{
	"paddle":            5 * time.Second,
	"clerk":             300 * time.Second,
	"standard-webhooks": 300 * time.Second,
	"stripe":            300 * time.Second,
}

func TestVectors(t *testing.T) {
	vs := loadVectors(t)
	counts := map[string]int{}
	for _, v := range vs {
		counts[v.Provider]++
	}
	require.Equal(t, map[string]int{
		"paddle": 13, "clerk": 11, "standard-webhooks": 10, "stripe": 7, "github": 6, "shopify": 4, "twilio": 9,
	}, counts, "testdata holds every reference vector")

	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			tol, hasTS := timestamped[v.Provider]
			// A scheme without a signed timestamp gives the same verdict
			// at any time: check two clocks years apart.
			clocks := []time.Time{time.Unix(1000000000, 0), time.Unix(2000000000, 0)}
			if hasTS {
				require.NotNil(t, v.NowUnix, "every timestamped vector has a clock")
				clocks = []time.Time{time.Unix(*v.NowUnix, 0)}
			} else {
				require.Nil(t, v.NowUnix, "a scheme without timestamp has no clock")
			}
			for _, now := range clocks {
				p, ev, err := verifyVector(t, v, now)
				if hasTS && v.ToleranceS == nil {
					require.Equal(t, tol, p.(interface{ Tolerance() time.Duration }).Tolerance())
				}
				authentic := err == nil || errors.Is(err, ErrPayload)
				require.Equal(t, v.ExpectedValid, authentic, "verdict; err = %v", err)

				switch {
				case !v.ExpectedValid:
					require.True(t, errors.Is(err, ErrInvalidSignature) || errors.Is(err, ErrTimestamp), "err = %v", err)
					if strings.Contains(v.Name, "expired") || strings.Contains(v.Name, "future") {
						require.ErrorIs(t, err, ErrTimestamp)
					} else {
						require.ErrorIs(t, err, ErrInvalidSignature)
					}
				case vectorPayloadErrors[v.Name]:
					require.ErrorIs(t, err, ErrPayload)
				default:
					require.NoError(t, err)
					require.NotEmpty(t, ev.ID)
					require.NotEmpty(t, ev.Type)
					require.NotEmpty(t, ev.Signature)
					require.Equal(t, hasTS, !ev.SignedAt.IsZero())
				}
			}
		})
	}
}

// TestVectorEvents pins what the vectors that carry a full event yield.
func TestVectorEvents(t *testing.T) {
	byName := map[string]vector{}
	for _, v := range loadVectors(t) {
		byName[v.Name] = v
	}
	tests := []struct {
		name string
		want Event
	}{
		{"paddle/go-sdk/valid", Event{
			ID:         "evt_01hsdn97563968dy0szkmgjwh3",
			Type:       "price.created",
			Signature:  "ts=1710929255;h1=6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8",
			SignedAt:   time.Unix(1710929255, 0),
			OccurredAt: time.Date(2024, 3, 20, 10, 7, 35, 590857000, time.UTC),
		}},
		{"paddle/python-sdk/special-chars-escaped", Event{
			ID:         "evt_01hs0t94tjvtv62azjmkbeysz7",
			Type:       "customer.created",
			Signature:  "ts=1710498288;h1=38219b3ba1578184e625c29d201a27cd25bd69e2ec9c3ab87dcb90d87ff73a41",
			SignedAt:   time.Unix(1710498288, 0),
			OccurredAt: time.Date(2024, 3, 15, 10, 24, 48, 466759000, time.UTC),
		}},
		{"clerk/computed/user-created-shape", Event{
			ID:         "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
			Type:       "user.created",
			Signature:  "v1,0Y74HZCeO9HrYFfY2isaJl3Woz3mWXoxPF4W54GB+1g=",
			SignedAt:   time.Unix(1700000000, 0),
			OccurredAt: time.UnixMilli(1654012591835),
		}},
		{"stripe/computed/valid", Event{
			ID:         "evt_test_webhook",
			Type:       "payment_intent.succeeded",
			Signature:  "t=1700000000,v1=1e62da2a409ae44b67ee009105a90d2a6d4193e3339ccd9ffa85781ff31b4534",
			SignedAt:   time.Unix(1700000000, 0),
			OccurredAt: time.Unix(1700000000, 0),
		}},
		{"github/go-github/valid-sha256", Event{
			ID:        "00000000-0000-0000-0000-000000000000",
			Type:      "ping",
			Signature: "sha256=b1f8020f5b4cd42042f807dd939015c4a418bc1ff7f604dd55b0a19b5d953d9b",
		}},
		{"shopify/app-js/valid", Event{
			ID:        "123456789",
			Type:      "products.create",
			Signature: "B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g=",
		}},
		{"twilio/python/valid-form", Event{
			ID:        "CA1234567890ABCDE",
			Type:      "call",
			Signature: "RSOYDt4T1cUTdK1PDd93/VVr8B8=",
		}},
		{"twilio/python/default-port-added", Event{
			ID:        "CA1234567890ABCDE",
			Type:      "call",
			Signature: "kvajT1Ptam85bY51eRf/AJRuM3w=",
		}},
		{"twilio/go/valid-form", Event{
			ID:        "CA1234567890ABCDE",
			Type:      "call",
			Signature: "vOEb5UThFn24KEfnOFLQY2AE5FY=",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := byName[tt.name]
			require.True(t, ok)
			now := time.Unix(1700000000, 0)
			if v.NowUnix != nil {
				now = time.Unix(*v.NowUnix, 0)
			}
			_, ev, err := verifyVector(t, v, now)
			require.NoError(t, err)
			require.Equal(t, tt.want.ID, ev.ID)
			require.Equal(t, tt.want.Type, ev.Type)
			require.Equal(t, tt.want.Signature, ev.Signature)
			require.True(t, tt.want.SignedAt.Equal(ev.SignedAt), "SignedAt %v", ev.SignedAt)
			require.True(t, tt.want.OccurredAt.Equal(ev.OccurredAt), "OccurredAt %v", ev.OccurredAt)
		})
	}
}
