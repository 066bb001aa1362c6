package provider

import (
	"net/http"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub"
)

// PaddleSignatureHeader is the header Paddle Billing signs notifications in.
const PaddleSignatureHeader = "Paddle-Signature"

// PaddleDefaultTolerance is the timestamp tolerance NewPaddle uses when
// given 0. It matches Paddle's Node and Python SDKs; it is tight once clock
// skew and queueing count, so operators may widen it.
const PaddleDefaultTolerance = 5 * time.Second

// Paddle verifies Paddle Billing notifications.
//
// The Paddle-Signature header is "ts=<unix>;h1=<hex>[;h1=<hex>…]". Each h1
// is the lowercase hex HMAC-SHA256 of "<ts as written>:<raw body>", keyed
// with the endpoint secret's bytes (pdl_ntfset_…, not decoded). Every h1
// and every secret is tried; unknown keys (h2, …) and malformed h1 entries
// are ignored. The event id is the body's event_id, the type its
// event_type.
//
// A Paddle is safe for concurrent use. It implements Provider and Signer.
type Paddle struct {
	*timedHMAC
}

var (
	_ Provider = (*Paddle)(nil)
	_ Signer   = (*Paddle)(nil)
)

// NewPaddle returns a Paddle verifier that accepts a signature made with any
// of secrets (several during a rotation; the first one signs in Sign).
// o.Tolerance bounds |now - ts|; 0 means PaddleDefaultTolerance. It fails
// when secrets is empty, a secret is the empty string, or the tolerance is
// negative. Its Name is "paddle".
func NewPaddle(secrets []string, o Options) (*Paddle, error) {
	s, err := newTimedHMAC("paddle", secrets, o.Tolerance, PaddleDefaultTolerance, &paddleLayout)
	if err != nil {
		return nil, err
	}
	return &Paddle{s}, nil
}

// paddleLayout is the layout of the Paddle-Signature header, and its
// errors.
var paddleLayout = newTimedHeader(PaddleSignatureHeader, ";", ':', "ts", "h1")

// Verify authenticates a Paddle notification and returns its event. The
// signature is checked before the timestamp, so a forged delivery reports
// ErrInvalidSignature and an authentic but stale (or future) one
// ErrTimestamp.
func (p *Paddle) Verify(r Request) (Event, error) { return p.verify(r, parsePaddleBody) }

// paddleBody is the part of a Paddle notification the hub reads.
type paddleBody struct {
	EventID    string         `json:"event_id"`
	EventType  string         `json:"event_type"`
	OccurredAt lenientRFC3339 `json:"occurred_at"`
}

// paddleMembers are paddleBody's JSON names: strings first, as readMembers
// wants them.
var paddleMembers = []string{"event_id", "event_type", "occurred_at"}

// decodeFast is json.Unmarshal(body, b) for the common body (readMembers).
func (b *paddleBody) decodeFast(body []byte) bool {
	var raw [3][]byte
	ok := readMembers(body, paddleMembers, raw[:], &b.EventID, &b.EventType)
	if ok && raw[2] != nil {
		_ = b.OccurredAt.UnmarshalJSON(raw[2])
	}
	return ok
}

// PaddleEvent returns the event_id, event_type and occurred_at of a
// Paddle Billing event entity as Paddle's API returns it (one element of
// the data array of GET /events, the very entity a notification's body
// is): what Verify extracts from the same event's notification, with the
// same code, so the dedup rows of a backfilled copy and of its webhook
// coincide. Nothing is verified (the caller trusts the API it
// authenticated to); occurred_at is as the entity says (not checked for
// plausibility). It fails with an error wrapping ErrPayload as Verify
// would on the same bytes.
func PaddleEvent(entity []byte) (Event, error) { return parsePaddleBody(entity) }

// parsePaddleBody reads the event of a Paddle event entity: a
// notification's body (Verify) or an API's element (PaddleEvent).
func parsePaddleBody(body []byte) (Event, error) {
	b, err := decodeBody[paddleBody](body)
	if err != nil {
		return Event{}, err
	}
	if err := checkText("body has no event_id", "event_id", b.EventID, maxEventIDLen); err != nil {
		return Event{}, err
	}
	if err := checkText("body has no event_type", "event_type", b.EventType, maxEventTypeLen); err != nil {
		return Event{}, err
	}
	return Event{ID: b.EventID, Type: b.EventType, OccurredAt: b.OccurredAt.t, Entities: paddleEntities(b.EventType, body)}, nil
}

// paddleDataMembers are the members of a notification's data that name
// entities.
var paddleDataMembers = []string{"id", "customer_id", "subscription_id", "transaction_id", "custom_data"}

// paddleEntities returns the entities of a Paddle Billing notification of
// type typ: data.id, of the kind the type's first token names
// (subscription.* is a "subscription", transaction.* a "transaction",
// customer.* a "customer", adjustment.*, address.*, payment_method.*, …
// alike); data.customer_id as "customer", data.subscription_id as
// "subscription" and data.transaction_id as "transaction" (a
// subscription.created names the transaction that created it, an
// adjustment its transaction and subscription); and custom_data.user_id as
// "user", the application's own id of the user, which lets one search
// follow a customer across providers.
func paddleEntities(typ string, body []byte) []hub.Entity {
	family, _, _ := strings.Cut(typ, ".")
	var raw [5][]byte
	jsonMembers(jsonMember(body, "data"), paddleDataMembers, raw[:])
	var out []hub.Entity
	if id, ok := jsonString(raw[0]); ok {
		out = addEntity(out, entityKind(family), id)
	}
	for i, kind := range [...]string{"customer", "subscription", "transaction"} {
		if id, ok := jsonString(raw[1+i]); ok {
			out = addEntity(out, kind, id)
		}
	}
	if user, ok := jsonString(jsonValue(jsonMember(raw[4], "user_id"))); ok {
		out = addEntity(out, "user", user)
	}
	return out
}

// Sign returns a Paddle-Signature header for body, signed with the first
// secret at now, and the target "/webhooks/paddle". Paddle carries the
// event id and type in the body, so eventID and eventType are unused.
func (p *Paddle) Sign(eventID, eventType string, body []byte, now time.Time) (http.Header, string, error) {
	h, err := p.sign(body, now)
	if err != nil {
		return nil, "", err
	}
	return h, "/webhooks/paddle", nil
}
