package provider

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
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

// clerkSecretPrefix prefixes Svix endpoint secrets. It is optional.
const clerkSecretPrefix = "whsec_"

// Clerk verifies Clerk webhooks, which Clerk delivers through Svix (the
// Standard Webhooks HMAC scheme).
//
// The svix-signature header holds space-separated "v1,<base64>" entries;
// each is the standard base64 HMAC-SHA256 of "<svix-id>.<svix-timestamp>.<raw
// body>", keyed with the base64-decoded secret (after an optional whsec_
// prefix). Entries of other versions (v1a, v2, …) and malformed entries are
// ignored; every entry and every secret is tried. The event id is the
// svix-id header (Clerk's body has none), the type the body's "type".
//
// A Clerk is safe for concurrent use. It implements Provider and Sender.
type Clerk struct {
	keys      []*macKey
	tolerance time.Duration
}

var (
	_ Provider = (*Clerk)(nil)
	_ Sender   = (*Clerk)(nil)
)

// NewClerk returns a Clerk verifier that accepts a signature made with any
// of secrets (several during a rotation; the first one signs in Sign). A
// secret is "whsec_" followed by the standard base64 of the key; the prefix
// may be omitted. tolerance bounds |now - svix-timestamp|; 0 means
// ClerkDefaultTolerance. It fails when secrets is empty, a secret is not
// valid base64 or decodes to an empty key (the error names the secret's
// index, never its value), or tolerance is negative.
func NewClerk(secrets []string, tolerance time.Duration) (*Clerk, error) {
	if len(secrets) == 0 {
		return nil, errors.New("clerk: no secret configured")
	}
	if tolerance < 0 {
		return nil, fmt.Errorf("clerk: negative tolerance %v", tolerance)
	}
	if tolerance == 0 {
		tolerance = ClerkDefaultTolerance
	}
	c := &Clerk{tolerance: tolerance, keys: make([]*macKey, len(secrets))}
	for i, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, clerkSecretPrefix))
		if err != nil {
			return nil, fmt.Errorf("clerk: secret %d is not whsec_ followed by standard base64", i)
		}
		if len(key) == 0 {
			return nil, fmt.Errorf("clerk: secret %d decodes to an empty key", i)
		}
		c.keys[i] = newMACKey(key)
	}
	return c, nil
}

// Name returns "clerk".
func (c *Clerk) Name() string { return "clerk" }

// Tolerance returns the timestamp tolerance in effect.
func (c *Clerk) Tolerance() time.Duration { return c.tolerance }

// Static errors of the Clerk verifier.
var (
	errClerkNoID         = errSig("missing svix-id header")
	errClerkNoTS         = errSig("missing svix-timestamp header")
	errClerkNoSig        = errSig("missing svix-signature header")
	errClerkLongID       = errSig("svix-id is longer than 255 bytes")
	errClerkBadID        = errSig("svix-id contains '.' or a control character")
	errClerkBadTS        = errSig("svix-timestamp is not a unix time")
	errClerkNoV1         = errSig("svix-signature has no well-formed v1 entry")
	errClerkMismatch     = errSig("no v1 signature matches any secret")
	errClerkNoType       = errPayload("body has no type")
	errClerkLongType     = errPayload("type is longer than 128 bytes")
	errClerkBadTypeChars = errPayload("type contains control characters")
)

// Verify authenticates a Clerk (Svix) delivery and returns its event. The
// signature is checked before the timestamp, so a forged delivery reports
// ErrInvalidSignature and an authentic but stale (or future) one
// ErrTimestamp.
func (c *Clerk) Verify(h Header, body []byte, now time.Time) (Event, error) {
	id := h.Get(SvixIDHeader)
	ts := h.Get(SvixTimestampHeader)
	header := h.Get(SvixSignatureHeader)
	switch {
	case id == "":
		return Event{}, errClerkNoID
	case ts == "":
		return Event{}, errClerkNoTS
	case header == "":
		return Event{}, errClerkNoSig
	case len(id) > maxEventIDLen:
		return Event{}, errClerkLongID
	case !validSvixID(id):
		return Event{}, errClerkBadID
	}
	unix, ok := parseUnixDigits(ts)
	if !ok {
		return Event{}, errClerkBadTS
	}
	var buf [4][macSize]byte
	sigs := parseSvixSignatures(header, buf[:0])
	if len(sigs) == 0 {
		return Event{}, errClerkNoV1
	}
	if !authenticate(c.keys, sigs, body, '.', id, ts) {
		return Event{}, errClerkMismatch
	}
	signedAt := time.Unix(unix, 0)
	if !withinTolerance(signedAt, now, c.tolerance) {
		return Event{}, timestampError(signedAt, now, c.tolerance)
	}
	ev, err := parseClerkBody(body)
	if err != nil {
		return Event{}, err
	}
	ev.ID = id
	ev.Signature = header
	ev.SignedAt = signedAt
	return ev, nil
}

// validSvixID reports whether id can be part of the signed string: it must
// not contain '.', the separator, which would make "<id>.<ts>.<body>"
// ambiguous, nor control characters, since it becomes a message header.
func validSvixID(id string) bool {
	for i := 0; i < len(id); i++ {
		if c := id[i]; c == '.' || c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// svixB64 decodes signatures strictly, so that an accepted entry is the
// canonical encoding of its MAC.
var svixB64 = base64.StdEncoding.Strict()

// svixSigLen is the length of a base64 HMAC-SHA256 with padding.
const svixSigLen = 44

// parseSvixSignatures parses an svix-signature header value: entries
// separated by spaces, each "<version>,<base64>". It appends to dst the MAC
// of every v1 entry whose signature is the canonical standard base64 of 32
// bytes (at most maxSignatures of them), skipping other versions and
// malformed entries. It never fails; no well-formed v1 entry yields dst
// unchanged.
func parseSvixSignatures(header string, dst [][macSize]byte) [][macSize]byte {
	start := len(dst)
	for rest := header; rest != "" && len(dst)-start < maxSignatures; {
		var entry string
		entry, rest, _ = strings.Cut(rest, " ")
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" || len(sig) != svixSigLen {
			continue
		}
		var src [svixSigLen]byte
		var mac [macSize + 1]byte // DecodedLen(44) is 33
		copy(src[:], sig)
		if n, err := svixB64.Decode(mac[:], src[:]); err != nil || n != macSize {
			continue
		}
		dst = append(dst, [macSize]byte(mac[:macSize]))
	}
	return dst
}

// clerkBody is the part of a Clerk event the hub reads.
type clerkBody struct {
	Type      string        `json:"type"`
	Timestamp lenientMillis `json:"timestamp"`
}

func parseClerkBody(body []byte) (Event, error) {
	var b clerkBody
	if err := json.Unmarshal(body, &b); err != nil {
		return Event{}, jsonPayloadError(err)
	}
	switch {
	case b.Type == "":
		return Event{}, errClerkNoType
	case len(b.Type) > maxEventTypeLen:
		return Event{}, errClerkLongType
	case hasControl(b.Type):
		return Event{}, errClerkBadTypeChars
	}
	return Event{Type: b.Type, OccurredAt: b.Timestamp.t}, nil
}

// lenientMillis decodes an optional integer count of milliseconds since the
// Unix epoch; anything else (null, a string, a fraction, 0) leaves it zero
// instead of failing the body.
type lenientMillis struct{ t time.Time }

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (l *lenientMillis) UnmarshalJSON(b []byte) error {
	if ms, ok := parseUnixDigits(string(b)); ok && ms > 0 {
		l.t = time.UnixMilli(ms)
	}
	return nil
}

// clerkInstanceID is the instance every sample comes from.
var clerkInstanceID = clerkID("ins", "instance")

// clerkID derives a Clerk-style id ("<prefix>_" + 27 base62 characters)
// from seed, deterministically.
func clerkID(prefix, seed string) string {
	return prefix + "_" + derive(prefix+"/"+seed, 27, base62)
}

// Sample returns a Clerk event body: data, event_attributes, instance_id,
// object "event", timestamp (now, in milliseconds) and type. When data is
// nil it builds a realistic entity: a user for user.* types (with names and
// a primary email address; user.deleted gets Clerk's deleted-object stub),
// a session for session.*, an organization for organization.*, and a small
// generic object otherwise. Derived ids depend only on eventID, so the
// output is deterministic given its inputs. data, when not nil, must be
// valid JSON.
func (c *Clerk) Sample(eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	if eventID == "" || eventType == "" {
		return nil, errors.New("clerk: sample needs an event id and type")
	}
	if data == nil {
		var err error
		if data, err = json.Marshal(clerkSampleData(eventID, eventType, now)); err != nil {
			return nil, err
		}
	} else if !json.Valid(data) {
		return nil, errors.New("clerk: sample data is not valid JSON")
	}
	type httpRequest struct {
		ClientIP  string `json:"client_ip"`
		UserAgent string `json:"user_agent"`
	}
	type attributes struct {
		HTTPRequest httpRequest `json:"http_request"`
	}
	return json.Marshal(struct {
		Data            json.RawMessage `json:"data"`
		EventAttributes attributes      `json:"event_attributes"`
		InstanceID      string          `json:"instance_id"`
		Object          string          `json:"object"`
		Timestamp       int64           `json:"timestamp"`
		Type            string          `json:"type"`
	}{
		Data: data,
		EventAttributes: attributes{httpRequest{
			ClientIP:  "192.0.2.10",
			UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
		}},
		InstanceID: clerkInstanceID,
		Object:     "event",
		Timestamp:  now.UnixMilli(),
		Type:       eventType,
	})
}

func clerkSampleData(eventID, eventType string, now time.Time) any {
	entity, action, _ := strings.Cut(eventType, ".")
	ms := now.UnixMilli()
	created := now.Add(-time.Minute).UnixMilli()
	switch entity {
	case "user":
		userID := clerkID("user", eventID)
		if action == "deleted" {
			return map[string]any{"deleted": true, "id": userID, "object": "user"}
		}
		emailID := clerkID("idn", eventID)
		return map[string]any{
			"id":                       userID,
			"object":                   "user",
			"external_id":              nil,
			"username":                 nil,
			"first_name":               "Ada",
			"last_name":                "Lovelace",
			"image_url":                "https://img.clerk.com/eyJ0eXBlIjoiZGVmYXVsdCJ9",
			"has_image":                false,
			"primary_email_address_id": emailID,
			"primary_phone_number_id":  nil,
			"primary_web3_wallet_id":   nil,
			"email_addresses": []any{map[string]any{
				"id":            emailID,
				"object":        "email_address",
				"email_address": sampleEmail(eventID),
				"linked_to":     []any{},
				"verification":  map[string]any{"status": "verified", "strategy": "email_code", "attempts": 1, "expire_at": nil},
			}},
			"phone_numbers":      []any{},
			"web3_wallets":       []any{},
			"external_accounts":  []any{},
			"password_enabled":   true,
			"two_factor_enabled": false,
			"public_metadata":    map[string]any{},
			"private_metadata":   map[string]any{},
			"unsafe_metadata":    map[string]any{},
			"last_sign_in_at":    nil,
			"created_at":         created,
			"updated_at":         ms,
		}
	case "session":
		return map[string]any{
			"id":             clerkID("sess", eventID),
			"object":         "session",
			"user_id":        clerkID("user", eventID),
			"client_id":      clerkID("client", eventID),
			"status":         clerkSessionStatus(action),
			"last_active_at": ms,
			"expire_at":      now.Add(7 * 24 * time.Hour).UnixMilli(),
			"abandon_at":     now.Add(30 * 24 * time.Hour).UnixMilli(),
			"created_at":     created,
			"updated_at":     ms,
		}
	case "organization":
		return map[string]any{
			"id":                      clerkID("org", eventID),
			"object":                  "organization",
			"name":                    "Analytical Engines Ltd",
			"slug":                    "analytical-engines",
			"members_count":           1,
			"max_allowed_memberships": 5,
			"public_metadata":         map[string]any{},
			"private_metadata":        map[string]any{},
			"created_by":              clerkID("user", eventID),
			"created_at":              created,
			"updated_at":              ms,
		}
	default:
		return map[string]any{
			"id":         clerkID(entityPrefix(entity), eventID),
			"object":     entity,
			"created_at": created,
			"updated_at": ms,
		}
	}
}

// clerkSessionStatus maps a session.* action to the session's status.
func clerkSessionStatus(action string) string {
	switch action {
	case "ended", "removed", "revoked", "expired", "abandoned":
		return action
	}
	return "active"
}

// Sign returns svix-id (eventID), svix-timestamp (now) and svix-signature
// headers for body, signed with the first secret. eventID must be a valid
// svix-id: non-empty, at most 255 bytes, without '.' or control characters.
func (c *Clerk) Sign(eventID string, body []byte, now time.Time) (http.Header, error) {
	if eventID == "" || len(eventID) > maxEventIDLen || !validSvixID(eventID) {
		return nil, errors.New("clerk: event id is not a valid svix-id")
	}
	if now.Unix() < 0 {
		return nil, errors.New("clerk: cannot sign before 1970")
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	var mac [macSize]byte
	c.keys[0].sum(&mac, body, '.', eventID, ts)
	h := http.Header{}
	h.Set(SvixIDHeader, eventID)
	h.Set(SvixTimestampHeader, ts)
	h.Set(SvixSignatureHeader, "v1,"+base64.StdEncoding.EncodeToString(mac[:]))
	return h, nil
}
