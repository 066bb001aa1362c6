package destination_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/internal/receivertest"
)

const (
	testSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // the Standard Webhooks specification's example key
	testOldSecret = "whsec_c2Vjb25kLXNlY3JldC1vZi10d2VudHktZm91cg=="
)

func TestParseSecret(t *testing.T) {
	for _, tc := range []struct {
		name, in, err string
	}{
		{"spec example", testSecret, ""},
		{"no prefix", strings.TrimPrefix(testSecret, "whsec_"), "must start with whsec_"},
		{"not base64", "whsec_not!base64!!", "not whsec_ followed by standard base64"},
		{"too short", "whsec_YWJj", "the key is 3 bytes, want 24 to 64"},
		{"too long", "whsec_" + strings.Repeat("QUFB", 22), "the key is 66 bytes, want 24 to 64"},
		{"empty", "", "must start with whsec_"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := destination.ParseSecret(tc.in)
			if tc.err == "" {
				if err != nil || len(s) == 0 {
					t.Fatalf("ParseSecret = %v, %v", s, err)
				}
				return
			}
			if !errors.Is(err, destination.ErrSecret) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want ErrSecret saying %q", err, tc.err)
			}
			if rest := strings.TrimPrefix(tc.in, "whsec_"); rest != "" && strings.Contains(err.Error(), rest) {
				t.Fatalf("the error prints the secret: %v", err)
			}
		})
	}
	s, _ := destination.ParseSecret(testSecret)
	for _, printed := range []string{s.String(), s.GoString()} {
		if strings.Contains(printed, "MfKQ") || !strings.Contains(printed, "redacted") {
			t.Fatalf("a secret prints as %q", printed)
		}
	}
}

// TestSignVerifiesWithEverySecret checks Sign against a Standard Webhooks
// verifier written apart from it (receivertest.Verify): each secret of a rotation alone verifies the
// header, and a changed id, timestamp or body does not.
func TestSignVerifiesWithEverySecret(t *testing.T) {
	t.Parallel()
	cur, err := destination.ParseSecret(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	old, err := destination.ParseSecret(testOldSecret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	body := []byte(`{"type":"paddle.subscription.created","timestamp":"2026-12-03T10:00:00Z","data":{"id":"sub_1"}}`)
	id := "paddle:evt_01"
	sig := destination.Sign(id, now, body, []destination.Secret{cur, old})
	if got := strings.Count(sig, "v1,"); got != 2 {
		t.Fatalf("signature %q has %d entries, want 2", sig, got)
	}
	verify := func(secret, id string, ts time.Time, body []byte) error {
		h := http.Header{}
		h.Set(destination.HeaderWebhookID, id)
		h.Set(destination.HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
		h.Set(destination.HeaderWebhookSignature, sig)
		return receivertest.Verify(secret, h, body, now)
	}
	for _, secret := range []string{testSecret, testOldSecret} {
		if err := verify(secret, id, now, body); err != nil {
			t.Errorf("secret %d of the rotation does not verify: %v", len(secret), err)
		}
	}
	for name, err := range map[string]error{
		"other id":        verify(testSecret, "paddle:evt_02", now, body),
		"other timestamp": verify(testSecret, id, now.Add(time.Second), body),
		"other body":      verify(testSecret, id, now, append([]byte{' '}, body...)),
		"other secret":    verify("whsec_"+strings.Repeat("QUFB", 8), id, now, body),
	} {
		if !errors.Is(err, receivertest.ErrInvalidSignature) {
			t.Errorf("%s: err = %v, want ErrInvalidSignature", name, err)
		}
	}
}

// The cross-language contract of destination signing: what Sign signs,
// the official npm packages standardwebhooks and svix verify
// (receivertest.Node runs them; HOOKHUB_REQUIRE_SDK=1 makes a missing
// install fail instead of skip), and so does a verifier written apart
// from the signer (receivertest.Go); a tampered body or signature, a stale timestamp or a
// spliced id is refused by all of them.

// receivers are the two receivers every table runs against.
var receivers = []struct {
	name  string
	start func(t testing.TB, secrets ...string) receivertest.Receiver
}{
	{"node", func(t testing.TB, s ...string) receivertest.Receiver { return receivertest.Node(t, s...) }},
	{"go", func(t testing.TB, s ...string) receivertest.Receiver { return receivertest.Go(t, s...) }},
}

// sampleEnvelope is what a destination POSTs for a provider's sample body:
// the envelope destination.Body builds.
func sampleEnvelope(t testing.TB, prov, typ string, body []byte, at time.Time) []byte {
	t.Helper()
	out, err := destination.Body(destination.PayloadEnvelope, event(prov, typ, body, at, at))
	if err != nil {
		t.Fatalf("%s.%s envelope: %v", prov, typ, err)
	}
	return out
}

// delivery is one POST to a receiver.
type delivery struct {
	id   string
	ts   time.Time
	sig  string
	body []byte
}

func signed(id string, ts time.Time, body []byte, secrets ...string) delivery {
	var ss []destination.Secret
	for _, s := range secrets {
		sec, err := destination.ParseSecret(s)
		if err != nil {
			panic(err)
		}
		ss = append(ss, sec)
	}
	return delivery{id: id, ts: ts, sig: destination.Sign(id, ts, body, ss), body: body}
}

// post sends d to r with the webhook-* headers and returns the status.
func post(t testing.TB, r receivertest.Receiver, d delivery) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.URL()+"/hooks", bytes.NewReader(d.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(destination.HeaderWebhookID, d.id)
	req.Header.Set(destination.HeaderWebhookTimestamp, strconv.FormatInt(d.ts.Unix(), 10))
	req.Header.Set(destination.HeaderWebhookSignature, d.sig)
	req.Header.Set("Hookhub-Provider", strings.SplitN(d.id, ":", 2)[0])
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", d.id, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// lastFor returns the last request r received with id.
func lastFor(t testing.TB, r receivertest.Receiver, id string) receivertest.Received {
	t.Helper()
	got := r.Received(t)
	for i := len(got) - 1; i >= 0; i-- {
		if got[i].ID == id {
			return got[i]
		}
	}
	t.Fatalf("no request with webhook-id %q among %d", id, len(got))
	return receivertest.Received{}
}

func TestNodeReceiverVerifiesSignedSamples(t *testing.T) {
	t.Parallel()
	for _, rc := range receivers {
		t.Run(rc.name, func(t *testing.T) {
			r := rc.start(t, testSecret)
			now := time.Now()
			n := 0
			for _, smp := range hubSamples(t) {
				name, typ, raw := smp.provider, smp.eventType, smp.body
				eventID := fmt.Sprintf("evt_%s_%d", name, n)
				n++
				body := sampleEnvelope(t, name, typ, raw, now)
				d := signed(name+":"+eventID, now, body, testSecret)
				if got := post(t, r, d); got != http.StatusOK {
					t.Errorf("%s %s: status %d, want 200", name, typ, got)
					continue
				}
				rec := lastFor(t, r, d.id)
				sum := sha256.Sum256(body)
				if !rec.VerifiedStd || !rec.VerifiedSvix || rec.Type != name+"."+typ ||
					rec.BodySHA256 != hex.EncodeToString(sum[:]) || rec.Headers["hookhub-provider"] != name || rec.Duplicate {
					t.Errorf("%s %s: received %+v", name, typ, rec)
				}
			}
			if got := r.Accepted(t); got != n {
				t.Errorf("Accepted = %d, want %d", got, n)
			}
		})
	}
}

func TestNodeReceiverRefusesForgeries(t *testing.T) {
	t.Parallel()
	now := time.Now()
	body := sampleEnvelope(t, "paddle", "subscription.created", []byte(`{"id":"sub_1"}`), now)
	other := sampleEnvelope(t, "paddle", "subscription.updated", []byte(`{"id":"sub_2"}`), now)
	tamper := func(d delivery, f func(*delivery)) delivery { f(&d); return d }
	flip := func(sig string) string { // change one base64 character of the signature
		b := []byte(sig)
		i := len(b) - 5
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	a := signed("paddle:evt_a", now, body, testSecret)
	b := signed("paddle:evt_b", now, other, testSecret)
	for _, rc := range receivers {
		t.Run(rc.name, func(t *testing.T) {
			r := rc.start(t, testSecret)
			rotated := rc.start(t, testOldSecret) // knows only the old secret of a rotation
			for _, tc := range []struct {
				name string
				to   receivertest.Receiver
				d    delivery
				want int
			}{
				{"genuine", r, a, http.StatusOK},
				{"tampered body", r, tamper(a, func(d *delivery) { d.body = bytes.Replace(d.body, []byte("sub_1"), []byte("sub_9"), 1) }), http.StatusUnauthorized},
				{"tampered signature", r, tamper(a, func(d *delivery) { d.sig = flip(d.sig) }), http.StatusUnauthorized},
				{"timestamp header changed", r, tamper(a, func(d *delivery) { d.ts = d.ts.Add(time.Second) }), http.StatusUnauthorized},
				{"signed 6 minutes ago", r, signed("paddle:evt_old", now.Add(-6*time.Minute), body, testSecret), http.StatusUnauthorized},
				{"signed 6 minutes ahead", r, signed("paddle:evt_future", now.Add(6*time.Minute), body, testSecret), http.StatusUnauthorized},
				{"id spliced from another message", r, tamper(a, func(d *delivery) { d.id = b.id }), http.StatusUnauthorized},
				{"body spliced from another message", r, tamper(a, func(d *delivery) { d.body = b.body }), http.StatusUnauthorized},
				{"another secret", r, signed("paddle:evt_other", now, body, testOldSecret), http.StatusUnauthorized},
				{"rotation: signed with new and old, receiver knows old", rotated, signed("paddle:evt_rot", now, body, testSecret, testOldSecret), http.StatusOK},
				{"rotation: signed with new only, receiver knows old", rotated, signed("paddle:evt_rot_new", now, body, testSecret), http.StatusUnauthorized},
			} {
				t.Run(tc.name, func(t *testing.T) {
					if got := post(t, tc.to, tc.d); got != tc.want {
						t.Fatalf("status %d, want %d", got, tc.want)
					}
					rec := lastFor(t, tc.to, tc.d.id)
					ok := tc.want == http.StatusOK
					if rec.VerifiedStd != ok || rec.VerifiedSvix != ok || rec.Status != tc.want {
						t.Fatalf("received %+v, want verified %v by both", rec, ok)
					}
				})
			}
			if got := r.Accepted(t); got != 1 {
				t.Errorf("Accepted = %d, want 1 (only the genuine delivery)", got)
			}
		})
	}
}

// TestNodeReceiverControl checks that both receivers follow Control alike:
// failures per id, deduplication, gone.
func TestNodeReceiverControl(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, rc := range receivers {
		t.Run(rc.name, func(t *testing.T) {
			r := rc.start(t, testSecret)
			body := sampleEnvelope(t, "stripe", "invoice.paid", []byte(`{"id":"in_1"}`), now)
			a := signed("stripe:evt_a", now, body, testSecret)
			b := signed("stripe:evt_b", now, body, testSecret)
			r.Control(t, receivertest.Control{FailFirst: 2, FailStatus: http.StatusServiceUnavailable})
			var got []int
			for _, d := range []delivery{a, b, a, a, b, b, a} {
				got = append(got, post(t, r, d))
			}
			want := []int{503, 503, 503, 200, 503, 200, 200}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("statuses %v, want %v", got, want)
			}
			if n := r.Accepted(t); n != 2 {
				t.Fatalf("Accepted = %d, want 2", n)
			}
			if rec := lastFor(t, r, a.id); !rec.Duplicate {
				t.Fatalf("the third 2xx of %s is not flagged duplicate: %+v", a.id, rec)
			}
			r.Control(t, receivertest.Control{Gone: true})
			c := signed("stripe:evt_c", now, body, testSecret)
			if s := post(t, r, c); s != http.StatusGone {
				t.Fatalf("gone: status %d, want 410", s)
			}
			r.Control(t, receivertest.Control{Status: http.StatusAccepted})
			if s := post(t, r, c); s != http.StatusAccepted {
				t.Fatalf("status %d, want 202", s)
			}
			if n, recs := r.Accepted(t), r.Received(t); n != 3 || len(recs) != 9 {
				t.Fatalf("Accepted = %d (want 3), %d requests (want 9)", n, len(recs))
			}
		})
	}
}
