package provider

import (
	"cmp"
	"fmt"
	"net/http"
	"time"
)

// Header names of the Standard Webhooks specification, in canonical form.
// Matching is case-insensitive; senders use lower case.
const (
	WebhookIDHeader        = "Webhook-Id"
	WebhookTimestampHeader = "Webhook-Timestamp"
	WebhookSignatureHeader = "Webhook-Signature"
)

// StandardWebhooksName is the name the registry builds a StandardWebhooks
// under. Operators usually mount it under names of their own choosing
// instead (Options.Name).
const StandardWebhooksName = "standard-webhooks"

// StandardWebhooksDefaultTolerance is the timestamp tolerance
// NewStandardWebhooks uses when given 0: the reference libraries' five
// minutes, applied to both past and future timestamps.
const StandardWebhooksDefaultTolerance = 5 * time.Minute

// StandardWebhooks verifies deliveries signed under the Standard Webhooks
// specification (standardwebhooks.com, v1): the Svix scheme under
// webhook-* header names. Senders such as Resend use it; the operator
// mounts one StandardWebhooks per sender, under a name of their choice.
//
// The webhook-signature header holds space-separated "v1,<base64>"
// entries; each is the standard base64 HMAC-SHA256 of
// "<webhook-id>.<webhook-timestamp>.<raw body>", keyed with the
// base64-decoded secret (after an optional whsec_ prefix). Asymmetric
// "v1a," (ed25519) entries, other versions and malformed entries are
// skipped, never compared; every v1 entry and every secret is tried. The
// event id is the webhook-id header, the type the body's "type", and
// OccurredAt the body's "timestamp" (RFC 3339) when present. It names no
// entities: the specification leaves the payload's shape to each sender,
// and no convention names the objects an event is about.
//
// A StandardWebhooks is safe for concurrent use. It implements Provider
// and Signer.
type StandardWebhooks struct {
	*svixScheme
}

var (
	_ Provider = (*StandardWebhooks)(nil)
	_ Signer   = (*StandardWebhooks)(nil)
)

// NewStandardWebhooks returns a Standard Webhooks verifier named o.Name
// (the path segment in POST /webhooks/{name} and the subject prefix, an
// operator's choice: HUB_STANDARD_PROVIDERS=resend,acme builds "resend"
// and "acme"; empty means StandardWebhooksName) that accepts a signature
// made with any of secrets (several during a rotation; the first one
// signs in Sign). A secret is "whsec_" followed by the standard base64 of
// the key; the prefix may be omitted. o.Tolerance bounds
// |now - webhook-timestamp|; 0 means StandardWebhooksDefaultTolerance. It
// fails when the name is not a valid provider name (see ValidName) or is
// the name of another built-in provider, secrets is empty, a secret is not
// valid base64 or decodes to an empty key (the error names the secret's
// index, never its value), or the tolerance is negative.
func NewStandardWebhooks(secrets []string, o Options) (*StandardWebhooks, error) {
	name := cmp.Or(o.Name, StandardWebhooksName)
	if !ValidName(name) {
		return nil, fmt.Errorf("standard webhooks: invalid provider name %q: want 1 to 32 of [a-z0-9_-], starting with a letter or digit", name)
	}
	if _, builtin := lookup(name); builtin && name != StandardWebhooksName {
		return nil, fmt.Errorf("standard webhooks: %q is the name of a built-in provider", name)
	}
	s, err := newSvixScheme(name, "webhook", secrets, o.Tolerance)
	if err != nil {
		return nil, err
	}
	return &StandardWebhooks{s}, nil
}

// Verify authenticates a Standard Webhooks delivery and returns its event.
// The signature is checked before the timestamp, so a forged delivery
// reports ErrInvalidSignature and an authentic but stale (or future) one
// ErrTimestamp.
func (s *StandardWebhooks) Verify(r Request) (Event, error) {
	return s.verify(r.Header, r.Body, r.Now, standardOccurredAt, nil)
}

func standardOccurredAt(t svixTime) time.Time { return t.rfc3339 }

// Sign returns webhook-id (eventID), webhook-timestamp (now) and
// webhook-signature headers for body, signed with the first secret, plus
// Content-Type: application/json. eventID must be a valid webhook-id:
// non-empty, at most 255 bytes, without '.' or control characters. The
// target is "/webhooks/<name>"; the type is in the body, so eventType is
// unused.
func (s *StandardWebhooks) Sign(eventID, eventType string, body []byte, now time.Time) (http.Header, string, error) {
	h, err := s.sign(eventID, body, now)
	if err != nil {
		return nil, "", err
	}
	h.Set("Content-Type", "application/json")
	return h, "/webhooks/" + s.name, nil
}
