package provider

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub"
)

// StripeSignatureHeader is the header Stripe signs events in.
const StripeSignatureHeader = "Stripe-Signature"

// StripeDefaultTolerance is the timestamp tolerance NewStripe uses when
// given 0: stripe-go's DefaultTolerance.
const StripeDefaultTolerance = 300 * time.Second

// Stripe verifies Stripe webhook events.
//
// The Stripe-Signature header is "t=<unix>,v1=<hex>[,v1=<hex>…][,v0=<hex>]".
// Each v1 is the hex HMAC-SHA256 of "<t>.<raw body>", keyed with the whole
// endpoint secret string, whsec_ prefix included, as bytes: unlike Svix,
// the secret is not base64-decoded. Every v1 and every secret is tried; v0
// (a legacy test-mode scheme), unknown keys and malformed v1 entries are
// ignored. The event id is the body's "id", the type its "type", and
// OccurredAt its "created".
//
// Unlike stripe-go, which checks only the age of t, the tolerance bounds
// future timestamps too: a signature dated ahead of the hub's clock by more
// than the tolerance is rejected with ErrTimestamp.
//
// A Stripe is safe for concurrent use. It implements Provider and Signer.
type Stripe struct {
	*timedHMAC
}

var (
	_ Provider = (*Stripe)(nil)
	_ Signer   = (*Stripe)(nil)
)

// NewStripe returns a Stripe verifier that accepts a signature made with any
// of secrets (several while a rolled secret is still active; the first one
// signs in Sign). Each secret is used as is (whsec_… as bytes).
// o.Tolerance bounds |now - t|; 0 means StripeDefaultTolerance. It fails
// when secrets is empty, a secret is the empty string, or the tolerance is
// negative. Its Name is "stripe".
func NewStripe(secrets []string, o Options) (*Stripe, error) {
	s, err := newTimedHMAC("stripe", secrets, o.Tolerance, StripeDefaultTolerance, &stripeLayout)
	if err != nil {
		return nil, err
	}
	return &Stripe{s}, nil
}

// stripeLayout is the layout of the Stripe-Signature header, and its
// errors. t is signed in its decimal form (canonicalStripeT).
var stripeLayout = func() timedHeader {
	h := newTimedHeader(StripeSignatureHeader, ",", '.', "t", "v1")
	h.signedTS = canonicalStripeT
	return h
}()

// Verify authenticates a Stripe event and returns it. The signature is
// checked before the timestamp, so a forged delivery reports
// ErrInvalidSignature and an authentic but stale (or future) one
// ErrTimestamp.
func (s *Stripe) Verify(r Request) (Event, error) { return s.verify(r, parseStripeBody) }

// canonicalStripeT returns the decimal form of t, which is what stripe-go
// signs whatever the header's spelling (t=0017… is signed as 17…). It
// returns those bytes from the header when they occur there, to avoid
// allocating; the result is the decimal form either way.
func canonicalStripeT(header string, unix int64) string {
	var buf [22]byte
	pat := strconv.AppendInt(append(buf[:0], 't', '='), unix, 10)
	if i := strings.Index(header, string(pat)); i >= 0 {
		return header[i+2 : i+len(pat)]
	}
	return string(pat[2:])
}

// stripeBody is the part of a Stripe event the hub reads.
type stripeBody struct {
	ID      string        `json:"id"`
	Type    string        `json:"type"`
	Created lenientSecond `json:"created"`
}

// stripeMembers are stripeBody's JSON names: strings first, as readMembers
// wants them.
var stripeMembers = []string{"id", "type", "created"}

// decodeFast is json.Unmarshal(body, b) for the common body (readMembers).
func (b *stripeBody) decodeFast(body []byte) bool {
	var raw [3][]byte
	ok := readMembers(body, stripeMembers, raw[:], &b.ID, &b.Type)
	if ok && raw[2] != nil {
		_ = b.Created.UnmarshalJSON(raw[2])
	}
	return ok
}

// StripeEvent returns the id, type and created time of a Stripe event
// object as Stripe's API returns it (one element of the data array of GET
// /v1/events, the very object a webhook's body is): what Verify extracts
// from the same event's webhook, with the same code, so the dedup rows of
// a backfilled copy and of its webhook coincide. Nothing is verified (the
// caller trusts the API it authenticated to); the created time is as the
// object says (not checked for plausibility). It fails with an error
// wrapping ErrPayload as Verify would on the same bytes.
func StripeEvent(object []byte) (Event, error) { return parseStripeBody(object) }

// parseStripeBody reads the event of a Stripe event object: a webhook's
// body (Verify) or an API's element (StripeEvent).
func parseStripeBody(body []byte) (Event, error) {
	b, err := decodeBody[stripeBody](body)
	if err != nil {
		return Event{}, err
	}
	if err := checkText("body has no id", "id", b.ID, maxEventIDLen); err != nil {
		return Event{}, err
	}
	if err := checkText("body has no type", "type", b.Type, maxEventTypeLen); err != nil {
		return Event{}, err
	}
	return Event{ID: b.ID, Type: b.Type, OccurredAt: b.Created.t, Entities: stripeEntities(body)}, nil
}

// stripeObjectMembers are the members of an event's data.object that
// name entities.
var stripeObjectMembers = []string{"id", "object", "customer", "subscription", "metadata"}

// stripeEntities returns the entities of a Stripe event: data.object's id,
// of the kind its "object" names ("customer", "subscription", "invoice",
// "payment_intent", "charge", "checkout.session" as "checkout_session",
// …); its customer as "customer" (an id, or an expanded customer's id);
// its subscription as "subscription" (an invoice's, a checkout session's:
// an id or an expanded object's); and metadata.user_id as "user", the
// application's own id of the user (a Clerk user id, say), which lets one
// search follow a customer across providers.
func stripeEntities(body []byte) []hub.Entity {
	obj := jsonPath(body, "data", "object")
	var raw [5][]byte
	jsonMembers(obj, stripeObjectMembers, raw[:])
	var out []hub.Entity
	if id, ok := jsonString(raw[0]); ok {
		if kind, ok := stripeKind(raw[1]); ok {
			out = addEntity(out, kind, id)
		}
	}
	out = addEntity(out, "customer", expandableID(raw[2]))
	out = addEntity(out, "subscription", expandableID(raw[3]))
	if user, ok := jsonString(jsonValue(jsonMember(raw[4], "user_id"))); ok {
		out = addEntity(out, "user", user)
	}
	return out
}

// stripeKind returns the entity kind of a Stripe object's "object" member
// (raw JSON): the common ones without allocating, any other through
// entityKind ("checkout.session" is "checkout_session").
func stripeKind(raw []byte) (string, bool) {
	switch string(raw) {
	case `"customer"`:
		return "customer", true
	case `"subscription"`:
		return "subscription", true
	case `"invoice"`:
		return "invoice", true
	case `"payment_intent"`:
		return "payment_intent", true
	case `"charge"`:
		return "charge", true
	case `"checkout.session"`:
		return "checkout_session", true
	}
	kind, ok := jsonString(raw)
	return entityKind(kind), ok
}

// expandableID returns the id of a Stripe expandable field: the string
// itself, or the "id" of the expanded object; "" otherwise.
func expandableID(raw []byte) string {
	if len(raw) > 0 && raw[0] == '{' {
		raw = jsonValue(jsonMember(raw, "id"))
	}
	id, _ := jsonString(raw)
	return id
}

// lenientSecond decodes an optional integer count of seconds since the
// Unix epoch; anything else (null, a string, a fraction, 0) leaves it zero
// instead of failing the body.
type lenientSecond struct{ t time.Time }

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (l *lenientSecond) UnmarshalJSON(b []byte) error {
	if s, ok := parseUnixDigits(string(b)); ok && s > 0 && s < 1<<40 {
		l.t = time.Unix(s, 0)
	}
	return nil
}

// Sign returns a Stripe-Signature header for body, "t=<now>,v1=<hex>",
// signed with the first secret, plus Content-Type: application/json.
// The target is "/webhooks/stripe". Stripe carries the event id and type
// in the body, so eventID and eventType are unused.
func (s *Stripe) Sign(eventID, eventType string, body []byte, now time.Time) (http.Header, string, error) {
	h, err := s.sign(body, now)
	if err != nil {
		return nil, "", err
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	return h, "/webhooks/stripe", nil
}
