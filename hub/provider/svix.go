package provider

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub"
)

// svixSecretPrefix prefixes Svix and Standard Webhooks secrets. It is
// optional.
const svixSecretPrefix = "whsec_"

// svixDefaultTolerance is Svix's and the Standard Webhooks libraries' five
// minutes, applied to both past and future timestamps.
const svixDefaultTolerance = 5 * time.Minute

// svixScheme is the Svix / Standard Webhooks HMAC scheme, shared by Clerk
// (which signs under svix-* header names) and StandardWebhooks (webhook-*).
//
// Both spellings are read, whichever the provider signs with, by the rule
// of the official svix library (svix-webhooks javascript/src/webhook.ts,
// npm svix 1.x and 2.x): each of the three headers is taken from its svix-
// name when that is present and from its webhook- name otherwise, one
// header at a time, so a delivery may mix spellings and svix-* wins when
// both are sent. (Svix-powered senders such as Resend send svix-*; the
// Standard Webhooks libraries send webhook-*.) The one difference: an
// empty svix-* header counts as absent here (Header cannot tell the two
// apart), where the library would take the empty value and refuse.
//
// The signature header holds space-separated "v1,<base64>" entries; each
// is the standard base64 HMAC-SHA256 of "<id>.<timestamp>.<raw body>",
// keyed with the base64-decoded secret (after an optional whsec_ prefix).
// Entries of other versions (v1a is ed25519, v2, …) and malformed entries
// are ignored; every entry and every secret is tried. The event id is the
// id header, the type the body's "type".
//
// A svixScheme is immutable once built, hence safe for concurrent use.
type svixScheme struct {
	name      string // provider name, also the prefix of constructor errors
	keys      []*macKey
	tolerance time.Duration
	idHeader  string // canonical header names Sign writes
	tsHeader  string
	sigHeader string
}

// Name returns the provider's name: the name the verifier was built with.
func (s *svixScheme) Name() string { return s.name }

// Tolerance returns the timestamp tolerance in effect.
func (s *svixScheme) Tolerance() time.Duration { return s.tolerance }

// The header names Verify reads, in canonical form: for each header, the
// svix- spelling first, then the webhook- one (firstHeader).
var (
	svixIDHeaders  = [2]string{"Svix-Id", "Webhook-Id"}
	svixTSHeaders  = [2]string{"Svix-Timestamp", "Webhook-Timestamp"}
	svixSigHeaders = [2]string{"Svix-Signature", "Webhook-Signature"}
)

// firstHeader returns h's value of name, or else of other (the Svix and
// Standard Webhooks spellings, Shopify's classic and unprefixed names).
// It looks other up only when name is absent: it runs on every delivery.
func firstHeader(h Header, name, other string) string {
	if v := h.Get(name); v != "" {
		return v
	}
	return h.Get(other)
}

// Static errors of the Svix scheme, naming both spellings.
var (
	errSvixNoID     = errSig("missing svix-id/webhook-id header")
	errSvixNoTS     = errSig("missing svix-timestamp/webhook-timestamp header")
	errSvixNoSig    = errSig("missing svix-signature/webhook-signature header")
	errSvixLongID   = errSig("svix-id/webhook-id is longer than 255 bytes")
	errSvixBadID    = errSig("svix-id/webhook-id contains '.' or a control character")
	errSvixBadTS    = errSig("svix-timestamp/webhook-timestamp is not a unix time")
	errSvixNoV1     = errSig("svix-signature/webhook-signature has no well-formed v1 entry")
	errSvixMismatch = errSig("no v1 signature matches any secret")
)

// newSvixScheme builds the scheme for provider name, which signs under
// <label>-id, <label>-timestamp and <label>-signature ("svix", "webhook")
// and verifies under both spellings.
// See NewClerk for the rules on secrets and tolerance.
func newSvixScheme(name, label string, secrets []string, tolerance time.Duration) (*svixScheme, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%s: no secret configured", name)
	}
	tolerance, err := timestampTolerance(name, tolerance, svixDefaultTolerance)
	if err != nil {
		return nil, err
	}
	canon := http.CanonicalHeaderKey
	s := &svixScheme{
		name:      name,
		tolerance: tolerance,
		keys:      make([]*macKey, len(secrets)),
		idHeader:  canon(label + "-id"),
		tsHeader:  canon(label + "-timestamp"),
		sigHeader: canon(label + "-signature"),
	}
	for i, secret := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, svixSecretPrefix))
		if err != nil {
			return nil, fmt.Errorf("%s: secret %d is not whsec_ followed by standard base64", name, i)
		}
		if len(key) == 0 {
			return nil, fmt.Errorf("%s: secret %d decodes to an empty key", name, i)
		}
		s.keys[i] = newMACKey(key)
	}
	return s, nil
}

// verify authenticates a delivery and returns its event, with OccurredAt
// from the body's "timestamp" read by occurred. The signature is checked
// before the timestamp, so a forged delivery reports ErrInvalidSignature
// and an authentic but stale (or future) one ErrTimestamp.
//
// entities, when not nil, reads the event's entities from the
// authenticated body, given its type.
func (s *svixScheme) verify(h Header, body []byte, now time.Time, occurred func(svixTime) time.Time, entities func(typ string, body []byte) []hub.Entity) (Event, error) {
	id := firstHeader(h, svixIDHeaders[0], svixIDHeaders[1])
	ts := firstHeader(h, svixTSHeaders[0], svixTSHeaders[1])
	header := firstHeader(h, svixSigHeaders[0], svixSigHeaders[1])
	switch {
	case id == "":
		return Event{}, errSvixNoID
	case ts == "":
		return Event{}, errSvixNoTS
	case header == "":
		return Event{}, errSvixNoSig
	case len(id) > maxEventIDLen:
		return Event{}, errSvixLongID
	case !validSvixID(id):
		return Event{}, errSvixBadID
	}
	unix, ok := parseUnixDigits(ts)
	if !ok {
		return Event{}, errSvixBadTS
	}
	var buf [4][macSize]byte
	sigs := parseSvixSignatures(header, buf[:0])
	if len(sigs) == 0 {
		return Event{}, errSvixNoV1
	}
	if !authenticate(s.keys, sigs, body, '.', id, ts) {
		return Event{}, errSvixMismatch
	}
	signedAt := time.Unix(unix, 0)
	if !withinTolerance(signedAt, now, s.tolerance) {
		return Event{}, timestampError(signedAt, now, s.tolerance)
	}
	b, err := decodeBody[svixBody](body)
	if err != nil {
		return Event{}, err
	}
	if err := checkText("body has no type", "type", b.Type, maxEventTypeLen); err != nil {
		return Event{}, err
	}
	ev := Event{ID: id, Type: b.Type, Signature: header, SignedAt: signedAt, OccurredAt: occurred(b.Timestamp)}
	if entities != nil {
		ev.Entities = entities(b.Type, body)
	}
	return ev, nil
}

// sign returns the id, timestamp and signature headers for body, signed
// with the first secret at now. eventID must be a valid id: non-empty, at
// most 255 bytes, without '.' or control characters.
func (s *svixScheme) sign(eventID string, body []byte, now time.Time) (http.Header, error) {
	if eventID == "" || len(eventID) > maxEventIDLen || !validSvixID(eventID) {
		return nil, fmt.Errorf("%s: event id is not a valid %s", s.name, strings.ToLower(s.idHeader))
	}
	if now.Unix() < 0 {
		return nil, fmt.Errorf("%s: cannot sign before 1970", s.name)
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	var mac [macSize]byte
	s.keys[0].sum(&mac, body, '.', eventID, ts)
	h := http.Header{}
	h.Set(s.idHeader, eventID)
	h.Set(s.tsHeader, ts)
	h.Set(s.sigHeader, "v1,"+base64.StdEncoding.EncodeToString(mac[:]))
	return h, nil
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

// parseSvixSignatures parses a Svix or Standard Webhooks signature header
// value: entries separated by spaces, each "<version>,<base64>". It
// appends to dst the MAC of every v1 entry whose signature is the
// canonical standard base64 of 32 bytes (at most maxSignatures of them),
// skipping other versions (v1a is an ed25519 signature, not an HMAC) and
// malformed entries. It never fails; no well-formed v1 entry yields dst
// unchanged.
func parseSvixSignatures(header string, dst [][macSize]byte) [][macSize]byte {
	start := len(dst)
	for rest := header; rest != "" && len(dst)-start < maxSignatures; {
		var entry string
		entry, rest, _ = strings.Cut(rest, " ")
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		var mac [macSize]byte
		if decodeB64MAC(&mac, sig) {
			dst = append(dst, mac)
		}
	}
	return dst
}

// svixBody is the part of a Svix-scheme body the hub reads.
type svixBody struct {
	Type      string   `json:"type"`
	Timestamp svixTime `json:"timestamp"`
}

// svixMembers are svixBody's JSON names: strings first, as readMembers
// wants them.
var svixMembers = []string{"type", "timestamp"}

// decodeFast is json.Unmarshal(body, b) for the common body (readMembers).
func (b *svixBody) decodeFast(body []byte) bool {
	var raw [2][]byte
	ok := readMembers(body, svixMembers, raw[:], &b.Type)
	if ok && raw[1] != nil {
		_ = b.Timestamp.UnmarshalJSON(raw[1])
	}
	return ok
}

// svixTime decodes an optional body timestamp, leniently: Clerk writes
// integer milliseconds since the epoch, the Standard Webhooks spec an
// RFC 3339 string. Anything else (null, a fraction, 0, a malformed date)
// leaves both zero instead of failing the body.
type svixTime struct {
	millis  time.Time // from an integer count of milliseconds
	rfc3339 time.Time // from an RFC 3339 string
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (l *svixTime) UnmarshalJSON(b []byte) error {
	if ms, ok := parseUnixDigits(string(b)); ok && ms > 0 {
		l.millis = time.UnixMilli(ms)
		return nil
	}
	var r lenientRFC3339
	_ = r.UnmarshalJSON(b)
	l.rfc3339 = r.t
	return nil
}
