package service_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/schema"
)

const (
	hardeningTwilioToken = "hookhub-twilio-hardening-test-token"
	hardeningPublicURL   = "https://hub.example.com"
)

// rawPost sends body to the hub with the request-target exactly as given
// (a net/http client would rewrite an absolute form, a '#' or a bare '?')
// and returns the status code.
func (h *testHub) rawPost(target string, hdr http.Header, body []byte) int {
	h.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	require.NoError(h.t, err)
	defer conn.Close()
	require.NoError(h.t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	var req strings.Builder
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: hub.example.com\r\nConnection: close\r\nContent-Length: %d\r\n", target, len(body))
	for name, values := range hdr {
		for _, v := range values {
			fmt.Fprintf(&req, "%s: %s\r\n", name, v)
		}
	}
	req.WriteString("\r\n")
	_, err = io.WriteString(conn, req.String())
	require.NoError(h.t, err)
	_, err = conn.Write(body)
	require.NoError(h.t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// twilioParams is what Twilio signs of a form: names and values, sorted.
func twilioParams(form url.Values) string {
	var b strings.Builder
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range form {
			if !yield(n) {
				return
			}
		}
	}) {
		for _, v := range slices.Sorted(slices.Values(form[name])) {
			b.WriteString(name + v)
		}
	}
	return b.String()
}

// twilioSign is Twilio's X-Twilio-Signature of a request to fullURL with
// form (nil for a JSON body).
func twilioSign(fullURL string, form url.Values) string {
	m := hmac.New(sha1.New, []byte(hardeningTwilioToken))
	m.Write([]byte(fullURL + twilioParams(form)))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

type rawDelivery struct {
	name   string
	target string
	header http.Header
	body   []byte
}

func twilioHeaders(sig, token, contentType string) http.Header {
	h := http.Header{}
	h.Set("X-Twilio-Signature", sig)
	h.Set("I-Twilio-Idempotency-Token", token)
	h.Set("Content-Type", contentType)
	return h
}

// twilioSplices returns genuine Twilio deliveries and, for each, splices
// that keep its signed string (the previous verifier accepted them with
// the genuine signature), plus URLs Twilio could have signed as such that
// the hub must refuse for their shape.
func twilioSplices(t *testing.T) (genuine, splices []rawDelivery) {
	evil := []byte(`{"MessageSid":"SM666","MessageStatus":"delivered","Body":"forged"}`)
	evilSum := sha256.Sum256(evil)
	evilHash := hex.EncodeToString(evilSum[:])
	form := url.Values{
		"AccountSid": {"ACf3a1b2c3d4e5f60718293a4b5c6d7e8f"}, "ApiVersion": {"2010-04-01"},
		"From": {"+14155550123"}, "To": {"+442071838750"},
		"MessageSid": {"SM0123456789abcdef0123456789abcdef"}, "SmsSid": {"SM0123456789abcdef0123456789abcdef"},
		"MessageStatus": {"delivered"}, "SmsStatus": {"delivered"}, "Body": {"Hi & welcome"},
	}
	smuggler := url.Values{
		"AccountSid": {"ACf3a1b2c3d4e5f60718293a4b5c6d7e8f"}, "From": {"+14155550123"}, "To": {"+442071838750"},
		"MessageSid": {"SM00000000000000000000000000000001"}, "SmsStatus": {"received"},
		"Body": {"x&bodySHA256=" + evilHash + "&z="},
	}
	jsonBody := []byte(`{"FlowSid":"FW0123","Status":"ended"}`)
	jsonSum := sha256.Sum256(jsonBody)
	jsonTarget := "/webhooks/twilio?type=studio.flow&bodySHA256=" + hex.EncodeToString(jsonSum[:])
	const formType = "application/x-www-form-urlencoded"

	type source struct {
		name, target, token string
		form                url.Values
	}
	sources := []source{
		{"status callback", "/webhooks/twilio?type=sms.status", "tok-status", form},
		{"SMS text with a bodySHA256", "/webhooks/twilio?type=sms.received", "tok-smuggle", smuggler},
		{"SMS text with a bodySHA256, no type", "/webhooks/twilio", "tok-bare", smuggler},
	}
	for _, s := range sources {
		sig := twilioSign(hardeningPublicURL+s.target, s.form)
		body := []byte(s.form.Encode())
		genuine = append(genuine, rawDelivery{s.name, s.target, twilioHeaders(sig, s.token, formType), body})
		x := strings.TrimPrefix(s.target, "/webhooks/twilio") + twilioParams(s.form)
		// Every fifth cut point, and the few around the query/form
		// boundary, moved across it; the form side as one parameter.
		qEnd := len(s.target) - len("/webhooks/twilio")
		for c := 1; c < len(x); c++ {
			if c%5 != 0 && (c < qEnd-3 || c > qEnd+3) {
				continue
			}
			if c == qEnd {
				continue // the genuine boundary
			}
			rest := x[c:]
			b := url.Values{rest[:1]: {rest[1:]}}.Encode()
			splices = append(splices, rawDelivery{fmt.Sprintf("%s, cut at %d", s.name, c), "/webhooks/twilio" + x[:c], twilioHeaders(sig, s.token, formType), []byte(b)})
		}
		// The whole signed suffix as the query, with a JSON body: the
		// smuggled bodySHA256.
		if strings.Contains(x, "bodySHA256=") {
			splices = append(splices, rawDelivery{s.name + ", smuggled bodySHA256", "/webhooks/twilio" + x, twilioHeaders(sig, s.token, "application/json"), evil})
		}
		if strings.Contains(s.target, "?") {
			splices = append(splices,
				rawDelivery{s.name + ", absolute form", "https://hub.example.com" + s.target, twilioHeaders(sig, s.token, formType), body},
				rawDelivery{s.name + ", trailing slash", strings.Replace(s.target, "twilio?", "twilio/?", 1), twilioHeaders(sig, s.token, formType), body})
		}
	}
	jsonSig := twilioSign(hardeningPublicURL+jsonTarget, nil)
	genuine = append(genuine, rawDelivery{"JSON", jsonTarget, twilioHeaders(jsonSig, "tok-json", "application/json"), jsonBody})
	jx := strings.TrimPrefix(jsonTarget, "/webhooks/twilio")
	for _, c := range []int{len("?type=studio"), len("?type=studio.flow"), len("?type=studio.flow&")} {
		rest := jx[c:]
		splices = append(splices, rawDelivery{fmt.Sprintf("JSON, cut at %d", c), "/webhooks/twilio" + jx[:c], twilioHeaders(jsonSig, "tok-json", formType), []byte(url.Values{rest[:1]: {rest[1:]}}.Encode())})
	}
	// URLs Twilio would sign as such: refused for their shape.
	for _, target := range []string{
		"/webhooks/twilio?type=sms.status&type=sms.status",
		"/webhooks/twilio?type=sms.status&foo=1",
		"/webhooks/twilio?%74ype=sms.status",
		"/webhooks/twilio?type=sms%2Estatus",
		"/webhooks/twilio?type=sms+status",
		"/webhooks/twilio?type=sms.Status",
		"/webhooks/twilio?",
		"/webhooks/twilio?type=sms.status#rc=2",
		"/webhooks/twilio?bodySHA256=" + hex.EncodeToString(jsonSum[:]) + "&type=studio.flow",
	} {
		f := form
		if strings.Contains(target, "bodySHA256") {
			f = nil
		}
		pathQuery, _, _ := strings.Cut(target, "#")
		sig := twilioSign(hardeningPublicURL+pathQuery, f)
		body := []byte(form.Encode())
		if f == nil {
			body = jsonBody
		}
		splices = append(splices, rawDelivery{"signed as such: " + target, target, twilioHeaders(sig, "tok-shape", formType), body})
	}
	require.Greater(t, len(splices), 100)
	return genuine, splices
}

// Every splice of a genuine Twilio delivery, posted to a real hub, is
// answered 401 and leaves nothing in the archive or the dedup table; the
// genuine deliveries, posted afterwards, are accepted.
func TestTwilioSplicesRefusedEndToEnd(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) {
		c.SetSecrets("twilio", hardeningTwilioToken)
		c.PublicURL = hardeningPublicURL
	})
	genuine, splices := twilioSplices(t)
	for _, s := range splices {
		// A splice that moved form bytes into the path of a URL without
		// query names another provider ("twilioAccountSid…"): the router
		// refuses it before any provider sees it.
		want := http.StatusUnauthorized
		if path, _, _ := strings.Cut(s.target, "?"); strings.HasPrefix(path, "/webhooks/twilio") && !slices.Contains([]string{"/webhooks/twilio", "/webhooks/twilio/"}, path) {
			want = http.StatusNotFound
		}
		require.Equal(t, want, h.rawPost(s.target, s.header, s.body), "%s: %s", s.name, s.target)
	}
	// A prefix the router does not mount: refused before any provider.
	require.Equal(t, http.StatusNotFound, h.rawPost("/hub/webhooks/twilio?type=sms.status", genuine[0].header, genuine[0].body))
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_event_status`), "archive rows after %d splices", len(splices))
	require.Zero(t, h.count(`SELECT count(*) FROM processed_webhook_events`), "dedup rows after %d splices", len(splices))

	for _, g := range genuine {
		require.Equal(t, http.StatusOK, h.rawPost(g.target, g.header, g.body), g.name)
	}
	require.Equal(t, len(genuine), h.count(`SELECT count(*) FROM webhook_event_status WHERE provider = 'twilio'`))
	h.waitPublished()
	ctx := context.Background()
	st, err := h.js.Stream(ctx, h.cfg.Stream)
	require.NoError(t, err)
	for _, subject := range []string{"twilio.sms.status", "twilio.sms.received", "twilio.message.received", "twilio.studio.flow"} {
		_, err := st.GetLastMsgForSubject(ctx, subject)
		require.NoError(t, err, subject)
	}
}

// With HUB_TWILIO_TYPES, only the listed types' URLs are accepted.
func TestTwilioTypesEndToEnd(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) {
		c.SetSecrets("twilio", hardeningTwilioToken)
		c.PublicURL = hardeningPublicURL
		c.TwilioTypes = []string{"sms.status", " call.status "}
	})
	form := url.Values{"AccountSid": {"AC1"}, "CallSid": {"CA1"}, "CallStatus": {"completed"}}
	body := []byte(form.Encode())
	post := func(target, token string) int {
		return h.rawPost(target, twilioHeaders(twilioSign(hardeningPublicURL+target, form), token, "application/x-www-form-urlencoded"), body)
	}
	require.Equal(t, http.StatusUnauthorized, post("/webhooks/twilio", "tok-1"), "no type to infer from")
	require.Equal(t, http.StatusUnauthorized, post("/webhooks/twilio?type=call.other", "tok-2"), "unlisted")
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_event_status`))
	require.Equal(t, http.StatusOK, post("/webhooks/twilio?type=call.status", "tok-3"))
	require.Equal(t, 1, h.count(`SELECT count(*) FROM webhook_event_status WHERE event_type = 'call.status'`))
}

func TestTwilioTypesConfig(t *testing.T) {
	t.Setenv("HUB_TWILIO_SECRETS", "token")
	t.Setenv("HUB_PUBLIC_URL", hardeningPublicURL)
	for _, bad := range []string{"sms.Status", "sms,,call", "sms.", "sms status", "sms/status"} {
		t.Setenv("HUB_TWILIO_TYPES", bad)
		_, err := service.LoadConfig()
		require.ErrorContains(t, err, "HUB_TWILIO_TYPES", bad)
	}
	t.Setenv("HUB_TWILIO_TYPES", "sms.status, call.status")
	cfg, err := service.LoadConfig()
	require.NoError(t, err)
	ps, err := cfg.Providers()
	require.NoError(t, err)
	require.Len(t, ps, 1)
	tw := ps[0].(*provider.Twilio)
	form := url.Values{"CallSid": {"CA1"}, "CallStatus": {"completed"}}
	for target, ok := range map[string]bool{"/webhooks/twilio?type=call.status": true, "/webhooks/twilio?type=sms.other": false, "/webhooks/twilio": false} {
		m := hmac.New(sha1.New, []byte("token"))
		m.Write([]byte(hardeningPublicURL + target + twilioParams(form)))
		hdr := http.Header{"X-Twilio-Signature": {base64.StdEncoding.EncodeToString(m.Sum(nil))}, "I-Twilio-Idempotency-Token": {"t1"}}
		_, err := tw.Verify(provider.Request{Header: hdr, Body: []byte(form.Encode()), URI: target, Now: time.Now()})
		require.Equal(t, ok, err == nil, "%s: %v", target, err)
	}
}

// Absurd provider times are dropped, never fatal: a Clerk timestamp of
// 1e16 ms (which Postgres cannot store: answered 503 forever before) and
// one of 3e14 ms (year 11476, which subscribers could not parse) are
// accepted and published without Hub-Occurred-At; so is a Stripe created
// of 3e11 s. A plausible time still travels.
func TestAbsurdOccurredAtEndToEnd(t *testing.T) {
	t.Parallel()
	const stripeSecret = "whsec_hardening_test_stripe"
	h := newTestHub(t, func(c *service.Config) { c.SetSecrets("stripe", stripeSecret) })
	clerk := h.sender("clerk")
	stripe := mustSender(t, "stripe", stripeSecret)
	now := time.Now()
	cases := []struct {
		name, provider, eventID, subject string
		body                             func() []byte
		wantOccurred                     bool
	}{
		{"clerk 1e16 ms", "clerk", "msg_absurd_1e16", "clerk.user.created", func() []byte { return clerkBodyAt(t, clerk, "msg_absurd_1e16", "1e16") }, false},
		{"clerk 3e14 ms", "clerk", "msg_absurd_3e14", "clerk.user.created", func() []byte { return clerkBodyAt(t, clerk, "msg_absurd_3e14", "3e14") }, false},
		{"clerk now", "clerk", "msg_plausible", "clerk.user.created", func() []byte { return clerkBodyAt(t, clerk, "msg_plausible", "now") }, true},
		{"stripe 3e11 s", "stripe", "evt_absurd_3e11", "stripe.customer.created", func() []byte {
			return []byte(`{"id":"evt_absurd_3e11","object":"event","type":"customer.created","created":300000000000,"data":{"object":{}}}`)
		}, false},
	}
	for _, c := range cases {
		body := c.body()
		s := clerk
		if c.provider == "stripe" {
			s = stripe
		}
		hdr, _, err := s.Sign(c.eventID, "", body, now)
		require.NoError(t, err)
		a := h.post(c.provider, hdr, body)
		require.Equal(t, http.StatusOK, a.status, "%s: %v", c.name, a.body)
	}
	h.waitPublished()
	ctx := context.Background()
	st, err := h.js.Stream(ctx, h.cfg.Stream)
	require.NoError(t, err)
	info, err := st.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, len(cases), info.State.Msgs)
	for seq := uint64(1); seq <= info.State.Msgs; seq++ {
		m, err := st.GetMsg(ctx, seq)
		require.NoError(t, err)
		md, err := schema.ParseMetadata(m.Header)
		require.NoError(t, err)
		var want bool
		for _, c := range cases {
			if c.eventID == md.EventID {
				want = c.wantOccurred
				require.Equal(t, c.subject, m.Subject)
			}
		}
		require.Equal(t, want, m.Header.Get(schema.HeaderOccurredAt) != "", "%s: Hub-Occurred-At %q", md.EventID, m.Header.Get(schema.HeaderOccurredAt))
		require.Equal(t, want, !md.OccurredAt.IsZero())
	}
	require.Equal(t, 3, h.count(`SELECT count(*) FROM webhook_event_status WHERE occurred_at IS NULL`))
}

// clerkBodyAt returns a Clerk user.created body whose timestamp is "now"
// or the given number of milliseconds.
func clerkBodyAt(t *testing.T, s provider.Signer, eventID, ms string) []byte {
	t.Helper()
	body, err := samples.Body(s.Name(), eventID, "user.created", nil, time.Now())
	require.NoError(t, err)
	if ms == "now" {
		return body
	}
	var obj map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &obj))
	var f float64
	_, err = fmt.Sscan(ms, &f)
	require.NoError(t, err)
	obj["timestamp"] = json.RawMessage(fmt.Sprintf("%.0f", f))
	out, err := json.Marshal(obj)
	require.NoError(t, err)
	return out
}

// Every provider, built from configuration as the hub builds it, delivers
// through HTTP to its subject; a retry is a duplicate; non-JSON bodies
// (Twilio's forms) are archived as queryable JSON with their exact bytes.
func TestEveryProviderEndToEnd(t *testing.T) {
	t.Parallel()
	configure := func(c *service.Config) {
		c.SetSecrets("paddle")
		c.SetSecrets("clerk")
		c.WithDevSecrets()
		c.PublicURL = "https://hub.example.com"
		c.StandardProviders = []string{"acme"}
		c.StandardSecrets = map[string][]string{"acme": {"whsec_aG9va2h1Yi1hY21lLXRlc3Qtc2VjcmV0LWtleQ=="}}
	}
	h := newTestHub(t, configure)
	cfg := h.cfg
	providers, err := cfg.Providers()
	require.NoError(t, err)
	cases := map[string]struct{ eventType, subject string }{
		"paddle":  {"subscription.created", "paddle.subscription.created"},
		"clerk":   {"user.created", "clerk.user.created"},
		"stripe":  {"customer.subscription.created", "stripe.customer.subscription.created"},
		"github":  {"pull_request.opened", "github.pull_request.opened"},
		"shopify": {"orders.create", "shopify.orders.create"},
		"twilio":  {"sms.status", "twilio.sms.status"},
		"acme":    {"contact.created", "acme.contact.created"},
	}
	require.Len(t, providers, len(cases))
	for _, p := range providers {
		c, ok := cases[p.Name()]
		require.True(t, ok, p.Name())
		s := p.(provider.Signer)
		eventID := "evt_all_" + p.Name()
		body, err := samples.Body(s.Name(), eventID, c.eventType, nil, time.Now())
		require.NoError(t, err, p.Name())
		for attempt := range 2 {
			hdr, target, err := s.Sign(eventID, c.eventType, body, time.Now())
			require.NoError(t, err)
			req, err := http.NewRequest(http.MethodPost, h.base+target, bytes.NewReader(body))
			require.NoError(t, err)
			req.Header = hdr
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", p.Name(), raw)
			var a struct {
				EventID    string `json:"event_id"`
				Idempotent bool   `json:"idempotent"`
			}
			require.NoError(t, json.Unmarshal(raw, &a))
			require.Equal(t, attempt == 1, a.Idempotent, p.Name())
			if attempt == 0 {
				eventID = a.EventID // Twilio without an idempotency token derives its own id
			}
		}
	}
	h.waitPublished()
	ctx := context.Background()
	st, err := h.js.Stream(ctx, schema.DefaultStream)
	require.NoError(t, err)
	for name, c := range cases {
		m, err := st.GetLastMsgForSubject(ctx, c.subject)
		require.NoError(t, err, "%s: no message on %s", name, c.subject)
		require.Equal(t, name, m.Header.Get("Hub-Provider"))
	}
	require.Len(t, h.streamMsgIDs(), len(cases))
	var payload string
	require.NoError(t, h.pool.QueryRow(ctx, `SELECT payload::text FROM webhook_event_status WHERE provider = 'twilio' AND processing_status = 'PROCESSED'`).Scan(&payload))
	require.NotContains(t, payload, "hub_unstorable_payload", "form bodies are archived as JSON")
}

func TestStandardProvidersConfig(t *testing.T) {
	t.Setenv("HUB_STANDARD_PROVIDERS", "resend,acme-corp")
	t.Setenv("HUB_STANDARD_RESEND_SECRETS", "whsec_aG9va2h1Yi1hY21lLXRlc3Qtc2VjcmV0LWtleQ==")
	_, err := service.LoadConfig()
	require.ErrorContains(t, err, "HUB_STANDARD_ACME_CORP_SECRETS")
	t.Setenv("HUB_STANDARD_ACME_CORP_SECRETS", "whsec_aG9va2h1Yi1hY21lLXRlc3Qtc2VjcmV0LWtleQ==")
	cfg, err := service.LoadConfig()
	require.NoError(t, err)
	ps, err := cfg.Providers()
	require.NoError(t, err)
	var names []string
	for _, p := range ps {
		names = append(names, p.Name())
	}
	require.Equal(t, []string{"acme-corp", "resend"}, names)

	t.Setenv("HUB_STANDARD_PROVIDERS", "stripe")
	_, err = service.LoadConfig()
	require.ErrorContains(t, err, "built-in provider")
	t.Setenv("HUB_STANDARD_PROVIDERS", "")
	t.Setenv("HUB_TWILIO_SECRETS", "token")
	_, err = service.LoadConfig()
	require.ErrorContains(t, err, "HUB_PUBLIC_URL")
}
