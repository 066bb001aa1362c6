package provider

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/provider/samples"
)

// The cross-language contract: the providers' official SDKs (npm packages
// pinned in testdata/sdk/package-lock.json) check the hub both ways. What
// the hub signs (samples.New, Sign), the SDKs verify and, for Paddle, parse
// without a field they do not know or miss; what the SDKs sign, the hub
// verifies; and where a rule has corner cases (the svix library's header
// spellings), the hub's verdict equals the SDK's on each.
//
// svix is pinned to 1.99.1, the last release that runs on Node 20 (2.x
// wants Node 22); both read the header spellings by the same rule.
//
// testdata/sdk/script.mjs runs the cases with Node. Install the SDKs with
// `npm ci --prefix hub/provider/testdata/sdk`; without them the test
// skips, unless HOOKHUB_REQUIRE_SDK=1 (CI) makes it fail.

// sdkDir holds the Node project.
const sdkDir = "testdata/sdk"

// sdkNow is the time every case is signed and checked at; the script fixes
// the SDKs' clock to it.
var sdkNow = time.Unix(1750000000, 0)

// sdkCase is one call into an SDK; its fields are script.mjs's input.
type sdkCase struct {
	ID        string            `json:"id"`
	SDK       string            `json:"sdk"`
	Op        string            `json:"op"`
	Now       int64             `json:"now"`
	Secret    string            `json:"secret"`
	Body      string            `json:"body"`
	Headers   map[string]string `json:"headers,omitempty"` // lower-case names
	URL       string            `json:"url,omitempty"`
	JSON      bool              `json:"json,omitempty"`
	MsgID     string            `json:"msgId,omitempty"`
	Timestamp int64             `json:"timestamp,omitempty"`
	Algorithm string            `json:"algorithm,omitempty"`

	// check judges the SDK's result, run after every case has run.
	check func(t *testing.T, r sdkResult) `json:"-"`
}

// sdkResult is script.mjs's output for one case.
type sdkResult struct {
	ID        string   `json:"id"`
	OK        bool     `json:"ok"`
	Error     string   `json:"error"`
	Signature string   `json:"signature"`
	Problems  []string `json:"problems"`
}

// runSDK runs cases through script.mjs and returns the results by id. It
// skips the test when the SDKs are not installed, unless
// HOOKHUB_REQUIRE_SDK=1.
func runSDK(t *testing.T, cases []sdkCase) map[string]sdkResult {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(sdkDir, "node_modules", ".package-lock.json"))
	}
	if err != nil {
		if os.Getenv("HOOKHUB_REQUIRE_SDK") == "1" {
			t.Fatalf("the official SDKs are required (HOOKHUB_REQUIRE_SDK=1) but not usable: %v; run npm ci --prefix hub/provider/%s", err, sdkDir)
		}
		t.Skipf("official SDKs not installed (%v): npm ci --prefix hub/provider/%s", err, sdkDir)
	}
	in, err := json.Marshal(cases)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "cases.json")
	require.NoError(t, os.WriteFile(file, in, 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, node, "script.mjs", file)
	cmd.Dir, cmd.Stdout, cmd.Stderr = sdkDir, &stdout, &stderr
	require.NoError(t, cmd.Run(), "node script.mjs: %s", stderr.String())
	var results []sdkResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &results), "script output: %s", stdout.String())
	byID := make(map[string]sdkResult, len(results))
	for _, r := range results {
		byID[r.ID] = r
	}
	require.Len(t, byID, len(cases), "one result per case")
	return byID
}

// lowerHeaders returns h's first values under lower-case names, as Node
// hands headers to the SDKs.
func lowerHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			out[strings.ToLower(k)] = v[0]
		}
	}
	return out
}

// sdkAccepts checks that the SDK accepted.
func sdkAccepts(t *testing.T, r sdkResult) {
	t.Helper()
	require.True(t, r.OK, "the SDK refused: %s", r.Error)
}

func TestOfficialSDKs(t *testing.T) {
	now := sdkNow
	var cases []sdkCase
	add := func(c sdkCase) {
		c.Now = now.Unix()
		cases = append(cases, c)
	}
	build := func(name string, o Options) Provider {
		p, err := New(name, []string{testSecrets[name][0]}, o)
		require.NoError(t, err)
		return p
	}
	verify := func(p Provider, d samples.Delivery) (Event, error) {
		return VerifyDelivery(p, Request{Header: d.Header, Body: d.Body, URI: d.Target, Now: now})
	}
	deliver := func(p Provider, id, typ string) samples.Delivery {
		d, err := samples.New(p.(Signer), id, typ, nil, now)
		require.NoError(t, err)
		_, err = verify(p, d)
		require.NoError(t, err, "the hub verifies its own %s sample", p.Name())
		return d
	}

	// Svix and Standard Webhooks.
	std, err := NewStandardWebhooks([]string{standardSecret}, Options{Name: "resend"})
	require.NoError(t, err)
	clerk := build("clerk", Options{})
	for _, p := range []Provider{std, clerk} {
		d := deliver(p, "msg_2sdkContract", map[Provider]string{std: "email.delivered", clerk: "user.created"}[p])
		secret := map[Provider]string{std: standardSecret, clerk: clerkSecret}[p]
		if p == std {
			add(sdkCase{ID: "standardwebhooks verifies the hub's signature", SDK: "standardwebhooks", Op: "verify",
				Secret: secret, Body: string(d.Body), Headers: lowerHeaders(d.Header), check: sdkAccepts})
		}
		// Each header spelling and mix: the hub's verdict is the svix
		// library's, for both of the hub's Svix-scheme providers.
		id := cmp.Or(d.Header.Get("svix-id"), d.Header.Get("webhook-id"))
		ts := cmp.Or(d.Header.Get("svix-timestamp"), d.Header.Get("webhook-timestamp"))
		sig := cmp.Or(d.Header.Get("svix-signature"), d.Header.Get("webhook-signature"))
		wrongSig := "v1," + strings.Repeat("A", 43) + "="
		for _, v := range []struct {
			name    string
			headers map[string]string
		}{
			{"webhook-* only", map[string]string{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig}},
			{"svix-* only (Resend)", map[string]string{"svix-id": id, "svix-timestamp": ts, "svix-signature": sig}},
			{"both spellings", map[string]string{"svix-id": id, "svix-timestamp": ts, "svix-signature": sig, "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig}},
			{"both, webhook-signature wrong", map[string]string{"svix-id": id, "svix-timestamp": ts, "svix-signature": sig, "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": wrongSig}},
			{"both, svix-signature wrong", map[string]string{"svix-id": id, "svix-timestamp": ts, "svix-signature": wrongSig, "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig}},
			{"both, svix-id another", map[string]string{"svix-id": id + "x", "svix-timestamp": ts, "svix-signature": sig, "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig}},
			{"mixed: svix-id", map[string]string{"svix-id": id, "webhook-timestamp": ts, "webhook-signature": sig}},
			{"mixed: svix-timestamp", map[string]string{"webhook-id": id, "svix-timestamp": ts, "webhook-signature": sig}},
			{"mixed: svix-signature", map[string]string{"webhook-id": id, "webhook-timestamp": ts, "svix-signature": sig}},
			{"mixed: webhook-id", map[string]string{"webhook-id": id, "svix-timestamp": ts, "svix-signature": sig}},
			{"no id", map[string]string{"svix-timestamp": ts, "webhook-signature": sig}},
			{"no signature", map[string]string{"svix-id": id, "webhook-timestamp": ts}},
			{"none", map[string]string{}},
		} {
			h := http.Header{}
			for k, val := range v.headers {
				h.Set(k, val)
			}
			ev, hubErr := VerifyDelivery(p, Request{Header: h, Body: d.Body, URI: d.Target, Now: now})
			if hubErr == nil {
				require.Equal(t, id, ev.ID)
			}
			add(sdkCase{ID: fmt.Sprintf("svix verdict on %s headers: %s", p.Name(), v.name), SDK: "svix", Op: "verify",
				Secret: secret, Body: string(d.Body), Headers: v.headers,
				check: func(t *testing.T, r sdkResult) {
					require.Equal(t, r.OK, hubErr == nil, "svix: %v (%s); hub: %v", r.OK, r.Error, hubErr)
				}})
		}
		// Signed by the SDKs, under either spelling, verified by the hub.
		for _, sdk := range []string{"standardwebhooks", "svix"} {
			add(sdkCase{ID: sdk + " signs, " + p.Name() + " verifies", SDK: sdk, Op: "sign", Secret: secret, Body: string(d.Body),
				MsgID: "msg_signedBy" + sdk, Timestamp: now.Unix(),
				check: func(t *testing.T, r sdkResult) {
					sdkAccepts(t, r)
					for _, prefix := range []string{"svix-", "webhook-"} {
						h := http.Header{}
						h.Set(prefix+"id", "msg_signedBy"+sdk)
						h.Set(prefix+"timestamp", strconv.FormatInt(now.Unix(), 10))
						h.Set(prefix+"signature", r.Signature)
						ev, err := VerifyDelivery(p, Request{Header: h, Body: d.Body, URI: d.Target, Now: now})
						require.NoError(t, err, "%s headers", prefix)
						require.Equal(t, "msg_signedBy"+sdk, ev.ID)
					}
				}})
		}
	}

	// Twilio: forms with repeated parameters, as the helper signs them.
	tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
	require.NoError(t, err)
	twilioSample := deliver(tw, "tok_sdkContract", "sms.status")
	for _, form := range []struct{ name, body string }{
		{"the hub's sms.status sample", string(twilioSample.Body)},
		{"a repeated identical value", "MessageSid=SM1&MessageStatus=delivered&Tag=a1&Tag=a1"},
		{"repeated values out of order, one twice", "Tag=b&MessageSid=SM1&Tag=a&Tag=b&Tag=a1"},
		{"values sorted by UTF-16, not bytes", "MessageSid=SM1&V=%EF%BC%81&V=%F0%9F%98%80&V=%C3%A9"},
		{"names sorted by UTF-16, not bytes", "MessageSid=SM1&V%EF%BC%81=1&V%F0%9F%98%80=2"},
		{"an empty value repeated", "MessageSid=SM1&Digits=&Digits=&Digits=1"},
		{"a JSON body", `{"MessageSid":"SM1","tags":["a1","a1"]}`},
	} {
		body := []byte(form.body)
		isJSON := strings.HasPrefix(form.body, "{")
		h, target, err := tw.Sign("tok_sdkContract", "sms.status", body, now)
		require.NoError(t, err)
		add(sdkCase{ID: "twilio validates the hub's signature: " + form.name, SDK: "twilio", Op: "verify",
			Secret: twilioSecret, Body: form.body, Headers: lowerHeaders(h), URL: testPublicURL + target, JSON: isJSON, check: sdkAccepts})
		for _, alg := range []string{"", "HMAC_SHA256"} {
			add(sdkCase{ID: "twilio signs (" + cmp.Or(alg, "HMAC_SHA1") + "), the hub verifies: " + form.name, SDK: "twilio", Op: "sign",
				Secret: twilioSecret, Body: form.body, URL: testPublicURL + target, JSON: isJSON, Algorithm: alg,
				check: func(t *testing.T, r sdkResult) {
					sdkAccepts(t, r)
					h := http.Header{}
					h.Set(TwilioSignatureHeader, r.Signature)
					h.Set(TwilioIdempotencyHeader, "tok_sdkContract")
					if alg != "" {
						h.Set(TwilioSettingsHeader, "key=webhooks_sharedkey,algorithm="+alg)
					}
					_, err := VerifyDelivery(tw, Request{Header: h, Body: body, URI: target, Now: now})
					require.NoError(t, err)
				}})
		}
	}

	// Paddle: every sample type parses with the SDK, field for field.
	paddle := build("paddle", Options{})
	for _, typ := range paddleSampleTypes {
		d := deliver(paddle, "evt_01hv8x2a5b9bf4yc3mj0c0ahqm", typ)
		add(sdkCase{ID: "paddle parses the " + typ + " sample", SDK: "paddle", Op: "parse",
			Secret: paddleSecret, Body: string(d.Body), Headers: lowerHeaders(d.Header),
			check: func(t *testing.T, r sdkResult) {
				sdkAccepts(t, r)
				require.Empty(t, r.Problems, "the sample's shape differs from the SDK's")
			}})
	}

	// Stripe and GitHub: one signature header over the body.
	for _, one := range []struct {
		name, sdk, id, typ, sigHeader string
	}{
		{"stripe", "stripe", "evt_1PqRsTuVwXyZ0123456789ab", "customer.subscription.created", StripeSignatureHeader},
		{"github", "octokit", "72d3162e-cc78-11e3-81ab-4c9367dc0958", "pull_request.opened", GitHubSignatureHeader},
	} {
		p := build(one.name, Options{})
		d := deliver(p, one.id, one.typ)
		secret := testSecrets[one.name][0]
		add(sdkCase{ID: one.sdk + " verifies the hub's signature", SDK: one.sdk, Op: "verify", Secret: secret,
			Body: string(d.Body), Headers: lowerHeaders(d.Header), check: sdkAccepts})
		add(sdkCase{ID: one.sdk + " signs, the hub verifies", SDK: one.sdk, Op: "sign", Secret: secret, Body: string(d.Body), Timestamp: now.Unix(),
			check: func(t *testing.T, r sdkResult) {
				sdkAccepts(t, r)
				signed := d
				signed.Header = d.Header.Clone()
				signed.Header.Set(one.sigHeader, r.Signature)
				_, err := verify(p, signed)
				require.NoError(t, err)
			}})
	}

	results := runSDK(t, cases)
	for _, c := range cases {
		t.Run(c.ID, func(t *testing.T) {
			r, ok := results[c.ID]
			require.True(t, ok, "no result")
			c.check(t, r)
		})
	}
}

// paddleSampleTypes are the Paddle event types whose data the samples
// model (paddleSampleData): each must parse with Paddle's SDK.
var paddleSampleTypes = []string{
	"subscription.created", "subscription.updated", "subscription.activated", "subscription.canceled",
	"subscription.paused", "subscription.resumed", "subscription.past_due", "subscription.trialing", "subscription.imported",
	"customer.created", "customer.updated", "customer.imported",
	"transaction.created", "transaction.updated", "transaction.ready", "transaction.billed", "transaction.paid",
	"transaction.completed", "transaction.canceled", "transaction.past_due", "transaction.payment_failed", "transaction.revised",
}
