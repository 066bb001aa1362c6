package provider

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
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

const (
	twilioToken      = "c2b0d2a3-3f5e-4b8e-9a43-2b1f0e6d4c11"
	twilioTestTarget = "/webhooks/twilio?type=sms.status"
)

// twilioForm is a messaging status callback.
var twilioForm = url.Values{
	"AccountSid":    {"ACf3a1b2c3d4e5f60718293a4b5c6d7e8f"},
	"ApiVersion":    {"2010-04-01"},
	"From":          {"+14155550123"},
	"To":            {"+442071838750"},
	"MessageSid":    {"SM0123456789abcdef0123456789abcdef"},
	"SmsSid":        {"SM0123456789abcdef0123456789abcdef"},
	"MessageStatus": {"delivered"},
	"SmsStatus":     {"delivered"},
	"Body":          {"Hi & welcome: 100% ready? ü"},
}

func twilioHeader(sig, token string) http.Header {
	h := http.Header{}
	if sig != "" {
		h.Set("X-Twilio-Signature", sig)
	}
	if token != "" {
		h.Set("I-Twilio-Idempotency-Token", token)
	}
	return h
}

func TestNewTwilio(t *testing.T) {
	tests := []struct {
		name, public string
		secrets      []string
		wantErr      string
		wantPublic   string
	}{
		{"plain", "https://hub.example.com", []string{twilioSecret}, "", "https://hub.example.com"},
		{"trailing slash", "https://hub.example.com/", []string{twilioSecret}, "", "https://hub.example.com"},
		{"prefix and port", "http://hub.example.com:8080/hooks/", []string{twilioSecret, twilioOldSecret}, "", "http://hub.example.com:8080/hooks"},
		{"no public URL", "", []string{twilioSecret}, "twilio: no public URL configured: set it to the base URL Twilio calls, e.g. https://hub.example.com", ""},
		{"no scheme", "hub.example.com", []string{twilioSecret}, `twilio: public URL "hub.example.com" is not http or https`, ""},
		{"ftp", "ftp://hub.example.com", []string{twilioSecret}, `twilio: public URL "ftp://hub.example.com" is not http or https`, ""},
		{"no host", "https:///webhooks", []string{twilioSecret}, `twilio: public URL "https:///webhooks" has no host`, ""},
		{"query", "https://hub.example.com/?a=1", []string{twilioSecret}, `twilio: public URL "https://hub.example.com/?a=1" must not carry user info, a query or a fragment`, ""},
		{"empty query", "https://hub.example.com/?", []string{twilioSecret}, `twilio: public URL "https://hub.example.com/?" must not carry user info, a query or a fragment`, ""},
		{"fragment", "https://hub.example.com/#rc=2", []string{twilioSecret}, `twilio: public URL "https://hub.example.com/#rc=2" must not carry user info, a query or a fragment`, ""},
		{"user info", "https://u:p@hub.example.com", []string{twilioSecret}, `twilio: public URL "https://u:p@hub.example.com" must not carry user info, a query or a fragment`, ""},
		{"unparseable", "https://hub example.com", []string{twilioSecret}, `twilio: public URL: parse "https://hub example.com": invalid character " " in host name`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tw, err := NewTwilio(tt.secrets, Options{PublicURL: tt.public})
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.Nil(t, tw)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "twilio", tw.Name())
			require.Equal(t, tt.wantPublic, tw.PublicURL())
			require.Equal(t, tt.wantPublic+"/webhooks/twilio?type=sms.status", tw.WebhookURL("sms.status"))
		})
	}
}

func TestTwilioBases(t *testing.T) {
	tests := []struct {
		public string
		want   [2]string
	}{
		{"https://h.example.com", [2]string{"https://h.example.com", "https://h.example.com:443"}},
		{"http://h.example.com", [2]string{"http://h.example.com", "http://h.example.com:80"}},
		{"https://h.example.com:443", [2]string{"https://h.example.com:443", "https://h.example.com"}},
		{"https://h.example.com:8443/prefix/", [2]string{"https://h.example.com:8443/prefix", "https://h.example.com/prefix"}},
		{"http://[::1]:8080", [2]string{"http://[::1]:8080", "http://[::1]"}},
		{"https://h.example.com/a%2Fb", [2]string{"https://h.example.com/a%2Fb", "https://h.example.com:443/a%2Fb"}},
	}
	for _, tt := range tests {
		t.Run(tt.public, func(t *testing.T) {
			got, err := twilioBases(tt.public)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestTwilioVerify(t *testing.T) {
	body := []byte(twilioForm.Encode())
	full := testPublicURL + twilioTestTarget
	good := refTwilio(twilioSecret, full, twilioForm, false)

	jsonBody := []byte(`{"FlowSid":"FW0123","Status":"ended"}`)
	sum := sha256.Sum256(jsonBody)
	jsonTarget := "/webhooks/twilio?type=studio.flow&bodySHA256=" + hex.EncodeToString(sum[:])
	jsonSig := refTwilio(twilioSecret, testPublicURL+jsonTarget, nil, false)

	callForm := url.Values{"CallSid": {"CA0123"}, "CallStatus": {"completed"}, "Timestamp": {"Sun, 01 Jun 2025 12:30:45 +0000"}}
	repeated := "Digits=5678&CallSid=CA1&Digits=1234&Digits=1234"
	repeatedForm, err := url.ParseQuery(repeated)
	require.NoError(t, err)
	goStyle := refTwilio(twilioSecret, testPublicURL+twilioTestTarget, url.Values{"CallSid": {"CA1"}, "Digits": {"5678"}}, false)

	sha256Header := twilioHeader(refTwilio(twilioSecret, full, twilioForm, true), twilioToken)
	sha256Header.Set("X-Twilio-Webhooks-Signature-Settings", "key=KS0123,algorithm=HMAC_SHA256")

	tests := []struct {
		name     string
		secrets  []string
		public   string
		header   http.Header
		target   string
		body     []byte
		wantErr  string // "" for success
		wantID   string
		wantType string
		wantOcc  time.Time
	}{
		{"valid", []string{twilioSecret}, testPublicURL, twilioHeader(good, twilioToken), twilioTestTarget, body, "", twilioToken, "sms.status", time.Time{}},
		{"Twilio signed with the default port", []string{twilioSecret}, testPublicURL, twilioHeader(refTwilio(twilioSecret, "https://hub.example.com:443"+twilioTestTarget, twilioForm, false), twilioToken), twilioTestTarget, body, "", twilioToken, "sms.status", time.Time{}},
		{"port configured, Twilio signed without", []string{twilioSecret}, "https://hub.example.com:8443", twilioHeader(good, twilioToken), twilioTestTarget, body, "", twilioToken, "sms.status", time.Time{}},
		{"path prefix stripped by the proxy", []string{twilioSecret}, "https://example.com/hub", twilioHeader(refTwilio(twilioSecret, "https://example.com/hub"+twilioTestTarget, twilioForm, false), twilioToken), twilioTestTarget, body, "", twilioToken, "sms.status", time.Time{}},
		{"type inferred from a message", []string{twilioSecret}, testPublicURL, twilioHeader(refTwilio(twilioSecret, testPublicURL+"/webhooks/twilio", twilioForm, false), twilioToken), "/webhooks/twilio", body, "", twilioToken, "message.delivered", time.Time{}},
		{"id from the SID and status", []string{twilioSecret}, testPublicURL, twilioHeader(good, ""), twilioTestTarget, body, "", "SM0123456789abcdef0123456789abcdef:delivered", "sms.status", time.Time{}},
		{"call status callback", []string{twilioSecret}, testPublicURL, twilioHeader(refTwilio(twilioSecret, testPublicURL+"/webhooks/twilio", callForm, false), ""), "/webhooks/twilio", []byte(callForm.Encode()), "", "CA0123:completed", "call.completed", time.Date(2025, 6, 1, 12, 30, 45, 0, time.UTC)},
		{"webhooks rule: HMAC-SHA256", []string{twilioSecret}, testPublicURL, sha256Header, twilioTestTarget, body, "", twilioToken, "sms.status", time.Time{}},
		{"JSON body with bodySHA256", []string{twilioSecret}, testPublicURL, twilioHeader(jsonSig, twilioToken), jsonTarget, jsonBody, "", twilioToken, "studio.flow", time.Time{}},
		{"repeated keys, each distinct value signed once, sorted", []string{twilioSecret}, testPublicURL, twilioHeader(refTwilio(twilioSecret, testPublicURL+twilioTestTarget, repeatedForm, false), twilioToken), twilioTestTarget, []byte(repeated), "", twilioToken, "sms.status", time.Time{}},

		{"repeated keys signed twilio-go style (first value only)", []string{twilioSecret}, testPublicURL, twilioHeader(goStyle, twilioToken), twilioTestTarget, []byte(repeated), "invalid signature: X-Twilio-Signature matches no secret", "", "", time.Time{}},
		{"tampered parameter", []string{twilioSecret}, testPublicURL, twilioHeader(good, twilioToken), twilioTestTarget, []byte(strings.Replace(string(body), "delivered", "failed", 1)), "invalid signature: X-Twilio-Signature matches no secret", "", "", time.Time{}},
		{"added parameter", []string{twilioSecret}, testPublicURL, twilioHeader(good, twilioToken), twilioTestTarget, append(append([]byte(nil), body...), "&Extra=1"...), "invalid signature: X-Twilio-Signature matches no secret", "", "", time.Time{}},
		{"type changed in the query", []string{twilioSecret}, testPublicURL, twilioHeader(good, twilioToken), "/webhooks/twilio?type=call.status", body, "invalid signature: X-Twilio-Signature matches no secret", "", "", time.Time{}},
		{"query dropped", []string{twilioSecret}, testPublicURL, twilioHeader(good, twilioToken), "/webhooks/twilio", body, "invalid signature: X-Twilio-Signature matches no secret", "", "", time.Time{}},
		{"other host", []string{twilioSecret}, "https://evil.example.com", twilioHeader(good, twilioToken), twilioTestTarget, body, "invalid signature: X-Twilio-Signature matches no secret", "", "", time.Time{}},
		{"http instead of https", []string{twilioSecret}, "http://hub.example.com", twilioHeader(good, twilioToken), twilioTestTarget, body, "invalid signature: X-Twilio-Signature matches no secret", "", "", time.Time{}},
		{"JSON body tampered", []string{twilioSecret}, testPublicURL, twilioHeader(jsonSig, twilioToken), jsonTarget, []byte(`{"FlowSid":"FW0123","Status":"failed"}`), "invalid signature: body does not match the URL's bodySHA256", "", "", time.Time{}},
		{"bodySHA256 not hex", []string{twilioSecret}, testPublicURL, twilioHeader(refTwilio(twilioSecret, testPublicURL+"/webhooks/twilio?bodySHA256=zz", nil, false), twilioToken), "/webhooks/twilio?bodySHA256=zz", jsonBody, "invalid signature: bodySHA256 is not 64 lowercase hex digits", "", "", time.Time{}},
		{"bodySHA256 in upper case", []string{twilioSecret}, testPublicURL, twilioHeader(refTwilio(twilioSecret, testPublicURL+strings.ToUpper(jsonTarget), nil, false), twilioToken), "/webhooks/twilio?type=studio.flow&bodySHA256=" + strings.ToUpper(hex.EncodeToString(sum[:])), jsonBody, "invalid signature: bodySHA256 is not 64 lowercase hex digits", "", "", time.Time{}},
		{"absolute-form request-target", []string{twilioSecret}, testPublicURL, twilioHeader(good, twilioToken), "https://hub.example.com" + twilioTestTarget, body, "invalid signature: request-target is not /webhooks/twilio or /webhooks/twilio?<query> in origin form", "", "", time.Time{}},
		{"escaped type, signed as such", []string{twilioSecret}, testPublicURL, twilioHeader(refTwilio(twilioSecret, testPublicURL+"/webhooks/twilio?type=sms%2Estatus", twilioForm, false), twilioToken), "/webhooks/twilio?type=sms%2Estatus", body, "invalid signature: type is not lowercase tokens of [a-z0-9_-] separated by dots", "", "", time.Time{}},
		{"another query key, signed as such", []string{twilioSecret}, testPublicURL, twilioHeader(refTwilio(twilioSecret, testPublicURL+"/webhooks/twilio?x=1&type=sms.status", twilioForm, false), twilioToken), "/webhooks/twilio?x=1&type=sms.status", body, "invalid signature: query is not type=<type>, bodySHA256=<hash> or type=<type>&bodySHA256=<hash>", "", "", time.Time{}},
		{"type with a control character, signed as such", []string{twilioSecret}, testPublicURL, twilioHeader(refTwilio(twilioSecret, testPublicURL+"/webhooks/twilio?type=sms%0Astatus", twilioForm, false), twilioToken), "/webhooks/twilio?type=sms%0Astatus", body, "invalid signature: type is not lowercase tokens of [a-z0-9_-] separated by dots", "", "", time.Time{}},
		{"path prefix the proxy did not strip", []string{twilioSecret}, "https://example.com/hub", twilioHeader(refTwilio(twilioSecret, "https://example.com/hub"+twilioTestTarget, twilioForm, false), twilioToken), "/hub" + twilioTestTarget, body, "invalid signature: request-target is not /webhooks/twilio or /webhooks/twilio?<query> in origin form", "", "", time.Time{}},
		{"SHA-256 MAC without the settings header", []string{twilioSecret}, testPublicURL, twilioHeader(refTwilio(twilioSecret, full, twilioForm, true), twilioToken), twilioTestTarget, body, "invalid signature: X-Twilio-Signature is not the standard base64 of a MAC of the named algorithm", "", "", time.Time{}},
		{"form not well-formed", []string{twilioSecret}, testPublicURL, twilioHeader(good, twilioToken), twilioTestTarget, []byte("Body=%zz"), "invalid signature: body is not a well-formed form", "", "", time.Time{}},
		{"request-target not a path", []string{twilioSecret}, testPublicURL, twilioHeader(good, twilioToken), "*", body, "invalid signature: request-target is not /webhooks/twilio or /webhooks/twilio?<query> in origin form", "", "", time.Time{}},
		{"missing header", []string{twilioSecret}, testPublicURL, twilioHeader("", twilioToken), twilioTestTarget, body, "invalid signature: missing X-Twilio-Signature header", "", "", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tw, err := NewTwilio(tt.secrets, Options{PublicURL: tt.public})
			require.NoError(t, err)
			// No timestamp: the verdict holds at any time.
			for _, now := range []time.Time{{}, time.Unix(1700000000, 0), time.Unix(4000000000, 0)} {
				ev, err := tw.Verify(Request{Header: tt.header, Body: tt.body, URI: tt.target, Now: now})
				if tt.wantErr != "" {
					require.ErrorIs(t, err, ErrInvalidSignature)
					require.EqualError(t, err, tt.wantErr)
					require.Equal(t, Event{}, ev)
					continue
				}
				require.NoError(t, err)
				require.Equal(t, tt.wantID, ev.ID)
				require.Equal(t, tt.wantType, ev.Type)
				require.Equal(t, tt.header.Get("X-Twilio-Signature"), ev.Signature)
				require.True(t, ev.SignedAt.IsZero())
				require.True(t, tt.wantOcc.Equal(ev.OccurredAt), "OccurredAt %v", ev.OccurredAt)
			}
		})
	}

	t.Run("a request without its URI fails", func(t *testing.T) {
		tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
		require.NoError(t, err)
		_, err = tw.Verify(Request{Header: twilioHeader(good, twilioToken), Body: body, Now: time.Time{}})
		require.ErrorIs(t, err, ErrInvalidSignature)
		require.ErrorIs(t, err, errTwilioBadPath)
	})
}

func TestTwilioMalformedHeaders(t *testing.T) {
	body := []byte(twilioForm.Encode())
	full := testPublicURL + twilioTestTarget
	good := refTwilio(twilioSecret, full, twilioForm, false)
	mac, err := base64.StdEncoding.DecodeString(good)
	require.NoError(t, err)
	last := strings.IndexByte(base64Alphabet, good[len(good)-2])
	nonCanonical := good[:len(good)-2] + string(base64Alphabet[last^1]) + "="
	const malformed = "X-Twilio-Signature is not the standard base64 of a MAC of the named algorithm"
	const badSettings = "X-Twilio-Webhooks-Signature-Settings names no supported algorithm"
	tests := []struct{ name, sig, settings, wantDetail string }{
		{"hex", hex.EncodeToString(mac), "", malformed},
		{"unpadded", strings.TrimSuffix(good, "="), "", malformed},
		{"non-canonical padding bits", nonCanonical, "", malformed},
		{"19 bytes", base64.StdEncoding.EncodeToString(mac[:19]), "", malformed},
		{"trailing space", good + " ", "", malformed},
		{"SHA-1 MAC under HMAC_SHA256", good, "algorithm=HMAC_SHA256", malformed},
		{"unknown algorithm", good, "key=KS1,algorithm=HMAC_SHA512", badSettings},
		{"two algorithms", good, "algorithm=HMAC_SHA1,algorithm=HMAC_SHA256", badSettings},
		{"algorithm without value", good, "algorithm", badSettings},
		{"explicit HMAC_SHA1, junk MAC", base64.StdEncoding.EncodeToString(make([]byte, 20)), "algorithm=HMAC_SHA1", "X-Twilio-Signature matches no secret"},
	}
	tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := twilioHeader(tt.sig, twilioToken)
			if tt.settings != "" {
				h.Set("X-Twilio-Webhooks-Signature-Settings", tt.settings)
			}
			requireInvalidSignature(t, tw, Request{Header: h, Body: body, URI: twilioTestTarget}, tt.wantDetail)
		})
	}
}

func TestParseTwilioSettings(t *testing.T) {
	tests := []struct {
		header string
		want   twilioAlgorithm
		ok     bool
	}{
		{"", twilioSHA1, true},
		{"key=KS0123", twilioSHA1, true},
		{"algorithm=HMAC_SHA1", twilioSHA1, true},
		{"key=KS0123,algorithm=HMAC_SHA256", twilioSHA256, true},
		{" key=KS0123 , algorithm=hmac_sha256 ", twilioSHA256, true},
		{"ALGORITHM=HMAC_SHA256", twilioSHA256, true},
		{"algorithm=HMAC-SHA256", 0, false},
		{"algorithm=", 0, false},
		{"algorithm=HMAC_SHA256,algorithm=HMAC_SHA256", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			alg, ok := parseTwilioSettings(tt.header)
			require.Equal(t, tt.ok, ok)
			if ok {
				require.Equal(t, tt.want, alg)
			}
		})
	}
}

func TestTwilioEvent(t *testing.T) {
	tests := []struct {
		name, target, token string
		form                url.Values
		wantErr             string
		wantID, wantType    string
	}{
		{"token and type", twilioTestTarget, twilioToken, twilioForm, "", twilioToken, "sms.status"},
		{"SmsSid only", "/webhooks/twilio", "", url.Values{"SmsSid": {"SM1"}, "SmsStatus": {"received"}}, "", "SM1:received", "message.received"},
		{"MessageSid without status", "/webhooks/twilio", "", url.Values{"MessageSid": {"SM1"}}, "", "SM1", "message"},
		{"call without status", "/webhooks/twilio", "", url.Values{"CallSid": {"CA1"}}, "", "CA1", "call"},
		{"in-progress call", "/webhooks/twilio", "", url.Values{"CallSid": {"CA1"}, "CallStatus": {"in-progress"}}, "", "CA1:in-progress", "call.in-progress"},
		{"type from the URL wins", "/webhooks/twilio?type=voice.gather", "", url.Values{"CallSid": {"CA1"}, "CallStatus": {"in-progress"}, "Digits": {"1"}}, "", "CA1:in-progress", "voice.gather"},
		{"type with digits, '_' and '-'", "/webhooks/twilio?type=voice2.no-answer_cb", twilioToken, twilioForm, "", twilioToken, "voice2.no-answer_cb"},
		{"no id", twilioTestTarget, "", url.Values{"AccountSid": {"AC1"}}, "invalid payload: no I-Twilio-Idempotency-Token header and no MessageSid, SmsSid or CallSid parameter", "", ""},
		{"no type", "/webhooks/twilio", twilioToken, url.Values{"AccountSid": {"AC1"}}, "invalid payload: no event type: add ?type=<type> to the webhook URL configured in Twilio", "", ""},
		{"token too long", twilioTestTarget, strings.Repeat("t", 256), twilioForm, "invalid payload: event id is longer than 255 bytes", "", ""},
		{"SID with a control character", "/webhooks/twilio", "", url.Values{"CallSid": {"CA\x01"}}, "invalid payload: event id contains control characters", "", ""},
	}
	tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := twilioHeader(refTwilio(twilioSecret, testPublicURL+tt.target, tt.form, false), tt.token)
			ev, err := tw.Verify(Request{Header: h, Body: []byte(tt.form.Encode()), URI: tt.target})
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrPayload)
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantID, ev.ID)
			require.Equal(t, tt.wantType, ev.Type)
		})
	}
}

func TestTwilioPayloadJSON(t *testing.T) {
	tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
	require.NoError(t, err)
	tests := []struct{ name, body, want, wantErr string }{
		{"form", "CallSid=CA1&From=%2B14155550123&Body=a+b", `{"Body":"a b","CallSid":"CA1","From":"+14155550123"}`, ""},
		{"repeated key", "Digits=5&Digits=1&CallSid=CA1", `{"CallSid":"CA1","Digits":["5","1"]}`, ""},
		{"empty value", "ToCity=&CallSid=CA1", `{"CallSid":"CA1","ToCity":""}`, ""},
		{"empty body", "", `{}`, ""},
		{"JSON body", `{"FlowSid":"FW1"}`, `{"FlowSid":"FW1"}`, ""},
		{"JSON array", ` [1]`, ` [1]`, ""},
		{"names that are not UTF-8 stay distinct", "%FF=1&%D1=2&%25FF=3&%C3%BC=4", `{"%25FF":"3","%D1":"2","%FF":"1","ü":"4"}`, ""},
		{"bad escape", "Body=%zz", "", `invalid payload: body is neither JSON nor a form: invalid URL escape "%zz"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tw.PayloadJSON([]byte(tt.body))
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrPayload)
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
			require.True(t, json.Valid(got))
		})
	}
}

func TestTwilioSampleSign(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 30, 45, 0, time.UTC)
	tw, err := NewTwilio([]string{twilioSecret, twilioOldSecret}, Options{PublicURL: testPublicURL})
	require.NoError(t, err)
	tests := []struct {
		eventType, wantSidParam, wantStatusParam, wantStatus, wantInferred string
	}{
		{"message.received", "MessageSid", "SmsStatus", "received", "message.received"},
		{"message.delivered", "MessageSid", "MessageStatus", "delivered", "message.delivered"},
		{"message.failed", "MessageSid", "MessageStatus", "failed", "message.failed"},
		{"sms.status", "MessageSid", "SmsStatus", "received", "message.received"},
		{"call.ringing", "CallSid", "CallStatus", "ringing", "call.ringing"},
		{"call.completed", "CallSid", "CallStatus", "completed", "call.completed"},
		{"voice.incoming", "CallSid", "CallStatus", "ringing", "call.ringing"},
	}
	for _, tt := range tests {
		t.Run(tt.eventType, func(t *testing.T) {
			const id = "evt_0123456789abcdef"
			body := deterministicSample(t, tw.Name(), id, tt.eventType, now)
			form, err := url.ParseQuery(string(body))
			require.NoError(t, err)
			require.Regexp(t, `^(SM|CA)[0-9a-f]{32}$`, form.Get(tt.wantSidParam))
			require.Regexp(t, `^AC[0-9a-f]{32}$`, form.Get("AccountSid"))
			require.Equal(t, tt.wantStatus, form.Get(tt.wantStatusParam))
			require.Greater(t, len(body), 550)

			// Sign: no query, the type is inferred from the parameters.
			h, _, err := tw.Sign(id, "", body, now)
			require.NoError(t, err)
			require.Equal(t, refTwilio(twilioSecret, testPublicURL+"/webhooks/twilio", form, false), h.Get("X-Twilio-Signature"))
			require.Equal(t, "application/x-www-form-urlencoded", h.Get("Content-Type"))
			ev, err := tw.Verify(Request{Header: h, Body: body, URI: "/webhooks/twilio"})
			require.NoError(t, err)
			require.Equal(t, id, ev.ID)
			require.Equal(t, tt.wantInferred, ev.Type)

			// Sign with a type: the type travels in the signed URL.
			h, target, err := tw.Sign(id, tt.eventType, body, now)
			require.NoError(t, err)
			require.Equal(t, "/webhooks/twilio?type="+tt.eventType, target)
			require.Equal(t, testPublicURL+target, tw.WebhookURL(tt.eventType))
			ev, err = tw.Verify(Request{Header: h, Body: body, URI: target})
			require.NoError(t, err)
			checkEntities(t, ev.Entities) // their values: TestEntitiesOfSamples
			require.Equal(t, Event{ID: id, Type: tt.eventType, Signature: h.Get("X-Twilio-Signature"), OccurredAt: ev.OccurredAt, Entities: ev.Entities}, ev)

			other, err := NewTwilio([]string{twilioOldSecret}, Options{PublicURL: testPublicURL})
			require.NoError(t, err)
			_, err = other.Verify(Request{Header: h, Body: body, URI: target})
			require.ErrorIs(t, err, ErrInvalidSignature)
		})
	}
	t.Run("JSON body", func(t *testing.T) {
		body := []byte(`{"FlowSid":"FW1","ExecutionSid":"FN1","Status":"ended"}`)
		_, _, err := tw.Sign("evt_1", "", body, now)
		require.EqualError(t, err, "twilio: a JSON body is signed with its bodySHA256 in the URL: sign it with an event type")
		h, target, err := tw.Sign("evt_1", "studio.execution", body, now)
		require.NoError(t, err)
		sum := sha256.Sum256(body)
		require.Equal(t, "/webhooks/twilio?type=studio.execution&bodySHA256="+hex.EncodeToString(sum[:]), target)
		require.Equal(t, "application/json", h.Get("Content-Type"))
		ev, err := tw.Verify(Request{Header: h, Body: body, URI: target})
		require.NoError(t, err)
		require.Equal(t, "studio.execution", ev.Type)
		payload, err := tw.PayloadJSON(body)
		require.NoError(t, err)
		require.Equal(t, body, payload)
	})
	t.Run("given data", func(t *testing.T) {
		body, err := samples.Body(tw.Name(), "evt_1", "message.received", []byte(`{"Body":"STOP","NumMedia":1,"SmsStatus":null,"Flag":true}`), now)
		require.NoError(t, err)
		form, err := url.ParseQuery(string(body))
		require.NoError(t, err)
		require.Equal(t, "STOP", form.Get("Body"))
		require.Equal(t, "1", form.Get("NumMedia"))
		require.Equal(t, "true", form.Get("Flag"))
		require.NotContains(t, form, "SmsStatus")
		for _, data := range []string{`nope`, `[]`, `{"a":{"b":1}}`, `{"a":[1]}`} {
			_, err := samples.Body(tw.Name(), "evt_1", "message.received", []byte(data), now)
			require.Error(t, err, data)
		}
	})
	t.Run("invalid input", func(t *testing.T) {
		_, err := samples.Body(tw.Name(), "", "message.received", nil, now)
		require.Error(t, err)
		_, _, err = tw.Sign("", "", []byte("a=b"), now)
		require.Error(t, err)
		_, _, err = tw.Sign("evt_1", "Message.Sent", []byte("a=b"), now)
		require.Error(t, err)
		_, _, err = tw.Sign("evt_1", "", []byte("a=%zz"), now)
		require.Error(t, err)
	})
}

// Twilio's official helper (twilio-node's validateRequest) signs each
// distinct value of a repeated parameter once, the distinct values sorted:
// "Tag=a1&Tag=a1" signs as "Taga1". The signed strings here are written
// out by hand, not by the reference the other tests share.
func TestTwilioRepeatedValues(t *testing.T) {
	tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
	require.NoError(t, err)
	base := testPublicURL + twilioTestTarget
	sig := func(signed string) string {
		m := hmac.New(sha1.New, []byte(twilioSecret))
		m.Write([]byte(base + signed))
		return base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	for _, tt := range []struct {
		name, body, signed string
		ok                 bool
	}{
		{"a value repeated", "MessageSid=SM1&Tag=a1&Tag=a1", "MessageSidSM1Taga1", true},
		{"a value repeated, signed every time (the hub before)", "MessageSid=SM1&Tag=a1&Tag=a1", "MessageSidSM1Taga1Taga1", false},
		{"distinct values, sorted, each once", "Tag=b&MessageSid=SM1&Tag=a&Tag=b", "MessageSidSM1TagaTagb", true},
		{"distinct values in the order received", "Tag=b&MessageSid=SM1&Tag=a&Tag=b", "MessageSidSM1TagbTaga", false},
		// JavaScript sorts by UTF-16 code units: U+1F600 (a surrogate
		// pair, 0xD83D 0xDE00) before U+FF01, unlike byte order.
		{"values in UTF-16 order", "MessageSid=SM1&V=%EF%BC%81&V=%F0%9F%98%80", "MessageSidSM1V\U0001F600V\uFF01", true},
		{"values in byte order", "MessageSid=SM1&V=%EF%BC%81&V=%F0%9F%98%80", "MessageSidSM1V\uFF01V\U0001F600", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := Request{Header: twilioHeader(sig(tt.signed), twilioToken), Body: []byte(tt.body), URI: twilioTestTarget}
			ev, err := tw.Verify(r)
			if !tt.ok {
				require.ErrorIs(t, err, ErrInvalidSignature)
				return
			}
			require.NoError(t, err)
			require.Equal(t, twilioToken, ev.ID)
			// Sign agrees with Verify.
			h, target, err := tw.Sign(twilioToken, "sms.status", []byte(tt.body), time.Time{})
			require.NoError(t, err)
			require.Equal(t, twilioTestTarget, target)
			require.Equal(t, sig(tt.signed), h.Get(TwilioSignatureHeader))
		})
	}
}

func TestCompareUTF16(t *testing.T) {
	ordered := []string{"", "A", "AB", "B", "a", "\u00e9", "\u20ac", "\U0001F600", "\U0001F601", "\uE000", "\uFF01", "\uFFFD", "\xff", "\uFFFDA"}
	for i, a := range ordered {
		for j, b := range ordered {
			// "\xff" reads as U+FFFD, then sorts after it by its bytes.
			require.Equal(t, cmp.Compare(i, j), compareUTF16(a, b), "%q vs %q", a, b)
		}
	}
	// A string that ends inside a character decodes as U+FFFD.
	require.Equal(t, 1, compareUTF16("\xe2\x82", "\u20ac"))
	require.Equal(t, -1, compareUTF16("\u20ac", "\xe2\x82"))
}
