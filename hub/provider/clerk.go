package provider

import (
	"net/http"
	"time"
)

// Header names Clerk (through Svix) signs deliveries with, in canonical
// form. Matching is case-insensitive; Clerk sends them in lower case.
const (
	SvixIDHeader        = "Svix-Id"
	SvixTimestampHeader = "Svix-Timestamp"
	SvixSignatureHeader = "Svix-Signature"
)

// ClerkDefaultTolerance is the timestamp tolerance NewClerk uses when given
// 0: Svix's own five minutes, applied to both past and future timestamps.
const ClerkDefaultTolerance = 5 * time.Minute

// Clerk verifies Clerk webhooks, which Clerk delivers through Svix (the
// Standard Webhooks HMAC scheme, under svix-* header names).
//
// The svix-signature header holds space-separated "v1,<base64>" entries;
// each is the standard base64 HMAC-SHA256 of "<svix-id>.<svix-timestamp>.<raw
// body>", keyed with the base64-decoded secret (after an optional whsec_
// prefix). Entries of other versions (v1a, v2, …) and malformed entries are
// ignored; every entry and every secret is tried. The event id is the
// svix-id header (Clerk's body has none), the type the body's "type".
//
// A Clerk is safe for concurrent use. It implements Provider and Signer.
type Clerk struct {
	svix *svixScheme
}

var (
	_ Provider = (*Clerk)(nil)
	_ Signer   = (*Clerk)(nil)
)

// NewClerk returns a Clerk verifier that accepts a signature made with any
// of secrets (several during a rotation; the first one signs in Sign). A
// secret is "whsec_" followed by the standard base64 of the key; the prefix
// may be omitted. o.Tolerance bounds |now - svix-timestamp|; 0 means
// ClerkDefaultTolerance. It fails when secrets is empty, a secret is not
// valid base64 or decodes to an empty key (the error names the secret's
// index, never its value), or the tolerance is negative.
func NewClerk(secrets []string, o Options) (*Clerk, error) {
	s, err := newSvixScheme("clerk", "svix", secrets, o.Tolerance)
	if err != nil {
		return nil, err
	}
	return &Clerk{svix: s}, nil
}

// Name returns "clerk".
func (c *Clerk) Name() string { return "clerk" }

// Tolerance returns the timestamp tolerance in effect.
func (c *Clerk) Tolerance() time.Duration { return c.svix.tolerance }

// Verify authenticates a Clerk (Svix) delivery and returns its event. The
// signature is checked before the timestamp, so a forged delivery reports
// ErrInvalidSignature and an authentic but stale (or future) one
// ErrTimestamp. OccurredAt comes from the body's "timestamp", integer
// milliseconds.
func (c *Clerk) Verify(r Request) (Event, error) {
	h, body, now := r.Header, r.Body, r.Now
	return c.svix.verify(h, body, now, clerkOccurredAt)
}

func clerkOccurredAt(t svixTime) time.Time { return t.millis }

// Sign returns svix-id (eventID), svix-timestamp (now) and svix-signature
// headers for body, signed with the first secret. eventID must be a valid
// svix-id: non-empty, at most 255 bytes, without '.' or control characters.
// The target is "/webhooks/clerk"; the type is in the body, so eventType
// is unused.
func (c *Clerk) Sign(eventID, eventType string, body []byte, now time.Time) (http.Header, string, error) {
	h, err := c.svix.sign(eventID, body, now)
	if err != nil {
		return nil, "", err
	}
	return h, "/webhooks/clerk", nil
}
