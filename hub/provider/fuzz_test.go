package provider

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/internal/jsontext"
)

// fuzzNow is the clock of the Verify fuzz targets, and the time their
// seed deliveries are signed at.
var fuzzNow = time.Unix(1700000000, 0)

func vectorHeaders(f *testing.F, provider, name string) []string {
	var out []string
	for _, v := range loadVectors(f) {
		if v.Provider == provider {
			out = append(out, v.Headers[name])
		}
	}
	return out
}

func FuzzPaddleSignatureHeader(f *testing.F) {
	for _, h := range vectorHeaders(f, "paddle", "Paddle-Signature") {
		f.Add(h)
	}
	for _, h := range []string{"", "ts=", "h1=abc", "ts=abc;h1=" + strings.Repeat("0", 64), "ts=1;h1=zz", "ts=1;ts=2;h1=" + strings.Repeat("a", 64), " ts=01 ; h1=" + strings.Repeat("F", 64) + " ;;h2=x", "=;=;=", "ts=99999999999999999999;h1="} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		ts, sigs, err := parsePaddleSignature(header, nil)
		if err != nil {
			if !errors.Is(err, ErrInvalidSignature) {
				t.Fatalf("error %v does not wrap ErrInvalidSignature", err)
			}
			if ts != "" || sigs != nil {
				t.Fatalf("failed parse returned ts %q and %d signatures", ts, len(sigs))
			}
			return
		}
		if _, ok := parseUnixDigits(ts); !ok || !strings.Contains(header, "ts="+ts) {
			t.Fatalf("ts %q is not a unix time written in %q", ts, header)
		}
		if len(sigs) == 0 || len(sigs) > strings.Count(header, "h1=") || len(sigs) > maxSignatures {
			t.Fatalf("%d signatures from %q", len(sigs), header)
		}
		lower := strings.ToLower(header)
		for _, s := range sigs {
			if !strings.Contains(lower, "h1="+hex.EncodeToString(s[:])) {
				t.Fatalf("signature %x is not in %q", s, header)
			}
		}
		// Appending to a caller's buffer keeps its contents.
		var buf [1][macSize]byte
		buf[0][0] = 0xAB
		ts2, sigs2, err := parsePaddleSignature(header, buf[:1])
		if err != nil || ts2 != ts || len(sigs2) != len(sigs)+1 || sigs2[0][0] != 0xAB {
			t.Fatalf("parse into a buffer differs: %q %d %v", ts2, len(sigs2), err)
		}
	})
}

func FuzzSvixSignatureHeader(f *testing.F) {
	for _, h := range vectorHeaders(f, "clerk", "svix-signature") {
		f.Add(h)
	}
	for _, h := range []string{"", "v2,abc", "v1,", "v1", ",", "v1,!!!!", "v1a,AAAA v1," + strings.Repeat("A", 43) + "=", "v1," + strings.Repeat("A", 44), "v1," + strings.Repeat("A", 42) + "B="} {
		f.Add(h)
	}
	strict := base64.StdEncoding.Strict()
	f.Fuzz(func(t *testing.T, header string) {
		sigs := parseSvixSignatures(header, nil)
		if len(sigs) > strings.Count(header, "v1,") {
			t.Fatalf("%d signatures from %q", len(sigs), header)
		}
		// A naive reference: split, keep v1, decode strictly, keep 32 bytes.
		var want [][]byte
		for _, entry := range strings.Split(header, " ") {
			version, sig, _ := strings.Cut(entry, ",")
			if version != "v1" || len(sig) != 44 {
				continue
			}
			if b, err := strict.DecodeString(sig); err == nil && len(b) == macSize {
				want = append(want, b)
			}
		}
		if len(want) > maxSignatures {
			want = want[:maxSignatures]
		}
		if len(want) != len(sigs) {
			t.Fatalf("%d signatures, reference finds %d, in %q", len(sigs), len(want), header)
		}
		for i, s := range sigs {
			if !bytes.Equal(s[:], want[i]) {
				t.Fatalf("signature %d is %x, reference %x", i, s, want[i])
			}
			if !strings.Contains(header, "v1,"+base64.StdEncoding.EncodeToString(s[:])) {
				t.Fatalf("signature %x is not canonically in %q", s, header)
			}
		}
	})
}

// checkVerifyError fails unless err wraps exactly one of the sentinels.
func checkVerifyError(t *testing.T, err error) {
	n := 0
	for _, s := range []error{ErrInvalidSignature, ErrTimestamp, ErrPayload} {
		if errors.Is(err, s) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("error %v wraps %d sentinels", err, n)
	}
}

// failedVerify reports whether Verify failed, after checking that the
// failure wraps exactly one sentinel (never ErrTimestamp when untimed, for
// a scheme that signs no timestamp) and comes with no event.
func failedVerify(t *testing.T, ev Event, err error, untimed bool) bool {
	if err == nil {
		return false
	}
	checkVerifyError(t, err)
	if (untimed && errors.Is(err, ErrTimestamp)) || !reflect.DeepEqual(ev, Event{}) {
		t.Fatalf("failed Verify: %v, %+v", err, ev)
	}
	return true
}

// svixEntrySigned reports whether the signature header sig lists, as a
// v1 entry, the MAC of id, ts and body under one of secrets.
func svixEntrySigned(sig, id, ts string, body []byte, secrets ...string) bool {
	for _, secret := range secrets {
		want := "v1," + refSvixV1(secret, id, ts, body)
		for _, entry := range strings.Split(sig, " ") {
			if entry == want {
				return true
			}
		}
	}
	return false
}

// checkEvent fails unless ev holds what a verified delivery must.
func checkEvent(t *testing.T, ev Event, tol time.Duration) {
	if ev.ID == "" || len(ev.ID) > maxEventIDLen || hasControl(ev.ID) {
		t.Fatalf("bad event id %q", ev.ID)
	}
	if ev.Type == "" || len(ev.Type) > maxEventTypeLen || hasControl(ev.Type) {
		t.Fatalf("bad event type %q", ev.Type)
	}
	if d := fuzzNow.Sub(ev.SignedAt); d > tol || d < -tol {
		t.Fatalf("signed at %v, %v from now", ev.SignedAt, d)
	}
	checkEntities(t, ev.Entities)
}

func FuzzPaddleVerify(f *testing.F) {
	p, err := NewPaddle([]string{paddleOldSecret, paddleSecret}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	seedBody, err := samples.Body(p.Name(), "evt_01hv8x2a5b9bf4yc3mj0c0ahqm", "subscription.created", nil, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	signed, _, err := p.Sign("", "", seedBody, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	seedHeader := signed.Get("Paddle-Signature")
	f.Add(seedHeader, seedBody)
	f.Add(seedHeader+";h1="+strings.Repeat("0", 64), seedBody)
	f.Add("h2=x; "+seedHeader, seedBody)
	f.Add(seedHeader, append(bytes.Clone(seedBody), ' '))
	f.Add(seedHeader, seedBody[:len(seedBody)-1])
	f.Add(seedHeader, []byte(`{"event_id":"evt_1","event_type":"a.b"}`))
	for _, body := range []string{`{"event_id":"evt_1","event_type":"a.b"}`, `{"event_id":"","event_type":"a.b"}`, `hello-world`, `{}`} {
		h, _, err := p.Sign("", "", []byte(body), fuzzNow)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(h.Get("Paddle-Signature"), []byte(body))
	}
	for _, v := range loadVectors(f) {
		if v.Provider == "paddle" {
			f.Add(v.Headers["Paddle-Signature"], []byte(v.Body))
		}
	}

	f.Fuzz(func(t *testing.T, header string, body []byte) {
		h := http.Header{"Paddle-Signature": {header}}
		ev, err := p.Verify(Request{Header: h, Body: body, Now: fuzzNow})
		if failedVerify(t, ev, err, false) {
			return
		}
		checkEvent(t, ev, p.Tolerance())
		if ev.Signature != header {
			t.Fatalf("Signature %q, header %q", ev.Signature, header)
		}
		if header == seedHeader && !bytes.Equal(body, seedBody) {
			t.Fatalf("the seed signature verified a different body %q", body)
		}
		// Independently: some ts in the header, some secret and some h1 in
		// the header must sign this very body.
		lower := strings.ToLower(header)
		for _, part := range strings.Split(header, ";") {
			ts, ok := strings.CutPrefix(strings.Trim(part, " \t"), "ts=")
			if !ok {
				continue
			}
			unix, err := strconv.ParseInt(ts, 10, 64)
			if err != nil || !time.Unix(unix, 0).Equal(ev.SignedAt) {
				continue
			}
			for _, secret := range []string{paddleOldSecret, paddleSecret} {
				if strings.Contains(lower, "h1="+refPaddleH1(secret, ts, body)) {
					return
				}
			}
		}
		t.Fatalf("Verify accepted an unsigned delivery: header %q, body %q", header, body)
	})
}

func FuzzClerkVerify(f *testing.F) {
	c, err := NewClerk([]string{clerkOldSecret, clerkSecret}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	seedBody, err := samples.Body(c.Name(), clerkMsgID, "user.created", nil, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	signed, _, err := c.Sign(clerkMsgID, "", seedBody, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	ts, seedSig := signed.Get("svix-timestamp"), signed.Get("svix-signature")
	f.Add(clerkMsgID, ts, seedSig, seedBody)
	f.Add(clerkMsgID, ts, "v1a,xyz "+seedSig+" v1,junk", seedBody)
	f.Add(clerkMsgID+"x", ts, seedSig, seedBody)
	f.Add(clerkMsgID, ts+"0", seedSig, seedBody)
	f.Add(clerkMsgID, ts, seedSig, append(bytes.Clone(seedBody), '\n'))
	f.Add("msg.1", ts, seedSig, seedBody)
	for _, body := range []string{`{"type":"user.created"}`, `{"test": 2432232314}`, `[]`} {
		h, _, err := c.Sign(clerkMsgID, "", []byte(body), fuzzNow)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(clerkMsgID, ts, h.Get("svix-signature"), []byte(body))
	}
	for _, v := range loadVectors(f) {
		if v.Provider == "clerk" {
			f.Add(v.Headers["svix-id"], v.Headers["svix-timestamp"], v.Headers["svix-signature"], []byte(v.Body))
		}
	}

	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{"Svix-Id": {id}, "Svix-Timestamp": {ts}, "Svix-Signature": {sig}}
		ev, err := c.Verify(Request{Header: h, Body: body, Now: fuzzNow})
		if failedVerify(t, ev, err, false) {
			return
		}
		checkEvent(t, ev, c.Tolerance())
		if ev.ID != id || ev.Signature != sig || strings.Contains(id, ".") {
			t.Fatalf("event %+v from id %q, signature %q", ev, id, sig)
		}
		if id == clerkMsgID && sig == seedSig && ts == signed.Get("svix-timestamp") && !bytes.Equal(body, seedBody) {
			t.Fatalf("the seed signature verified a different body %q", body)
		}
		unix, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || !time.Unix(unix, 0).Equal(ev.SignedAt) {
			t.Fatalf("SignedAt %v from svix-timestamp %q", ev.SignedAt, ts)
		}
		// Independently: some secret must sign id, ts and this very body,
		// and the signature header must list that MAC as a v1 entry.
		if svixEntrySigned(sig, id, ts, body, clerkOldSecret, clerkSecret) {
			return
		}
		t.Fatalf("Verify accepted an unsigned delivery: id %q ts %q sig %q body %q", id, ts, sig, body)
	})
}

func FuzzStripeSignatureHeader(f *testing.F) {
	for _, h := range vectorHeaders(f, "stripe", "Stripe-Signature") {
		f.Add(h)
	}
	v1 := "v1=" + strings.Repeat("a", 64)
	for _, h := range []string{"", "t=", "t=1", v1, "t=1," + v1, "t=01, " + v1 + " ,v0=x", "t=1,t=2," + v1, "t=-1," + v1, "t=1,v1=zz", "=,=", "t=99999999999999999999," + v1, "t=1,v1=" + strings.Repeat("F", 64)} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		unix, sigs, err := parseStripeSignature(header, nil)
		// A naive reference: split on ',', trim, cut '='; exactly one t of
		// digits; v1 entries of 64 hex digits, at most 16.
		var ts []string
		var want [][]byte
		for _, part := range strings.Split(header, ",") {
			key, value, ok := strings.Cut(strings.Trim(part, " \t"), "=")
			if !ok {
				continue
			}
			switch key {
			case "t":
				ts = append(ts, value)
			case "v1":
				if b, err := hex.DecodeString(value); err == nil && len(b) == macSize && len(want) < maxSignatures {
					want = append(want, b)
				}
			}
		}
		var refUnix int64
		refOK := len(ts) == 1 && len(want) > 0 && len(ts[0]) <= maxTimestampLen && strings.Trim(ts[0], "0123456789") == "" && ts[0] != ""
		if refOK {
			n, perr := strconv.ParseInt(ts[0], 10, 64)
			refOK, refUnix = perr == nil, n
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidSignature) || unix != 0 || sigs != nil {
				t.Fatalf("failed parse: %v, %d, %d signatures", err, unix, len(sigs))
			}
			if refOK {
				t.Fatalf("parse of %q failed (%v), the reference accepts it", header, err)
			}
			return
		}
		if !refOK || unix != refUnix || len(sigs) != len(want) {
			t.Fatalf("parse of %q: t=%d, %d signatures; reference ok=%v t=%d, %d signatures", header, unix, len(sigs), refOK, refUnix, len(want))
		}
		for i := range sigs {
			if !bytes.Equal(sigs[i][:], want[i]) {
				t.Fatalf("signature %d is %x, reference %x", i, sigs[i], want[i])
			}
		}
		if canon := canonicalStripeT(header, unix); canon != strconv.FormatInt(unix, 10) {
			t.Fatalf("canonical t %q for %d", canon, unix)
		}
	})
}

func FuzzGitHubSignatureHeader(f *testing.F) {
	for _, h := range vectorHeaders(f, "github", "X-Hub-Signature-256") {
		f.Add(h)
	}
	for _, h := range []string{"", "sha256=", "sha1=126f2c800419c60137ce748d7672e77b65cf16d6", "SHA256=" + strings.Repeat("a", 64), "sha256=" + strings.Repeat("G", 64), "sha256= " + strings.Repeat("a", 63)} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		var sig [macSize]byte
		ok := parseGitHubSignature(&sig, header)
		rest, prefixed := strings.CutPrefix(header, "sha256=")
		want, err := hex.DecodeString(rest)
		refOK := prefixed && err == nil && len(want) == macSize
		if ok != refOK {
			t.Fatalf("parse of %q: %v, reference %v", header, ok, refOK)
		}
		if ok && !bytes.Equal(sig[:], want) {
			t.Fatalf("signature %x, reference %x", sig, want)
		}
	})
}

func FuzzShopifyHmacHeader(f *testing.F) {
	for _, h := range vectorHeaders(f, "shopify", "X-Shopify-Hmac-Sha256") {
		f.Add(h)
	}
	for _, h := range []string{"", "=", strings.Repeat("A", 43) + "=", strings.Repeat("A", 43) + "B", strings.Repeat("A", 44), strings.Repeat("A", 42) + "B=", strings.Repeat("_", 43) + "="} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		var sig [macSize]byte
		ok := parseShopifyHmac(&sig, header)
		want, err := base64.StdEncoding.DecodeString(header)
		refOK := err == nil && len(want) == macSize && base64.StdEncoding.EncodeToString(want) == header
		if ok != refOK {
			t.Fatalf("parse of %q: %v, reference %v", header, ok, refOK)
		}
		if ok && !bytes.Equal(sig[:], want) {
			t.Fatalf("signature %x, reference %x", sig, want)
		}
	})
}

func FuzzTwilioSignatureHeaders(f *testing.F) {
	for _, v := range loadVectors(f) {
		if v.Provider == "twilio" {
			f.Add(v.Headers["X-Twilio-Signature"], "")
		}
	}
	sha256Sig := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for _, c := range [][2]string{
		{"", ""}, {"RSOYDt4T1cUTdK1PDd93/VVr8B8", ""}, {"RSOYDt4T1cUTdK1PDd93/VVr8B9=", ""},
		{sha256Sig, "key=KS1,algorithm=HMAC_SHA256"}, {sha256Sig, "algorithm=hmac_sha256 , key=x"},
		{sha256Sig, "algorithm=HMAC_SHA512"}, {"x", "algorithm=HMAC_SHA1,algorithm=HMAC_SHA1"}, {"x", "=,=,algorithm"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, header, settings string) {
		alg, ok := parseTwilioSettings(settings)
		// Reference: the algorithm named once, case-insensitively.
		var named []string
		for _, part := range strings.Split(settings, ",") {
			key, value, _ := strings.Cut(strings.Trim(part, " \t"), "=")
			if strings.EqualFold(key, "algorithm") {
				named = append(named, strings.ToUpper(value))
			}
		}
		refAlg, refOK := twilioSHA1, true
		switch {
		case len(named) > 1:
			refOK = false
		case len(named) == 1 && named[0] == "HMAC_SHA256":
			refAlg = twilioSHA256
		case len(named) == 1 && named[0] != "HMAC_SHA1":
			refOK = false
		}
		if ok != refOK || (ok && alg != refAlg) {
			t.Fatalf("settings %q: %v %v, reference %v %v", settings, alg, ok, refAlg, refOK)
		}
		if !ok {
			return
		}
		var sig [macSize]byte
		n, ok := parseTwilioSignature(&sig, header, alg)
		size := 20
		if alg == twilioSHA256 {
			size = 32
		}
		want, err := base64.StdEncoding.DecodeString(header)
		refOK = err == nil && len(want) == size && base64.StdEncoding.EncodeToString(want) == header
		if ok != refOK {
			t.Fatalf("signature %q (%v): %v, reference %v", header, alg, ok, refOK)
		}
		if ok && (n != size || !bytes.Equal(sig[:n], want)) {
			t.Fatalf("signature %x, reference %x", sig[:n], want)
		}
	})
}

// FuzzTwilioForm checks the form handling Twilio's signature and archive
// depend on: the signed parameter string against a naive reference, and
// PayloadJSON's JSON against the form it came from.
func FuzzTwilioForm(f *testing.F) {
	for _, v := range loadVectors(f) {
		if v.Provider == "twilio" {
			f.Add(v.Body)
		}
	}
	for _, b := range []string{"", "a=1&a=0&b=", "Digits=5678&Digits=1234&Digits=1234", "Tag=a1&Tag=a1", "V=%EF%BC%81&V=%F0%9F%98%80&V=%E2%82&V=%E2%82%AC", "x=%zz", "a;b=1", "=&=&", "k=%E2%82%AC+%00", `{"a":1}`} {
		f.Add(b)
	}
	tw, err := NewTwilio([]string{twilioSecret}, Options{PublicURL: testPublicURL})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string) {
		form, err := url.ParseQuery(body)
		if err == nil {
			got := string(appendTwilioParams(nil, form))
			if want := refTwilioSigned("", form); got != want {
				t.Fatalf("signed params %q, reference %q", got, want)
			}
			names := make([]string, 0, len(form))
			for name := range form {
				names = append(names, name)
			}
			sort.Strings(names)
			refFirstOK := len(names) == 0 || (names[0] != "" && names[0][0] >= 'A' && names[0][0] <= 'Z')
			if twilioFirstNameOK(form) != refFirstOK {
				t.Fatalf("first name check of %q: %v, reference %v", names, !refFirstOK, refFirstOK)
			}
		}
		payload, perr := tw.PayloadJSON([]byte(body))
		if perr != nil {
			if !errors.Is(perr, ErrPayload) || err == nil {
				t.Fatalf("PayloadJSON(%q): %v (form error %v)", body, perr, err)
			}
			return
		}
		if !json.Valid(payload) {
			t.Fatalf("PayloadJSON(%q) = %q, not JSON", body, payload)
		}
		if c := jsontext.FirstNonSpace([]byte(body)); (c == '{' || c == '[') && json.Valid([]byte(body)) {
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(payload, &obj); err != nil || len(obj) != len(form) {
			t.Fatalf("PayloadJSON(%q) = %q: %v", body, payload, err)
		}
	})
}

// signTwilioRef signs a request to testPublicURL+target with the reference
// signer, for seeds.
func signTwilioRef(target string, body []byte) string {
	if _, hash, ok := strings.Cut(target, "bodySHA256="); ok && hash != "" {
		return refTwilio(twilioSecret, testPublicURL+target, nil, false)
	}
	form, _ := url.ParseQuery(string(body))
	return refTwilio(twilioSecret, testPublicURL+target, form, false)
}

func FuzzStripeVerify(f *testing.F) {
	s, err := NewStripe([]string{stripeOldSecret, stripeSecret}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	seedBody, err := samples.Body(s.Name(), "evt_1PqRsTuVwXyZ0123456789ab", "customer.subscription.created", nil, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	signed, _, err := s.Sign("", "", seedBody, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	seedHeader := signed.Get("Stripe-Signature")
	f.Add(seedHeader, seedBody)
	f.Add(seedHeader+",v1="+strings.Repeat("0", 64)+",v0=ab", seedBody)
	f.Add("t=0"+seedHeader[2:], seedBody)
	f.Add(seedHeader, append(bytes.Clone(seedBody), ' '))
	for _, body := range []string{`{"id":"evt_1","type":"a.b"}`, `{"id":"","type":"a.b"}`, `{}`, `[]`} {
		h, _, err := s.Sign("", "", []byte(body), fuzzNow)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(h.Get("Stripe-Signature"), []byte(body))
	}
	for _, v := range loadVectors(f) {
		if v.Provider == "stripe" {
			f.Add(v.Headers["Stripe-Signature"], []byte(v.Body))
		}
	}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		ev, err := s.Verify(Request{Header: http.Header{"Stripe-Signature": {header}}, Body: body, Now: fuzzNow})
		if failedVerify(t, ev, err, false) {
			return
		}
		checkEvent(t, ev, s.Tolerance())
		if ev.Signature != header {
			t.Fatalf("Signature %q, header %q", ev.Signature, header)
		}
		// Independently: some secret must sign the decimal t and this very
		// body, and the header must list that MAC as a v1 entry.
		ts := strconv.FormatInt(ev.SignedAt.Unix(), 10)
		lower := strings.ToLower(header)
		for _, secret := range []string{stripeOldSecret, stripeSecret} {
			if strings.Contains(lower, "v1="+refStripeV1(secret, ts, body)) {
				return
			}
		}
		t.Fatalf("Verify accepted an unsigned delivery: header %q, body %q", header, body)
	})
}

func FuzzStandardWebhooksVerify(f *testing.F) {
	s, err := NewStandardWebhooks([]string{standardOldSecret, standardSecret}, Options{Name: "acme"})
	if err != nil {
		f.Fatal(err)
	}
	seedBody, err := samples.Body(s.Name(), standardMsgID, "email.delivered", nil, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	signed, _, err := s.Sign(standardMsgID, "", seedBody, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	ts, seedSig := signed.Get("webhook-timestamp"), signed.Get("webhook-signature")
	f.Add(standardMsgID, ts, seedSig, seedBody)
	f.Add(standardMsgID, ts, "v1a,"+strings.Repeat("A", 86)+"== "+seedSig, seedBody)
	f.Add(standardMsgID, ts, "v1a,"+seedSig[3:], seedBody)
	f.Add(standardMsgID, ts+"0", seedSig, seedBody)
	for _, v := range loadVectors(f) {
		if v.Provider == "standard-webhooks" {
			f.Add(v.Headers["webhook-id"], v.Headers["webhook-timestamp"], v.Headers["webhook-signature"], []byte(v.Body))
		}
	}
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {sig}}
		ev, err := s.Verify(Request{Header: h, Body: body, Now: fuzzNow})
		if failedVerify(t, ev, err, false) {
			return
		}
		checkEvent(t, ev, s.Tolerance())
		if ev.ID != id || ev.Signature != sig || strings.Contains(id, ".") {
			t.Fatalf("event %+v from id %q, signature %q", ev, id, sig)
		}
		if svixEntrySigned(sig, id, ts, body, standardOldSecret, standardSecret) {
			return
		}
		t.Fatalf("Verify accepted an unsigned delivery: id %q ts %q sig %q body %q", id, ts, sig, body)
	})
}

func FuzzGitHubVerify(f *testing.F) {
	g, err := NewGitHub([]string{githubOldSecret, githubSecret}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	seedBody, err := samples.Body(g.Name(), githubDelivery, "pull_request.opened", nil, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	seedSig := githubSig(githubSecret, seedBody)
	form := []byte("payload=" + url.QueryEscape(`{"action":"closed"}`))
	f.Add(seedSig, "pull_request", seedBody)
	f.Add(seedSig, "pull_request", append(bytes.Clone(seedBody), '\n'))
	f.Add(githubSig(githubSecret, form), "issues", form)
	f.Add(githubSig(githubSecret, []byte(`{"action":5}`)), "x", []byte(`{"action":5}`))
	for _, v := range loadVectors(f) {
		if v.Provider == "github" {
			f.Add(v.Headers["X-Hub-Signature-256"], v.Headers["X-GitHub-Event"], []byte(v.Body))
		}
	}
	f.Fuzz(func(t *testing.T, sig, event string, body []byte) {
		h := http.Header{"X-Hub-Signature-256": {sig}, "X-Github-Event": {event}, "X-Github-Delivery": {githubDelivery}}
		ev, err := g.Verify(Request{Header: h, Body: body, Now: time.Time{}})
		if failedVerify(t, ev, err, true) {
			return
		}
		if ev.ID != githubDelivery || (ev.Type != event && !strings.HasPrefix(ev.Type, event+".")) || !ev.SignedAt.IsZero() {
			t.Fatalf("event %+v from event %q", ev, event)
		}
		if len(ev.Type) > maxEventTypeLen || hasControl(ev.Type) {
			t.Fatalf("bad type %q", ev.Type)
		}
		checkEntities(t, ev.Entities)
		for _, secret := range []string{githubOldSecret, githubSecret} {
			// The hex may be in either case; the prefix may not.
			if want := githubSig(secret, body); strings.HasPrefix(sig, "sha256=") && strings.EqualFold(sig, want) {
				if _, err := g.PayloadJSON(body); err != nil {
					t.Fatalf("PayloadJSON of an accepted body: %v", err)
				}
				return
			}
		}
		t.Fatalf("Verify accepted an unsigned delivery: sig %q body %q", sig, body)
	})
}

func FuzzShopifyVerify(f *testing.F) {
	s, err := NewShopify([]string{shopifyOldSecret, shopifySecret}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	seedBody, err := samples.Body(s.Name(), "1", "orders.create", nil, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	seedSig := shopifySig(shopifySecret, seedBody)
	f.Add(seedSig, "orders/create", seedBody)
	f.Add(hex.EncodeToString(refHMACSHA256(shopifySecret, seedBody)), "orders/create", seedBody)
	f.Add(seedSig, "orders/create", seedBody[1:])
	for _, v := range loadVectors(f) {
		if v.Provider == "shopify" {
			f.Add(v.Headers["X-Shopify-Hmac-Sha256"], v.Headers["X-Shopify-Topic"], []byte(v.Body))
		}
	}
	f.Fuzz(func(t *testing.T, sig, topic string, body []byte) {
		h := http.Header{"X-Shopify-Hmac-Sha256": {sig}, "X-Shopify-Topic": {topic}, "X-Shopify-Webhook-Id": {"1"}}
		ev, err := s.Verify(Request{Header: h, Body: body, Now: time.Time{}})
		if failedVerify(t, ev, err, true) {
			return
		}
		if ev.ID != "1" || ev.Type != strings.ReplaceAll(topic, "/", ".") || hasControl(ev.Type) || len(ev.Type) > maxEventTypeLen {
			t.Fatalf("event %+v from topic %q", ev, topic)
		}
		checkEntities(t, ev.Entities)
		for _, secret := range []string{shopifyOldSecret, shopifySecret} {
			if sig == shopifySig(secret, body) {
				return
			}
		}
		t.Fatalf("Verify accepted an unsigned delivery: sig %q body %q", sig, body)
	})
}

// twilioTargetRE is the request-targets Verify may accept, written
// independently of parseTwilioTarget: the type in group 2, the body hash
// in group 3 or 4.
var twilioTargetRE = regexp.MustCompile(`^/webhooks/twilio(\?(?:type=((?:[a-z0-9_-]+\.)*[a-z0-9_-]+)(?:&bodySHA256=([0-9a-f]{64}))?|bodySHA256=([0-9a-f]{64})))?$`)

// FuzzTwilioTarget checks parseTwilioTarget against twilioTargetRE and
// ValidTwilioType against its grammar written as a regular expression.
func FuzzTwilioTarget(f *testing.F) {
	h := strings.Repeat("0123456789abcdef", 4)
	for _, s := range []string{
		"/webhooks/twilio", "/webhooks/twilio?type=sms.status", "/webhooks/twilio?bodySHA256=" + h,
		"/webhooks/twilio?type=a.b-c_d&bodySHA256=" + h, "/webhooks/twilio?", "/webhooks/twilio?type=sms&type=sms",
		"/webhooks/twilio?%74ype=x", "/webhooks/twilio?type=sms%2Estatus", "https://h/webhooks/twilio?type=x",
		"/webhooks/twilio?type=x#y", "/webhooks/twilio?bodySHA256=" + h + "&type=x", "/webhooks/twilio?type=..",
	} {
		f.Add(s)
	}
	typeRE := regexp.MustCompile(`^(?:[a-z0-9_-]+\.)*[a-z0-9_-]+$`)
	f.Fuzz(func(t *testing.T, uri string) {
		q, err := parseTwilioTarget(uri)
		m := twilioTargetRE.FindStringSubmatch(uri)
		if (err == nil) != (m != nil && len(m[2]) <= maxEventTypeLen) {
			t.Fatalf("parseTwilioTarget(%q): %+v, %v; reference match %q", uri, q, err, m)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidSignature) || q != (twilioQuery{}) {
				t.Fatalf("parseTwilioTarget(%q) failed with %v, %+v", uri, err, q)
			}
		} else if q.typ != m[2] || q.bodyHash != m[3]+m[4] {
			t.Fatalf("parseTwilioTarget(%q) = %+v, reference %q", uri, q, m)
		}
		typ := strings.TrimPrefix(uri, "/webhooks/twilio?type=")
		if ValidTwilioType(typ) != (typeRE.MatchString(typ) && len(typ) <= maxEventTypeLen) {
			t.Fatalf("ValidTwilioType(%q) = %v", typ, ValidTwilioType(typ))
		}
	})
}

func FuzzTwilioVerify(f *testing.F) {
	tw, err := NewTwilio([]string{twilioOldSecret, twilioSecret}, Options{PublicURL: testPublicURL})
	if err != nil {
		f.Fatal(err)
	}
	seedBody, err := samples.Body(tw.Name(), "evt_1", "message.delivered", nil, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	const target = "/webhooks/twilio?type=sms.status"
	seedSig := signTwilioRef(target, seedBody)
	f.Add(seedSig, target, seedBody)
	f.Add(seedSig, "/webhooks/twilio?type=sms.statuz", seedBody)
	f.Add(seedSig, target, append(bytes.Clone(seedBody), "&x=1"...))
	f.Add(signTwilioRef("/webhooks/twilio", seedBody), "/webhooks/twilio", seedBody)
	jsonBody := []byte(`{"a":1}`)
	sum := sha256.Sum256(jsonBody)
	jsonTarget := "/webhooks/twilio?type=x&bodySHA256=" + hex.EncodeToString(sum[:])
	f.Add(signTwilioRef(jsonTarget, jsonBody), jsonTarget, jsonBody)
	f.Add(signTwilioRef(jsonTarget, jsonBody), jsonTarget, []byte(`{"a":2}`))
	f.Fuzz(func(t *testing.T, sig, target string, body []byte) {
		h := http.Header{"X-Twilio-Signature": {sig}}
		ev, err := tw.Verify(Request{Header: h, Body: body, URI: target, Now: fuzzNow})
		if failedVerify(t, ev, err, true) {
			return
		}
		if ev.ID == "" || ev.Type == "" || hasControl(ev.ID) || hasControl(ev.Type) || len(ev.ID) > maxEventIDLen || len(ev.Type) > maxEventTypeLen {
			t.Fatalf("bad event %+v", ev)
		}
		checkEntities(t, ev.Entities)
		payload, err := tw.PayloadJSON(body)
		if err != nil || !json.Valid(payload) {
			t.Fatalf("PayloadJSON of an accepted body: %q, %v", payload, err)
		}
		// Independently: the target is the mount path and a query the
		// hub reads unambiguously, and some secret signs some base URL
		// plus target (plus the parameters, or with the body matching
		// bodySHA256).
		m := twilioTargetRE.FindStringSubmatch(target)
		if m == nil {
			t.Fatalf("accepted request-target %q", target)
		}
		var form url.Values
		if hash := m[3] + m[4]; hash != "" {
			got := sha256.Sum256(body)
			if hash != hex.EncodeToString(got[:]) {
				t.Fatalf("accepted a body whose hash is not bodySHA256")
			}
		} else {
			form, _ = url.ParseQuery(string(body))
			first := ""
			for name := range form {
				if first == "" || name < first {
					first = name
				}
			}
			if len(form) > 0 && (first == "" || first[0] < 'A' || first[0] > 'Z') {
				t.Fatalf("accepted a form whose first name is %q", first)
			}
		}
		if m[2] != "" && ev.Type != m[2] {
			t.Fatalf("type %q, the URL says %q", ev.Type, m[2])
		}
		for _, base := range []string{testPublicURL, testPublicURL + ":443"} {
			for _, secret := range []string{twilioOldSecret, twilioSecret} {
				if sig == refTwilio(secret, base+target, form, false) {
					return
				}
			}
		}
		t.Fatalf("Verify accepted an unsigned request: sig %q target %q body %q", sig, target, body)
	})
}
