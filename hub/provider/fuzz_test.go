package provider

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
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
}

func FuzzPaddleVerify(f *testing.F) {
	p, err := NewPaddle([]string{paddleOldSecret, paddleSecret}, 0)
	if err != nil {
		f.Fatal(err)
	}
	seedBody, err := p.Sample("evt_01hv8x2a5b9bf4yc3mj0c0ahqm", "subscription.created", nil, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	signed, err := p.Sign("", seedBody, fuzzNow)
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
		h, err := p.Sign("", []byte(body), fuzzNow)
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
		ev, err := p.Verify(h, body, fuzzNow)
		if err != nil {
			checkVerifyError(t, err)
			if ev != (Event{}) {
				t.Fatalf("failed Verify returned %+v", ev)
			}
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
	c, err := NewClerk([]string{clerkOldSecret, clerkSecret}, 0)
	if err != nil {
		f.Fatal(err)
	}
	seedBody, err := c.Sample(clerkMsgID, "user.created", nil, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	signed, err := c.Sign(clerkMsgID, seedBody, fuzzNow)
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
		h, err := c.Sign(clerkMsgID, []byte(body), fuzzNow)
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
		ev, err := c.Verify(h, body, fuzzNow)
		if err != nil {
			checkVerifyError(t, err)
			if ev != (Event{}) {
				t.Fatalf("failed Verify returned %+v", ev)
			}
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
		for _, secret := range []string{clerkOldSecret, clerkSecret} {
			want := "v1," + refSvixV1(secret, id, ts, body)
			for _, entry := range strings.Split(sig, " ") {
				if entry == want {
					return
				}
			}
		}
		t.Fatalf("Verify accepted an unsigned delivery: id %q ts %q sig %q body %q", id, ts, sig, body)
	})
}
