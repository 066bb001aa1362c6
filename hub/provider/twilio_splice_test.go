package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
)

func TestValidTwilioType(t *testing.T) {
	tests := []struct {
		typ  string
		want bool
	}{
		{"sms", true},
		{"sms.status", true},
		{"voice.no-answer", true},
		{"message.partially_delivered", true},
		{"a.b.c.d", true},
		{"2fa.sent", true},
		{"-", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{".sms", false},
		{"sms.", false},
		{"sms..status", false},
		{".", false},
		{"sms.Status", false},
		{"SMS", false},
		{"sms.statusMessageSidSM1", false},
		{"sms status", false},
		{"sms+status", false},
		{"sms%2Estatus", false},
		{"sms&bodySHA256=x", false},
		{"sms=x", false},
		{"sms/status", false},
		{"sms*", false},
		{"sms>", false},
		{"sms\nstatus", false},
		{"sms\x00", false},
		{"smś", false},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			require.Equal(t, tt.want, ValidTwilioType(tt.typ))
		})
	}
}

func TestParseTwilioTarget(t *testing.T) {
	h := strings.Repeat("0123456789abcdef", 4)
	tests := []struct {
		uri     string
		want    twilioQuery
		wantErr error
	}{
		{"/webhooks/twilio", twilioQuery{}, nil},
		{"/webhooks/twilio?type=sms.status", twilioQuery{typ: "sms.status"}, nil},
		{"/webhooks/twilio?bodySHA256=" + h, twilioQuery{bodyHash: h}, nil},
		{"/webhooks/twilio?type=studio.flow&bodySHA256=" + h, twilioQuery{typ: "studio.flow", bodyHash: h}, nil},

		{"", twilioQuery{}, errTwilioBadPath},
		{"*", twilioQuery{}, errTwilioBadPath},
		{"/", twilioQuery{}, errTwilioBadPath},
		{"/webhooks/twilio/", twilioQuery{}, errTwilioBadPath},
		{"/webhooks/twilio/?type=sms", twilioQuery{}, errTwilioBadPath},
		{"/webhooks/twilioAccountSid", twilioQuery{}, errTwilioBadPath},
		{"/webhooks/twilio#x", twilioQuery{}, errTwilioBadPath},
		{"//webhooks/twilio", twilioQuery{}, errTwilioBadPath},
		{"/hub/webhooks/twilio?type=sms", twilioQuery{}, errTwilioBadPath},
		{"/webhooks/%74wilio?type=sms", twilioQuery{}, errTwilioBadPath},
		{"/WEBHOOKS/twilio?type=sms", twilioQuery{}, errTwilioBadPath},
		{"/webhooks/x/../twilio?type=sms", twilioQuery{}, errTwilioBadPath},
		{"https://hub.example.com/webhooks/twilio?type=sms", twilioQuery{}, errTwilioBadPath},

		{"/webhooks/twilio?", twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?&", twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?&type=sms", twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?type=sms&", twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?type=sms&type=sms", twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?type=sms&foo=1", twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?foo=1&type=sms", twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?foo=1&bar=2", twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?%74ype=sms", twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?TYPE=sms", twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?type", twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?type=sms#frag", twilioQuery{}, errTwilioBadType},
		{"/webhooks/twilio?type=", twilioQuery{}, errTwilioBadType},
		{"/webhooks/twilio?type=sms%2Estatus", twilioQuery{}, errTwilioBadType},
		{"/webhooks/twilio?type=sms+status", twilioQuery{}, errTwilioBadType},
		{"/webhooks/twilio?type=sms.statusMessageSidSM1", twilioQuery{}, errTwilioBadType},
		{"/webhooks/twilio?type=sms=x", twilioQuery{}, errTwilioBadType},
		{"/webhooks/twilio?bodySHA256=" + h + "&type=sms", twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?type=sms&bodySHA256=" + h + "&bodySHA256=" + h, twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?type=sms&bodySHA256=" + h + "&", twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?type=sms&bodySHA256=" + h + "#", twilioQuery{}, errTwilioBadHash},
		{"/webhooks/twilio?type=sms&bodySHA256=" + strings.ToUpper(h), twilioQuery{}, errTwilioBadHash},
		{"/webhooks/twilio?bodySHA256=" + h[:63], twilioQuery{}, errTwilioBadHash},
		{"/webhooks/twilio?bodySHA256=" + h + "0", twilioQuery{}, errTwilioBadHash},
		{"/webhooks/twilio?bodySHA256=", twilioQuery{}, errTwilioBadHash},
		{"/webhooks/twilio?bodysha256=" + h, twilioQuery{}, errTwilioBadQuery},
		{"/webhooks/twilio?bodySHA256%3D" + h, twilioQuery{}, errTwilioBadQuery},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			q, err := parseTwilioTarget(tt.uri)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorIs(t, err, ErrInvalidSignature)
				require.Equal(t, twilioQuery{}, q)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, q)
		})
	}
}

// twilioSigned returns headers signing body (a form, or JSON when target
// carries bodySHA256) for a request to public+target, with an idempotency
// token.
func twilioSigned(public, target string, body []byte) http.Header {
	var form url.Values
	if !strings.Contains(target, "bodySHA256=") {
		var err error
		if form, err = url.ParseQuery(string(body)); err != nil {
			panic(err)
		}
	}
	return twilioHeader(refTwilio(twilioSecret, public+target, form, false), twilioToken)
}

// With Types configured, the hub accepts exactly their webhook URLs.
func TestTwilioTypes(t *testing.T) {
	_, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL, TwilioTypes: []string{"sms.status", "SMS"}})
	require.EqualError(t, err, `twilio: type "SMS" is not lowercase tokens of [a-z0-9_-] separated by dots`)
	_, err = NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL, TwilioTypes: []string{""}})
	require.Error(t, err)
	p, err := New("twilio", []string{twilioSecret}, Options{PublicURL: testPublicURL, TwilioTypes: []string{"x y"}})
	require.Error(t, err)
	require.Nil(t, p)

	tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL, TwilioTypes: []string{"sms.status", "studio.flow"}})
	require.NoError(t, err)
	form := []byte(twilioForm.Encode())
	jsonBody := []byte(`{"FlowSid":"FW1"}`)
	sum := sha256.Sum256(jsonBody)
	hash := hex.EncodeToString(sum[:])
	tests := []struct {
		name, target string
		body         []byte
		wantErr      error
	}{
		{"listed type", "/webhooks/twilio?type=sms.status", form, nil},
		{"listed type, JSON body", "/webhooks/twilio?type=studio.flow&bodySHA256=" + hash, jsonBody, nil},
		{"unlisted type", "/webhooks/twilio?type=sms.other", form, errTwilioTypeUnknown},
		{"a listed type's prefix", "/webhooks/twilio?type=sms", form, errTwilioTypeUnknown},
		{"no type: nothing to infer from", "/webhooks/twilio", form, errTwilioTypeMissing},
		{"no type, JSON body", "/webhooks/twilio?bodySHA256=" + hash, jsonBody, errTwilioTypeMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := tw.Verify(Request{Header: twilioSigned(testPublicURL, tt.target, tt.body), Body: tt.body, URI: tt.target})
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorIs(t, err, ErrInvalidSignature)
				return
			}
			require.NoError(t, err)
			typ, _, _ := strings.Cut(strings.TrimPrefix(tt.target, "/webhooks/twilio?type="), "&")
			require.Equal(t, typ, ev.Type)
		})
	}
}

// The form's first name in byte order must start with an upper-case
// letter, as Twilio's always do; other names are free (the Voice SDK
// passes an app's own parameters, SIP headers arrive as SipHeader_X-…).
func TestTwilioFormNames(t *testing.T) {
	tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
	require.NoError(t, err)
	tests := []struct {
		name, body string
		wantErr    error
	}{
		{"Twilio's names", twilioForm.Encode(), nil},
		{"custom lower-case parameters after Twilio's", "CallSid=CA1&CallStatus=ringing&agent_id=7&to=%2B1555", nil},
		{"SIP header parameter", "CallSid=CA1&SipHeader_X-Custom=1", nil},
		{"empty form", "", nil},
		{"a lower-case name sorts after Twilio's", "accountSid=AC1&CallSid=CA1", nil},
		{"only lower-case names", "callsid=CA1", errTwilioFirstName},
		{"first name a digit", "1=x&CallSid=CA1", errTwilioFirstName},
		{"first name empty", "=x&CallSid=CA1", errTwilioFirstName},
		{"first name '&' (escaped)", "%26=x&CallSid=CA1", errTwilioFirstName},
		{"first name '?'", "%3F=x&CallSid=CA1", errTwilioFirstName},
		{"first name a space", "+x=1&CallSid=CA1", errTwilioFirstName},
		{"not a form", `{"CallSid":"CA1"}`, errTwilioFirstName},
		{"bad escape", "CallSid=%zz", errTwilioBadForm},
		{"semicolon", "CallSid=CA1;x=1", errTwilioBadForm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const target = "/webhooks/twilio?type=call.status"
			form, _ := url.ParseQuery(tt.body)
			h := twilioHeader(refTwilio(twilioSecret, testPublicURL+target, form, false), twilioToken)
			ev, err := tw.Verify(Request{Header: h, Body: []byte(tt.body), URI: target})
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorIs(t, err, ErrInvalidSignature)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "call.status", ev.Type)
		})
	}
}

// An inferred type must be lowercase tokens like every Twilio status: a
// status that swallowed the next parameter's name is refused.
func TestTwilioInferredType(t *testing.T) {
	tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
	require.NoError(t, err)
	tests := []struct {
		name     string
		form     url.Values
		wantType string
		wantErr  error
	}{
		{"message status", url.Values{"MessageSid": {"SM1"}, "MessageStatus": {"partially_delivered"}}, "message.partially_delivered", nil},
		{"call status", url.Values{"CallSid": {"CA1"}, "CallStatus": {"no-answer"}}, "call.no-answer", nil},
		{"status that swallowed a name", url.Values{"CallSid": {"CA1"}, "CallStatus": {"completedTo+1555"}}, "", errTwilioBadStatus},
		{"status with a dot", url.Values{"CallSid": {"CA1"}, "CallStatus": {"completed.x"}}, "call.completed.x", nil},
		{"empty status token", url.Values{"CallSid": {"CA1"}, "CallStatus": {".x"}}, "", errTwilioBadStatus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := twilioHeader(refTwilio(twilioSecret, testPublicURL+TwilioPath, tt.form, false), "")
			ev, err := tw.Verify(Request{Header: h, Body: []byte(tt.form.Encode()), URI: TwilioPath})
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorIs(t, err, ErrInvalidSignature)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantType, ev.Type)
		})
	}
}

// twilioGenuine is a delivery as Twilio signs it.
type twilioGenuine struct {
	name     string
	public   string
	target   string     // origin form, as Twilio requests it
	body     []byte     // as Twilio sends it
	form     url.Values // nil for a JSON body
	wantType string
}

func (g twilioGenuine) header() http.Header {
	return twilioHeader(refTwilio(twilioSecret, g.public+g.target, g.form, false), twilioToken)
}

// legacyTwilioSigned is the string the hub's previous verifier (and the
// SDKs, handed the received URL) checked a request against: the public URL
// followed by whatever path and query the request carried (the path on,
// for an absolute-form target), then the form's sorted parameters, unless
// the query, parsed leniently, held a bodySHA256 that the body hashes to.
// ok is false when the request could not have passed at all.
func legacyTwilioSigned(public, target string, body []byte) (string, bool) {
	pathQuery := target
	if !strings.HasPrefix(target, "/") {
		_, rest, ok := strings.Cut(target, "://")
		if !ok {
			return "", false
		}
		switch i := strings.IndexAny(rest, "/?"); {
		case i < 0:
			pathQuery = "/"
		case rest[i] == '?':
			pathQuery = "/" + rest[i:]
		default:
			pathQuery = rest[i:]
		}
	}
	_, rawQuery, _ := strings.Cut(pathQuery, "?")
	query, _ := url.ParseQuery(rawQuery)
	if hashes, ok := query["bodySHA256"]; ok {
		sum := sha256.Sum256(body)
		return public + pathQuery, strings.EqualFold(hashes[0], hex.EncodeToString(sum[:]))
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return "", false
	}
	return refTwilioSigned(public+pathQuery, form), true
}

// twilioPair is one form parameter, in signed order.
type twilioPair struct{ name, value string }

// sortedPairs returns form's parameters in the order Twilio signs them.
func sortedPairs(form url.Values) []twilioPair {
	var out []twilioPair
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range form {
			if !yield(n) {
				return
			}
		}
	}) {
		for _, v := range slices.Sorted(slices.Values(form[name])) {
			out = append(out, twilioPair{name, v})
		}
	}
	return out
}

// encodePairs form-encodes pairs in their order, repeats kept.
func encodePairs(pairs []twilioPair) []byte {
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(p.name) + "=" + url.QueryEscape(p.value))
	}
	return []byte(b.String())
}

// twilioSpliceVariants returns requests (target and body) that keep the
// signed string of g, built by moving bytes across every boundary: every
// cut point of the part after the mount path, moved across the query/form
// boundary in both directions, with the form side re-split three ways
// (one parameter named by its first byte, one parameter named by all of
// it, or the cut piece as a parameter followed by g's own parameters);
// the whole signed suffix as a query with a JSON body hashing to one of
// jsonHashes (a bodySHA256 smuggled in a form value); absolute-form
// targets; and, inside the form, every name/value and value/name boundary
// shifted by up to three bytes each way and every two neighbours merged.
// Some are not real splices; the caller filters them with
// legacyTwilioSigned.
func twilioSpliceVariants(g twilioGenuine, evilJSON [][]byte) []delivery {
	signed, ok := legacyTwilioSigned(g.public, g.target, g.body)
	if !ok {
		panic("genuine delivery does not verify: " + g.name)
	}
	x := strings.TrimPrefix(signed, g.public+TwilioPath)
	pairs := sortedPairs(g.form)
	// Offsets in x where each of g's parameters starts.
	formStart := len(x)
	for _, p := range pairs {
		formStart -= len(p.name) + len(p.value)
	}
	starts := make([]int, len(pairs))
	for i, pos := 0, formStart; i < len(pairs); i++ {
		starts[i] = pos
		pos += len(pairs[i].name) + len(pairs[i].value)
	}
	var out []delivery
	add := func(target string, body []byte) { out = append(out, delivery{target: target, body: body}) }
	for c := 0; c <= len(x); c++ {
		q, f := x[:c], x[c:]
		target := TwilioPath + q
		if f == "" {
			add(target, nil)
			for _, j := range evilJSON {
				add(target, j)
			}
			continue
		}
		add(target, encodePairs([]twilioPair{{f[:1], f[1:]}}))
		add(target, encodePairs([]twilioPair{{f, ""}}))
		i, _ := slices.BinarySearch(starts, c)
		if i < len(starts) {
			rest := pairs[i:]
			if chunk := x[c:starts[i]]; chunk != "" {
				add(target, encodePairs(append([]twilioPair{{chunk[:1], chunk[1:]}}, rest...)))
				add(target, encodePairs(append([]twilioPair{{chunk, ""}}, rest...)))
			} else {
				add(target, encodePairs(rest))
			}
		}
	}
	for _, host := range []string{"https://hub.example.com", "https://evil.example.com", "http://hub.example.com:443"} {
		add(host+g.target, g.body)
	}
	add("https://hub.example.com?"+strings.TrimPrefix(g.target, TwilioPath+"?"), g.body)
	// Inside the form: the boundaries between names and values, in
	// signed order, each shifted.
	if len(pairs) > 0 {
		var cuts []int // piece boundaries in f, the form's signed string
		pos := 0
		for _, p := range pairs {
			cuts = append(cuts, pos, pos+len(p.name))
			pos += len(p.name) + len(p.value)
		}
		f := x[formStart:]
		rebuild := func(cuts []int) []twilioPair {
			var ps []twilioPair
			for k := 0; k < len(cuts); k += 2 {
				end := len(f)
				if k+2 < len(cuts) {
					end = cuts[k+2]
				}
				ps = append(ps, twilioPair{f[cuts[k]:cuts[k+1]], f[cuts[k+1]:end]})
			}
			return ps
		}
		for k := 1; k < len(cuts); k++ {
			for d := -3; d <= 3; d++ {
				moved := slices.Clone(cuts)
				moved[k] += d
				if d == 0 || moved[k] < moved[k-1] || (k+1 < len(moved) && moved[k] > moved[k+1]) || moved[k] > len(f) {
					continue
				}
				add(g.target, encodePairs(rebuild(moved)))
			}
		}
		for k := 2; k < len(cuts); k += 2 {
			merged := slices.Delete(slices.Clone(cuts), k, k+2)
			add(g.target, encodePairs(rebuild(merged)))
		}
	}
	return out
}

// twilioGenuineDeliveries are the deliveries the splice tests start from:
// form and JSON bodies, with and without ?type=, one whose SMS text
// carries a bodySHA256 and escapes, and one under a public URL with a
// path prefix.
func twilioGenuineDeliveries() ([]twilioGenuine, [][]byte) {
	evil := []byte(`{"MessageSid":"SM666","MessageStatus":"delivered","Body":"forged"}`)
	evilSum := sha256.Sum256(evil)
	evilHash := hex.EncodeToString(evilSum[:])
	jsonBody := []byte(`{"FlowSid":"FW0123","Status":"ended"}`)
	jsonSum := sha256.Sum256(jsonBody)
	jsonHash := hex.EncodeToString(jsonSum[:])
	smuggler := url.Values{
		"AccountSid": {"ACf3a1b2c3d4e5f60718293a4b5c6d7e8f"}, "From": {"+14155550123"}, "To": {"+442071838750"},
		"MessageSid": {"SM0123456789abcdef0123456789abcdef"}, "SmsStatus": {"received"},
		"Body": {"x&bodySHA256=" + evilHash + "&z="},
	}
	tricks := url.Values{
		"AccountSid": {"AC1"}, "MessageSid": {"SM1"}, "SmsStatus": {"received"},
		"Body": {"&%74ype=sms.fake&type=sms+fake&type=sms%2Efake#frag?type=x&"},
	}
	callForm := url.Values{"AccountSid": {"AC1"}, "CallSid": {"CA0123"}, "CallStatus": {"completed"}, "Timestamp": {"Sun, 01 Jun 2025 12:30:45 +0000"}}
	form := func(name, public, target string, f url.Values, wantType string) twilioGenuine {
		return twilioGenuine{name: name, public: public, target: target, body: []byte(f.Encode()), form: f, wantType: wantType}
	}
	return []twilioGenuine{
		form("form with type", testPublicURL, "/webhooks/twilio?type=sms.status", twilioForm, "sms.status"),
		form("form without type", testPublicURL, "/webhooks/twilio", twilioForm, "message.delivered"),
		form("call with type", testPublicURL, "/webhooks/twilio?type=call.status", callForm, "call.status"),
		form("SMS text with a bodySHA256, with type", testPublicURL, "/webhooks/twilio?type=sms.received", smuggler, "sms.received"),
		form("SMS text with a bodySHA256, without type", testPublicURL, "/webhooks/twilio", smuggler, "message.received"),
		form("SMS text with escapes and a fragment", testPublicURL, "/webhooks/twilio?type=sms.received", tricks, "sms.received"),
		form("form with type, public URL with a prefix", "https://example.com/hub", "/webhooks/twilio?type=sms.status", twilioForm, "sms.status"),
		{name: "JSON with type", public: testPublicURL, target: "/webhooks/twilio?type=studio.flow&bodySHA256=" + jsonHash, body: jsonBody, wantType: "studio.flow"},
		{name: "JSON without type", public: testPublicURL, target: "/webhooks/twilio?bodySHA256=" + jsonHash, body: jsonBody},
	}, [][]byte{evil, jsonBody}
}

// Every splice of a genuine Twilio delivery that the previous verifier
// (or an SDK handed the received URL) would have accepted with the
// genuine signature, and that moves bytes across the path, query, form or
// JSON boundaries, is refused as ErrInvalidSignature. Re-splits inside the
// form, which no verifier can tell from the genuine one (see
// Twilio.Verify), never change a type that came from the URL.
func TestTwilioSplices(t *testing.T) {
	genuine, evil := twilioGenuineDeliveries()
	now := time.Date(2025, 6, 1, 12, 31, 0, 0, time.UTC)
	for _, g := range genuine {
		t.Run(g.name, func(t *testing.T) {
			tw, err := NewTwilio([]string{twilioOldSecret, twilioSecret}, Options{PublicURL: g.public})
			require.NoError(t, err)
			header := g.header()
			ev, err := VerifyDelivery(tw, Request{Header: header, Body: g.body, URI: g.target, Now: now})
			if g.wantType == "" {
				require.ErrorIs(t, err, ErrPayload, "a JSON body without type has nothing to infer from")
			} else {
				require.NoError(t, err, "the genuine delivery")
				require.Equal(t, g.wantType, ev.Type)
			}
			want, _ := legacyTwilioSigned(g.public, g.target, g.body)
			seen := map[string]bool{}
			var spliced, resplit, resplitAccepted int
			for _, v := range twilioSpliceVariants(g, evil) {
				key := v.target + "\x00" + string(v.body)
				if seen[key] {
					continue
				}
				seen[key] = true
				if got, ok := legacyTwilioSigned(g.public, v.target, v.body); !ok || got != want {
					continue // not a splice: the genuine signature would not match
				}
				if v.target == g.target && twilioSameBody(g, v.body) {
					continue // the genuine delivery, re-encoded
				}
				ev, err := VerifyDelivery(tw, Request{Header: header, Body: v.body, URI: v.target, Now: now})
				if v.target != g.target {
					spliced++
					require.ErrorIs(t, err, ErrInvalidSignature, "splice accepted: target %q body %q: %+v", v.target, v.body, ev)
					require.Equal(t, Event{}, ev)
					continue
				}
				resplit++
				if err != nil {
					// Refused: 401, or 400 when the re-split left a URL
					// without type nothing to infer one from.
					require.True(t, errors.Is(err, ErrInvalidSignature) || errors.Is(err, ErrPayload), "target %q body %q: %v", v.target, v.body, err)
					continue
				}
				resplitAccepted++
				if strings.Contains(g.target, "type=") {
					require.Equal(t, g.wantType, ev.Type, "a re-split form changed the URL's type: body %q", v.body)
				}
			}
			// Every cut point of the signed suffix yields a real splice:
			// the generator cannot silently produce nothing.
			// Nearly every cut point of the signed suffix yields a real
			// splice (those after a "bodySHA256" in the query do not): the
			// generator cannot silently produce nothing.
			x := strings.TrimPrefix(want, g.public+TwilioPath)
			require.Greater(t, spliced, len(x)/4, "splices checked")
			t.Logf("%d splices refused; %d re-splits inside the form, %d of them accepted", spliced, resplit, resplitAccepted)
		})
	}
}

// twilioSameBody reports whether body carries g's own parameters (or is
// g's JSON body).
func twilioSameBody(g twilioGenuine, body []byte) bool {
	if g.form == nil {
		return string(body) == string(g.body)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || len(form) != len(g.form) {
		return false
	}
	for name, values := range g.form {
		if !slices.Equal(slices.Sorted(slices.Values(values)), slices.Sorted(slices.Values(form[name]))) {
			return false
		}
	}
	return true
}

// The two reproductions, spelled out.
func TestTwilioSpliceReproductions(t *testing.T) {
	tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
	require.NoError(t, err)
	genuine, _ := twilioGenuineDeliveries()

	// 1. A ?type=sms.status delivery whose first parameter's name moved
	// into the query: the previous verifier read the type
	// "sms.statusAccountSid".
	g := genuine[0]
	pairs := sortedPairs(g.form)
	require.Equal(t, "AccountSid", pairs[0].name)
	target := g.target + pairs[0].name
	body := encodePairs(append([]twilioPair{{pairs[0].value[:1], pairs[0].value[1:]}}, pairs[1:]...))
	signed, ok := legacyTwilioSigned(g.public, target, body)
	want, _ := legacyTwilioSigned(g.public, g.target, g.body)
	require.True(t, ok && signed == want, "a real splice")
	_, err = tw.Verify(Request{Header: g.header(), Body: body, URI: target})
	require.ErrorIs(t, err, errTwilioBadType)

	// 2. An SMS whose text holds "x&bodySHA256=<H>&z=": the whole signed
	// suffix as the query, with a JSON body hashing to H.
	g = genuine[3]
	want, _ = legacyTwilioSigned(g.public, g.target, g.body)
	target = TwilioPath + strings.TrimPrefix(want, g.public+TwilioPath)
	evil := []byte(`{"MessageSid":"SM666","MessageStatus":"delivered","Body":"forged"}`)
	signed, ok = legacyTwilioSigned(g.public, target, evil)
	require.True(t, ok && signed == want, "a real splice")
	_, err = tw.Verify(Request{Header: g.header(), Body: evil, URI: target})
	require.ErrorIs(t, err, errTwilioBadType)
	// Even with a type that could have absorbed nothing, the extra keys
	// are refused.
	require.ErrorIs(t, func() error {
		_, err := parseTwilioTarget(TwilioPath + "?type=sms&bodySHA256=" + strings.Repeat("a", 64) + "&z=From")
		return err
	}(), errTwilioBadQuery)
}

// Twilio's scheme does not sign where one form parameter ends and the
// next begins. A sender who chose a parameter's text (an SMS body) and
// holds the signature of its delivery can re-split the form: the hub
// cannot tell, so it routes on the URL's type, which such a re-split never
// changes; the type it infers for a URL without one can be changed, and
// configuring Types refuses such URLs altogether.
func TestTwilioFormBoundariesAreNotSigned(t *testing.T) {
	// The sender's SMS text injects a MessageSid and a MessageStatus, and
	// a last parameter Zz that absorbs Twilio's own parameters after it.
	form := url.Values{
		"AccountSid": {"AC1"}, "From": {"+14155550123"}, "To": {"+442071838750"},
		"SmsSid": {"SM0123"}, "SmsStatus": {"received"},
		"Body": {"hiMessageSidSM666MessageStatusdeliveredZz"},
	}
	for _, withType := range []bool{true, false} {
		target := TwilioPath
		if withType {
			target += "?type=sms.received"
		}
		g := twilioGenuine{public: testPublicURL, target: target, body: []byte(form.Encode()), form: form}
		want, _ := legacyTwilioSigned(g.public, g.target, g.body)
		pairs := sortedPairs(form)
		require.Equal(t, "Body", pairs[1].name)
		var rest strings.Builder
		for _, p := range pairs[2:] {
			rest.WriteString(p.name + p.value)
		}
		resplit := encodePairs([]twilioPair{pairs[0], {"Body", "hi"}, {"MessageSid", "SM666"}, {"MessageStatus", "delivered"}, {"Zz", rest.String()}})
		got, ok := legacyTwilioSigned(g.public, g.target, resplit)
		require.True(t, ok && got == want, "the same signed string")

		tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
		require.NoError(t, err)
		genuineEv, err := tw.Verify(Request{Header: g.header(), Body: g.body, URI: g.target})
		require.NoError(t, err)
		ev, err := tw.Verify(Request{Header: g.header(), Body: resplit, URI: g.target})
		require.NoError(t, err, "no verifier can refuse it")
		// The entities come from the form, so they follow the re-split
		// whatever the URL says: documented (docs/providers.md).
		require.Equal(t, []hub.Entity{{Kind: "message", ID: "SM0123"}}, genuineEv.Entities)
		require.Equal(t, []hub.Entity{{Kind: "message", ID: "SM666"}}, ev.Entities)
		genuineEv.Entities, ev.Entities = nil, nil
		if withType {
			require.Equal(t, "sms.received", ev.Type)
			require.Equal(t, genuineEv, ev)
		} else {
			require.Equal(t, "message.received", genuineEv.Type)
			require.Equal(t, "message.delivered", ev.Type, "the inferred type followed the re-split")
		}
		typed, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL, TwilioTypes: []string{"sms.received"}})
		require.NoError(t, err)
		_, err = typed.Verify(Request{Header: g.header(), Body: resplit, URI: g.target})
		if withType {
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, errTwilioTypeMissing)
		}
	}
}

// Rules on the URL hold whoever signed it: URLs the operator could have
// configured by mistake, signed by Twilio as such, are refused too.
func TestTwilioRefusedURLs(t *testing.T) {
	h := strings.Repeat("ab", 32)
	form := []byte(twilioForm.Encode())
	targets := []string{
		"/webhooks/twilio?type=sms.status&type=sms.status",
		"/webhooks/twilio?type=sms.status&type=call.status",
		"/webhooks/twilio?type=sms.status&foo=1",
		"/webhooks/twilio?%74ype=sms.status",
		"/webhooks/twilio?type=sms%2Estatus",
		"/webhooks/twilio?type=sms+status",
		"/webhooks/twilio?type=sms.Status",
		"/webhooks/twilio?type=",
		"/webhooks/twilio?",
		"/webhooks/twilio?type=sms.status&",
		"/webhooks/twilio?type=sms.status#rc=2",
		"/webhooks/twilio#rc=2",
		"/webhooks/twilio/",
		"/webhooks/twilio/?type=sms.status",
		"/prefix/webhooks/twilio?type=sms.status",
		"https://hub.example.com/webhooks/twilio?type=sms.status",
		"/webhooks/twilio?bodySHA256=" + h + "&type=sms.status",
		"/webhooks/twilio?type=sms.status&bodySHA256=" + h + "&bodySHA256=" + h,
	}
	tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
	require.NoError(t, err)
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			signed, ok := legacyTwilioSigned(testPublicURL, target, form)
			if !ok {
				signed = testPublicURL + target // a bodySHA256 the form does not hash to
			}
			header := twilioHeader(refTwilio(twilioSecret, signed, nil, false), twilioToken)
			_, err := tw.Verify(Request{Header: header, Body: form, URI: target})
			require.ErrorIs(t, err, ErrInvalidSignature)
			require.False(t, errors.Is(err, errTwilioMismatch), "refused for its shape, not its MAC: %v", err)
		})
	}
}

// fuzzEvilJSON is the body FuzzTwilioSplice tries to smuggle in; an SMS
// text's "{H}" becomes its hash.
var (
	fuzzEvilJSON = []byte(`{"MessageSid":"SM666","MessageStatus":"delivered"}`)
	fuzzEvilHash = func() string { sum := sha256.Sum256(fuzzEvilJSON); return hex.EncodeToString(sum[:]) }()
)

// FuzzTwilioSplice re-splits a genuine delivery whose SMS text the fuzzer
// chooses at a cut point it chooses, in the way it chooses, and checks
// that a request the previous verifier would have accepted with the
// genuine signature is either the genuine delivery, refused, or a re-split
// inside the form that keeps the URL's type.
func FuzzTwilioSplice(f *testing.F) {
	f.Add("Hi there", uint16(5), uint8(0), true)
	f.Add("x&bodySHA256={H}&z=", uint16(300), uint8(1), true)
	f.Add("x&bodySHA256={H}", uint16(300), uint8(1), false)
	f.Add("MessageSidSM1MessageStatusfailedZz", uint16(80), uint8(2), false)
	f.Add("%74ype=x&type=y#", uint16(20), uint8(3), true)
	tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, cut uint16, how uint8, withType bool) {
		text = strings.ReplaceAll(text, "{H}", fuzzEvilHash)
		form := url.Values{"AccountSid": {"AC1"}, "From": {"+1555"}, "SmsSid": {"SM1"}, "SmsStatus": {"received"}, "Body": {text}}
		target := TwilioPath
		if withType {
			target += "?type=sms.received"
		}
		g := twilioGenuine{public: testPublicURL, target: target, body: []byte(form.Encode()), form: form}
		want, _ := legacyTwilioSigned(g.public, g.target, g.body)
		x := strings.TrimPrefix(want, g.public+TwilioPath)
		c := int(cut) % (len(x) + 1)
		q, rest := x[:c], x[c:]
		var body []byte
		switch how % 4 {
		case 0:
			if rest != "" {
				body = encodePairs([]twilioPair{{rest[:1], rest[1:]}})
			}
		case 1:
			body = fuzzEvilJSON // a JSON-variant attempt: "{H}" in the text is its hash
		case 2:
			// Split the rest at the first upper-case byte after the cut.
			i := strings.IndexFunc(rest[min(1, len(rest)):], func(r rune) bool { return r >= 'A' && r <= 'Z' })
			if i < 0 {
				body = encodePairs([]twilioPair{{rest, ""}})
			} else {
				i++
				body = encodePairs([]twilioPair{{rest[:i], ""}, {rest[i:], ""}})
			}
		default:
			body = encodePairs([]twilioPair{{rest, ""}})
		}
		v := delivery{target: TwilioPath + q, body: body}
		if got, ok := legacyTwilioSigned(g.public, v.target, v.body); !ok || got != want {
			return
		}
		ev, err := tw.Verify(Request{Header: g.header(), Body: v.body, URI: v.target})
		switch {
		case v.target != g.target && err == nil:
			t.Fatalf("splice accepted: target %q body %q: %+v", v.target, v.body, ev)
		case err != nil && !errors.Is(err, ErrInvalidSignature) && !errors.Is(err, ErrPayload):
			t.Fatalf("unexpected error %v", err)
		case err != nil && v.target != g.target && !errors.Is(err, ErrInvalidSignature):
			t.Fatalf("splice refused as %v, not as an invalid signature", err)
		case err == nil && withType && ev.Type != "sms.received":
			t.Fatalf("re-split changed the URL's type to %q: body %q", ev.Type, v.body)
		}
	})
}
