package provider

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// StripeSignatureHeader is the header Stripe signs events in.
const StripeSignatureHeader = "Stripe-Signature"

// StripeDefaultTolerance is the timestamp tolerance NewStripe uses when
// given 0: stripe-go's DefaultTolerance.
const StripeDefaultTolerance = 300 * time.Second

// StripeAPIVersion is the API version Stripe samples carry.
const StripeAPIVersion = "2024-06-20"

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
// A Stripe is safe for concurrent use. It implements Provider and Sender.
type Stripe struct {
	keys      []*macKey
	tolerance time.Duration
}

var (
	_ Provider = (*Stripe)(nil)
	_ Sender   = (*Stripe)(nil)
)

// NewStripe returns a Stripe verifier that accepts a signature made with any
// of secrets (several while a rolled secret is still active; the first one
// signs in Sign). Each secret is used as is (whsec_… as bytes).
// o.Tolerance bounds |now - t|; 0 means StripeDefaultTolerance. It fails
// when secrets is empty, a secret is the empty string, or the tolerance is
// negative.
func NewStripe(secrets []string, o Options) (*Stripe, error) {
	keys, err := rawKeys("stripe", secrets)
	if err != nil {
		return nil, err
	}
	tolerance, err := timestampTolerance("stripe", o.Tolerance, StripeDefaultTolerance)
	if err != nil {
		return nil, err
	}
	return &Stripe{keys: keys, tolerance: tolerance}, nil
}

// Name returns "stripe".
func (s *Stripe) Name() string { return "stripe" }

// Tolerance returns the timestamp tolerance in effect.
func (s *Stripe) Tolerance() time.Duration { return s.tolerance }

// Static errors of the Stripe verifier.
var (
	errStripeNoHeader = errSig("missing Stripe-Signature header")
	errStripeNoT      = errSig("Stripe-Signature has no t")
	errStripeDupT     = errSig("Stripe-Signature has more than one t")
	errStripeBadT     = errSig("Stripe-Signature t is not a unix time")
	errStripeNoV1     = errSig("Stripe-Signature has no well-formed v1")
	errStripeMismatch = errSig("no v1 matches any secret")
)

// Verify authenticates a Stripe event and returns it. The signature is
// checked before the timestamp, so a forged delivery reports
// ErrInvalidSignature and an authentic but stale (or future) one
// ErrTimestamp.
func (s *Stripe) Verify(r Request) (Event, error) {
	h, body, now := r.Header, r.Body, r.Now
	header := h.Get(StripeSignatureHeader)
	if header == "" {
		return Event{}, errStripeNoHeader
	}
	var buf [4][macSize]byte
	unix, sigs, err := parseStripeSignature(header, buf[:0])
	if err != nil {
		return Event{}, err
	}
	ts := canonicalStripeT(header, unix)
	if !authenticate(s.keys, sigs, body, '.', ts) {
		return Event{}, errStripeMismatch
	}
	signedAt := time.Unix(unix, 0)
	if !withinTolerance(signedAt, now, s.tolerance) {
		return Event{}, timestampError(signedAt, now, s.tolerance)
	}
	ev, err := parseStripeBody(body)
	if err != nil {
		return Event{}, err
	}
	ev.Signature = header
	ev.SignedAt = signedAt
	return ev, nil
}

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

// parseStripeSignature parses a Stripe-Signature header value:
// ','-separated key=value pairs, with optional spaces or tabs around each.
// It returns t (1 to 20 ASCII digits) and every well-formed v1 (64 hex
// digits, at most maxSignatures of them) decoded, appended to dst. v0,
// unknown keys, pairs without '=' and malformed v1 entries are skipped. It
// fails, with an error wrapping ErrInvalidSignature, when t is missing,
// repeated or not a unix time, or when no v1 is well-formed.
func parseStripeSignature(header string, dst [][macSize]byte) (unix int64, sigs [][macSize]byte, err error) {
	sigs = dst
	var ts string
	haveT := false
	for rest := header; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		key, value, ok := strings.Cut(trimOWS(part), "=")
		if !ok {
			continue
		}
		switch key {
		case "t":
			if haveT {
				return 0, nil, errStripeDupT
			}
			haveT, ts = true, value
		case "v1":
			var sig [macSize]byte
			if len(sigs)-len(dst) < maxSignatures && decodeHexMAC(&sig, value) {
				sigs = append(sigs, sig)
			}
		}
	}
	if !haveT {
		return 0, nil, errStripeNoT
	}
	unix, ok := parseUnixDigits(ts)
	if !ok {
		return 0, nil, errStripeBadT
	}
	if len(sigs) == 0 {
		return 0, nil, errStripeNoV1
	}
	return unix, sigs, nil
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

func parseStripeBody(body []byte) (Event, error) {
	var b stripeBody
	if !b.decodeFast(body) {
		b = stripeBody{}
		if err := json.Unmarshal(body, &b); err != nil {
			return Event{}, jsonPayloadError(err)
		}
	}
	if err := checkText("body has no id", "id", b.ID, maxEventIDLen); err != nil {
		return Event{}, err
	}
	if err := checkText("body has no type", "type", b.Type, maxEventTypeLen); err != nil {
		return Event{}, err
	}
	return Event{ID: b.ID, Type: b.Type, OccurredAt: b.Created.t}, nil
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
	if now.Unix() < 0 {
		return nil, "", errors.New("stripe: cannot sign before 1970")
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	var mac [macSize]byte
	s.keys[0].sum(&mac, body, '.', ts)
	h := http.Header{}
	h.Set(StripeSignatureHeader, "t="+ts+",v1="+hex.EncodeToString(mac[:]))
	h.Set("Content-Type", "application/json; charset=utf-8")
	return h, "/webhooks/stripe", nil
}

// stripeID derives a Stripe-style id ("<prefix>_1" + 23 base62 characters)
// from seed, deterministically.
func stripeID(prefix, seed string) string {
	return prefix + "_1" + derive(prefix+"/"+seed, 23, base62)
}

// Sample returns a Stripe event: id (eventID), object "event",
// api_version, created (now), data.object, livemode false,
// pending_webhooks, request and type. When data is nil, data.object is a
// realistic object: a subscription for customer.subscription.* types, a
// customer for customer.*, a payment intent for payment_intent.*, an
// invoice for invoice.*, a checkout session for checkout.session.*, and a
// small generic object otherwise. Derived ids depend only on eventID, so
// the output is deterministic given its inputs. data, when not nil, must
// be valid JSON and becomes data.object.
func (s *Stripe) Sample(eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	if eventID == "" || eventType == "" {
		return nil, errors.New("stripe: sample needs an event id and type")
	}
	if data == nil {
		var err error
		if data, err = json.Marshal(stripeSampleObject(eventID, eventType, now)); err != nil {
			return nil, err
		}
	} else if !json.Valid(data) {
		return nil, errors.New("stripe: sample data is not valid JSON")
	}
	type request struct {
		ID             string `json:"id"`
		IdempotencyKey string `json:"idempotency_key"`
	}
	type eventData struct {
		Object json.RawMessage `json:"object"`
	}
	return json.MarshalIndent(struct {
		ID              string    `json:"id"`
		Object          string    `json:"object"`
		APIVersion      string    `json:"api_version"`
		Created         int64     `json:"created"`
		Data            eventData `json:"data"`
		Livemode        bool      `json:"livemode"`
		PendingWebhooks int       `json:"pending_webhooks"`
		Request         request   `json:"request"`
		Type            string    `json:"type"`
	}{
		ID:              eventID,
		Object:          "event",
		APIVersion:      StripeAPIVersion,
		Created:         now.Unix(),
		Data:            eventData{data},
		PendingWebhooks: 1,
		Request:         request{stripeID("req", eventID), uuidLike("idem/" + eventID)},
		Type:            eventType,
	}, "", "  ")
}

func stripeSampleObject(eventID, eventType string, now time.Time) any {
	created := now.Add(-30 * 24 * time.Hour).Unix()
	customer := stripeID("cus", eventID)
	switch {
	case strings.HasPrefix(eventType, "customer.subscription."):
		status := "active"
		switch strings.TrimPrefix(eventType, "customer.subscription.") {
		case "deleted":
			status = "canceled"
		case "paused":
			status = "paused"
		case "trial_will_end":
			status = "trialing"
		}
		price := map[string]any{
			"id": stripeID("price", eventID), "object": "price", "active": true, "currency": "usd",
			"product": stripeID("prod", eventID), "unit_amount": 1000, "type": "recurring",
			"recurring": map[string]any{"interval": "month", "interval_count": 1, "usage_type": "licensed"},
		}
		return map[string]any{
			"id":                     stripeID("sub", eventID),
			"object":                 "subscription",
			"billing_cycle_anchor":   created,
			"cancel_at_period_end":   false,
			"canceled_at":            nil,
			"collection_method":      "charge_automatically",
			"created":                created,
			"currency":               "usd",
			"current_period_start":   now.Unix(),
			"current_period_end":     now.AddDate(0, 1, 0).Unix(),
			"customer":               customer,
			"default_payment_method": stripeID("pm", eventID),
			"items": map[string]any{
				"object": "list",
				"data": []any{map[string]any{
					"id": stripeID("si", eventID), "object": "subscription_item", "created": created,
					"price": price, "quantity": 1,
				}},
				"has_more": false,
				"url":      "/v1/subscription_items?subscription=" + stripeID("sub", eventID),
			},
			"latest_invoice": stripeID("in", eventID),
			"livemode":       false,
			"metadata":       map[string]any{"plan": "pro", "credits": "1000", "email": sampleEmail(eventID)},
			"start_date":     created,
			"status":         status,
		}
	case strings.HasPrefix(eventType, "customer."):
		return map[string]any{
			"id": customer, "object": "customer", "address": nil, "balance": 0, "created": created,
			"currency": "usd", "delinquent": false, "description": nil, "email": sampleEmail(eventID),
			"invoice_prefix":   strings.ToUpper(derive("inv/"+eventID, 8, "0123456789abcdef")),
			"invoice_settings": map[string]any{"default_payment_method": stripeID("pm", eventID), "footer": nil},
			"livemode":         false, "metadata": map[string]any{"user_id": "user_" + derive("u/"+eventID, 12, base62)},
			"name": "Ada Lovelace", "phone": nil, "preferred_locales": []string{"en"}, "tax_exempt": "none",
		}
	case strings.HasPrefix(eventType, "payment_intent."):
		status := "succeeded"
		switch strings.TrimPrefix(eventType, "payment_intent.") {
		case "payment_failed":
			status = "requires_payment_method"
		case "canceled":
			status = "canceled"
		case "created":
			status = "requires_confirmation"
		case "processing":
			status = "processing"
		}
		return map[string]any{
			"id": stripeID("pi", eventID), "object": "payment_intent", "amount": 1200, "amount_received": 1200,
			"capture_method": "automatic", "client_secret": stripeID("pi", eventID) + "_secret_" + derive("cs/"+eventID, 25, base62),
			"confirmation_method": "automatic", "created": now.Unix(), "currency": "usd", "customer": customer,
			"description": "Pro plan, monthly", "last_payment_error": nil, "latest_charge": stripeID("ch", eventID),
			"livemode": false, "metadata": map[string]any{"order_id": derive("order/"+eventID, 6, "0123456789")},
			"payment_method": stripeID("pm", eventID), "payment_method_types": []string{"card"},
			"receipt_email": sampleEmail(eventID), "status": status,
		}
	case strings.HasPrefix(eventType, "invoice."):
		return map[string]any{
			"id": stripeID("in", eventID), "object": "invoice", "account_country": "US", "amount_due": 1200,
			"amount_paid": 1200, "amount_remaining": 0, "attempt_count": 1, "billing_reason": "subscription_cycle",
			"collection_method": "charge_automatically", "created": now.Unix(), "currency": "usd", "customer": customer,
			"customer_email": sampleEmail(eventID), "hosted_invoice_url": "https://invoice.stripe.com/i/acct_" + derive("acct", 16, base62),
			"livemode": false, "number": strings.ToUpper(derive("inv/"+eventID, 8, "0123456789abcdef")) + "-0001",
			"paid": true, "period_start": created, "period_end": now.Unix(), "status": "paid",
			"subscription": stripeID("sub", eventID), "subtotal": 1000, "tax": 200, "total": 1200,
		}
	case strings.HasPrefix(eventType, "checkout.session."):
		return map[string]any{
			"id": "cs_test_" + derive("cs/"+eventID, 58, base62), "object": "checkout.session",
			"amount_subtotal": 1000, "amount_total": 1200, "cancel_url": "https://example.com/cancel",
			"client_reference_id": "user_" + derive("u/"+eventID, 12, base62), "created": now.Unix(), "currency": "usd",
			"customer": customer, "customer_details": map[string]any{"email": sampleEmail(eventID), "name": "Ada Lovelace"},
			"livemode": false, "mode": "subscription", "payment_status": "paid", "status": "complete",
			"subscription": stripeID("sub", eventID), "success_url": "https://example.com/success?session_id={CHECKOUT_SESSION_ID}",
		}
	default:
		entity, _, _ := strings.Cut(eventType, ".")
		return map[string]any{
			"id": stripeID(entityPrefix(entity), eventID), "object": entity, "created": created,
			"livemode": false, "metadata": map[string]any{},
		}
	}
}
