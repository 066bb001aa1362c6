package provider

import (
	"net/http"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub"
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
	*svixScheme
}

var (
	_ Provider = (*Clerk)(nil)
	_ Signer   = (*Clerk)(nil)
)

// NewClerk returns a Clerk verifier that accepts a signature made with any
// of secrets (several during a rotation; the first one signs in Sign). A
// secret is "whsec_" followed by the standard base64 of the key; the prefix
// may be omitted. o.Tolerance bounds |now - svix-timestamp|; 0 means
// ClerkDefaultTolerance. Its Name is "clerk". It fails when secrets is empty, a secret is not
// valid base64 or decodes to an empty key (the error names the secret's
// index, never its value), or the tolerance is negative.
func NewClerk(secrets []string, o Options) (*Clerk, error) {
	s, err := newSvixScheme("clerk", "svix", secrets, o.Tolerance)
	if err != nil {
		return nil, err
	}
	return &Clerk{s}, nil
}

// Verify authenticates a Clerk (Svix) delivery and returns its event. The
// signature is checked before the timestamp, so a forged delivery reports
// ErrInvalidSignature and an authentic but stale (or future) one
// ErrTimestamp. OccurredAt comes from the body's "timestamp", integer
// milliseconds.
func (c *Clerk) Verify(r Request) (Event, error) {
	return c.verify(r.Header, r.Body, r.Now, clerkOccurredAt, clerkEntities)
}

func clerkOccurredAt(t svixTime) time.Time { return t.millis }

// clerkDataMembers are the members of an event's data that name entities.
var clerkDataMembers = []string{"id", "user_id", "organization_id", "organization", "public_user_data"}

// clerkEntities returns the entities of a Clerk event of type typ: for
// user.* the user (data.id, "user"); for session.* the session (data.id,
// "session") and its user (data.user_id); for organization.* the
// organization (data.id, "organization"); for organizationMembership.*
// the organization (data.organization.id) and the member
// (data.public_user_data.user_id, "user"); and for any event,
// data.user_id as "user" and data.organization_id as "organization"
// (email.created, organizationInvitation.*, …).
func clerkEntities(typ string, body []byte) []hub.Entity {
	family, _, _ := strings.Cut(typ, ".")
	var raw [5][]byte
	jsonMembers(jsonMember(body, "data"), clerkDataMembers, raw[:])
	var out []hub.Entity
	if id, ok := jsonString(raw[0]); ok {
		switch family {
		case "user", "session", "organization":
			out = addEntity(out, family, id)
		}
	}
	if family == "organizationMembership" {
		if org, ok := jsonString(jsonValue(jsonMember(raw[3], "id"))); ok {
			out = addEntity(out, "organization", org)
		}
		if user, ok := jsonString(jsonValue(jsonMember(raw[4], "user_id"))); ok {
			out = addEntity(out, "user", user)
		}
	}
	if user, ok := jsonString(raw[1]); ok {
		out = addEntity(out, "user", user)
	}
	if org, ok := jsonString(raw[2]); ok {
		out = addEntity(out, "organization", org)
	}
	return out
}

// Sign returns svix-id (eventID), svix-timestamp (now) and svix-signature
// headers for body, signed with the first secret. eventID must be a valid
// svix-id: non-empty, at most 255 bytes, without '.' or control characters.
// The target is "/webhooks/clerk"; the type is in the body, so eventType
// is unused.
func (c *Clerk) Sign(eventID, eventType string, body []byte, now time.Time) (http.Header, string, error) {
	h, err := c.sign(eventID, body, now)
	if err != nil {
		return nil, "", err
	}
	return h, "/webhooks/clerk", nil
}
