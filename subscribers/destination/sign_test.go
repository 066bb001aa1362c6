package destination_test

import (
	"errors"
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
