package destination

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks header names (standardwebhooks.com, v1).
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// Limits on a signing secret's key, after its whsec_ prefix and base64:
// the Standard Webhooks specification asks for 24 to 64 bytes.
const (
	MinSecretLen = 24
	MaxSecretLen = 64
)

// ErrSecret is wrapped by ParseSecret's errors. They never contain the
// secret.
var ErrSecret = errors.New("invalid signing secret")

// Secret is a signing key: the bytes a "whsec_..." secret decodes to.
type Secret []byte

// String never prints the key.
func (Secret) String() string { return "whsec_[redacted]" }

// GoString never prints the key.
func (Secret) GoString() string { return "destination.Secret([redacted])" }

// ParseSecret decodes a Standard Webhooks secret: "whsec_" followed by the
// standard base64 of a key of MinSecretLen to MaxSecretLen bytes. The
// official libraries (standardwebhooks, svix) take the same string.
func ParseSecret(s string) (Secret, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "whsec_")
	if !ok {
		return nil, fmt.Errorf("%w: must start with whsec_", ErrSecret)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w: not whsec_ followed by standard base64", ErrSecret)
	}
	if len(key) < MinSecretLen || len(key) > MaxSecretLen {
		return nil, fmt.Errorf("%w: the key is %d bytes, want %d to %d", ErrSecret, len(key), MinSecretLen, MaxSecretLen)
	}
	return Secret(key), nil
}

// Sign returns the webhook-signature header value for a message: one
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>" per secret, separated
// by spaces, in the order given (during a rotation a receiver that knows
// either secret verifies it). ts is sent as Unix seconds.
func Sign(id string, ts time.Time, body []byte, secrets []Secret) string {
	prefix := id + "." + strconv.FormatInt(ts.Unix(), 10) + "."
	sigs := make([]string, len(secrets))
	for i, key := range secrets {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(prefix))
		mac.Write(body)
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	return strings.Join(sigs, " ")
}
