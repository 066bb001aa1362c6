package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
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
// OccurredAt the body's "timestamp" (RFC 3339) when present.
//
// A StandardWebhooks is safe for concurrent use. It implements Provider
// and Sender.
type StandardWebhooks struct {
	svix *svixScheme
}

var (
	_ Provider = (*StandardWebhooks)(nil)
	_ Sender   = (*StandardWebhooks)(nil)
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
	name := o.Name
	if name == "" {
		name = StandardWebhooksName
	}
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
	return &StandardWebhooks{svix: s}, nil
}

// Name returns the name the verifier was built with.
func (s *StandardWebhooks) Name() string { return s.svix.name }

// Tolerance returns the timestamp tolerance in effect.
func (s *StandardWebhooks) Tolerance() time.Duration { return s.svix.tolerance }

// Verify authenticates a Standard Webhooks delivery and returns its event.
// The signature is checked before the timestamp, so a forged delivery
// reports ErrInvalidSignature and an authentic but stale (or future) one
// ErrTimestamp.
func (s *StandardWebhooks) Verify(r Request) (Event, error) {
	h, body, now := r.Header, r.Body, r.Now
	return s.svix.verify(h, body, now, standardOccurredAt)
}

func standardOccurredAt(t svixTime) time.Time { return t.rfc3339 }

// Sign returns webhook-id (eventID), webhook-timestamp (now) and
// webhook-signature headers for body, signed with the first secret, plus
// Content-Type: application/json. eventID must be a valid webhook-id:
// non-empty, at most 255 bytes, without '.' or control characters. The
// target is "/webhooks/<name>"; the type is in the body, so eventType is
// unused.
func (s *StandardWebhooks) Sign(eventID, eventType string, body []byte, now time.Time) (http.Header, string, error) {
	h, err := s.svix.sign(eventID, body, now)
	if err != nil {
		return nil, "", err
	}
	h.Set("Content-Type", "application/json")
	return h, "/webhooks/" + s.svix.name, nil
}

// Sample returns a body in the shape the specification recommends:
// {"type", "timestamp" (now, RFC 3339 with microseconds), "data"}. When
// data is nil it builds a realistic object: an email for email.* types (in
// the style of Resend), a contact for contact.*, and a small generic
// object otherwise. Derived ids depend only on eventID, so the output is
// deterministic given its inputs. data, when not nil, must be valid JSON.
func (s *StandardWebhooks) Sample(eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	if eventID == "" || eventType == "" {
		return nil, fmt.Errorf("%s: sample needs an event id and type", s.svix.name)
	}
	if data == nil {
		var err error
		if data, err = json.Marshal(standardSampleData(eventID, eventType, now)); err != nil {
			return nil, err
		}
	} else if !json.Valid(data) {
		return nil, errors.New(s.svix.name + ": sample data is not valid JSON")
	}
	return json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{eventType, paddleTime(now), data})
}

// uuidLike derives a lowercase RFC 4122-shaped (version 4) identifier from
// seed, deterministically.
func uuidLike(seed string) string {
	h := derive("uuid/"+seed, 32, "0123456789abcdef")
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}

func standardSampleData(eventID, eventType string, now time.Time) any {
	entity, action, _ := strings.Cut(eventType, ".")
	created := now.Add(-2 * time.Second).UTC().Format("2006-01-02 15:04:05.000000+00")
	switch entity {
	case "email":
		return map[string]any{
			"email_id":     uuidLike("email/" + eventID),
			"created_at":   created,
			"from":         "Analytical Engines <onboarding@example.com>",
			"to":           []string{sampleEmail(eventID)},
			"subject":      "Your receipt for order #" + derive("order/"+eventID, 6, "0123456789"),
			"broadcast_id": nil,
			"headers": []any{
				map[string]any{"name": "X-Entity-Ref-ID", "value": uuidLike("ref/" + eventID)},
			},
			"tags": map[string]any{"category": "receipt", "plan": "pro"},
			"click": func() any {
				if action != "clicked" {
					return nil
				}
				return map[string]any{
					"ipAddress": "192.0.2.10",
					"link":      "https://example.com/orders?utm_source=email",
					"timestamp": paddleTime(now),
					"userAgent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
				}
			}(),
			"bounce": func() any {
				if action != "bounced" {
					return nil
				}
				return map[string]any{
					"message": "The recipient's mailbox does not exist.",
					"subType": "General",
					"type":    "Permanent",
				}
			}(),
		}
	case "contact":
		return map[string]any{
			"id":           uuidLike("contact/" + eventID),
			"audience_id":  uuidLike("audience/" + eventID),
			"segment_ids":  []string{uuidLike("segment/" + eventID)},
			"created_at":   created,
			"updated_at":   paddleTime(now),
			"email":        sampleEmail(eventID),
			"first_name":   "Ada",
			"last_name":    "Lovelace",
			"unsubscribed": action == "deleted",
			"properties":   map[string]any{"company": "Analytical Engines Ltd", "plan": "pro", "seats": 5},
		}
	default:
		return map[string]any{
			"id":         uuidLike(entity + "/" + eventID),
			"object":     entity,
			"status":     "active",
			"created_at": created,
			"updated_at": paddleTime(now),
			"metadata":   map[string]any{"source": "hookhub", "note": "generic sample; pass --data for a real payload"},
		}
	}
}
