package receivertest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidSignature is Verify's answer to a request that no signature
// of its webhook-signature header verifies.
var ErrInvalidSignature = errors.New("receivertest: no valid signature")

// Tolerance is how far a request's timestamp may be from now, as the
// official libraries allow.
const Tolerance = 5 * time.Minute

// Verify checks a Standard Webhooks request the way the official libraries
// do, written apart from the destination's signer so that it checks it:
// the webhook-id, webhook-timestamp and webhook-signature headers (or
// their svix-* spellings), an HMAC-SHA256 of "id.timestamp.body" under the
// whsec_ secret in one of the space-separated "v1,<base64>" signatures,
// and a timestamp within Tolerance of now.
func Verify(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("receivertest: secret: %w", err)
	}
	header := func(name string) string {
		if v := h.Get("webhook-" + name); v != "" {
			return v
		}
		return h.Get("svix-" + name)
	}
	id, ts := header("id"), header("timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil || now.Sub(time.Unix(sec, 0)).Abs() > Tolerance {
		return ErrInvalidSignature
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(header("signature")) {
		version, b64, _ := strings.Cut(sig, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if version == "v1" && err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrInvalidSignature
}
