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
// A Paddle is safe for concurrent use. It implements Provider and Sender.
type Paddle struct {
	keys      []*macKey
	tolerance time.Duration
}

var (
	_ Provider = (*Paddle)(nil)
	_ Sender   = (*Paddle)(nil)
)

// NewPaddle returns a Paddle verifier that accepts a signature made with any
// of secrets (several during a rotation; the first one signs in Sign).
// o.Tolerance bounds |now - ts|; 0 means PaddleDefaultTolerance. It fails
// when secrets is empty, a secret is the empty string, or the tolerance is
// negative.
func NewPaddle(secrets []string, o Options) (*Paddle, error) {
	keys, err := rawKeys("paddle", secrets)
	if err != nil {
		return nil, err
	}
	tolerance, err := timestampTolerance("paddle", o.Tolerance, PaddleDefaultTolerance)
	if err != nil {
		return nil, err
	}
	return &Paddle{keys: keys, tolerance: tolerance}, nil
}

// Name returns "paddle".
func (p *Paddle) Name() string { return "paddle" }

// Tolerance returns the timestamp tolerance in effect.
func (p *Paddle) Tolerance() time.Duration { return p.tolerance }

// Static errors of the Paddle verifier.
var (
	errPaddleNoHeader = errSig("missing Paddle-Signature header")
	errPaddleNoTS     = errSig("Paddle-Signature has no ts")
	errPaddleDupTS    = errSig("Paddle-Signature has more than one ts")
	errPaddleBadTS    = errSig("Paddle-Signature ts is not a unix time")
	errPaddleNoH1     = errSig("Paddle-Signature has no well-formed h1")
	errPaddleMismatch = errSig("no h1 matches any secret")
)

// Verify authenticates a Paddle notification and returns its event. The
// signature is checked before the timestamp, so a forged delivery reports
// ErrInvalidSignature and an authentic but stale (or future) one
// ErrTimestamp.
func (p *Paddle) Verify(r Request) (Event, error) {
	h, body, now := r.Header, r.Body, r.Now
	header := h.Get(PaddleSignatureHeader)
	if header == "" {
		return Event{}, errPaddleNoHeader
	}
	var buf [4][macSize]byte
	ts, sigs, err := parsePaddleSignature(header, buf[:0])
	if err != nil {
		return Event{}, err
	}
	unix, _ := parseUnixDigits(ts) // checked by parsePaddleSignature
	if !authenticate(p.keys, sigs, body, ':', ts) {
		return Event{}, errPaddleMismatch
	}
	signedAt := time.Unix(unix, 0)
	if !withinTolerance(signedAt, now, p.tolerance) {
		return Event{}, timestampError(signedAt, now, p.tolerance)
	}
	ev, err := parsePaddleBody(body)
	if err != nil {
		return Event{}, err
	}
	ev.Signature = header
	ev.SignedAt = signedAt
	return ev, nil
}

// parsePaddleSignature parses a Paddle-Signature header value:
// ';'-separated key=value parts, with optional spaces or tabs around each
// part. It returns the ts value exactly as written (1 to 20 ASCII digits)
// and every well-formed h1 (64 hex digits, at most maxSignatures of them)
// decoded, appended to dst. Unknown keys, parts without '=' and malformed
// h1 entries are skipped. It fails, with an error wrapping
// ErrInvalidSignature, when ts is missing, repeated or not a unix time, or
// when no h1 is well-formed.
func parsePaddleSignature(header string, dst [][macSize]byte) (ts string, sigs [][macSize]byte, err error) {
	sigs = dst
	haveTS := false
	for rest := header; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ";")
		key, value, ok := strings.Cut(trimOWS(part), "=")
		if !ok {
			continue
		}
		switch key {
		case "ts":
			if haveTS {
				return "", nil, errPaddleDupTS
			}
			haveTS = true
			ts = value
		case "h1":
			var sig [macSize]byte
			if len(sigs)-len(dst) < maxSignatures && decodeHexMAC(&sig, value) {
				sigs = append(sigs, sig)
			}
		}
	}
	if !haveTS {
		return "", nil, errPaddleNoTS
	}
	if _, ok := parseUnixDigits(ts); !ok {
		return "", nil, errPaddleBadTS
	}
	if len(sigs) == 0 {
		return "", nil, errPaddleNoH1
	}
	return ts, sigs, nil
}

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

func parsePaddleBody(body []byte) (Event, error) {
	var b paddleBody
	if !b.decodeFast(body) {
		b = paddleBody{}
		if err := json.Unmarshal(body, &b); err != nil {
			return Event{}, jsonPayloadError(err)
		}
	}
	if err := checkText("body has no event_id", "event_id", b.EventID, maxEventIDLen); err != nil {
		return Event{}, err
	}
	if err := checkText("body has no event_type", "event_type", b.EventType, maxEventTypeLen); err != nil {
		return Event{}, err
	}
	return Event{ID: b.EventID, Type: b.EventType, OccurredAt: b.OccurredAt.t}, nil
}

// Sample returns a Paddle Billing notification body: event_id, event_type,
// occurred_at (now, RFC 3339 with microseconds), notification_id and data.
// When data is nil it builds a realistic entity: a subscription for
// subscription.* types, a customer for customer.*, a transaction for
// transaction.*, and a small generic object otherwise. Every derived id
// (ntf_…, sub_…, ctm_…) is a function of eventID, so the output is
// deterministic given its inputs. data, when not nil, must be valid JSON.
func (p *Paddle) Sample(eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	if eventID == "" || eventType == "" {
		return nil, errors.New("paddle: sample needs an event id and type")
	}
	if data == nil {
		var err error
		if data, err = json.Marshal(paddleSampleData(eventID, eventType, now)); err != nil {
			return nil, err
		}
	} else if !json.Valid(data) {
		return nil, errors.New("paddle: sample data is not valid JSON")
	}
	return json.Marshal(struct {
		Data           json.RawMessage `json:"data"`
		EventID        string          `json:"event_id"`
		EventType      string          `json:"event_type"`
		OccurredAt     string          `json:"occurred_at"`
		NotificationID string          `json:"notification_id"`
	}{
		Data:           data,
		EventID:        eventID,
		EventType:      eventType,
		OccurredAt:     paddleTime(now),
		NotificationID: paddleID("ntf", eventID),
	})
}

// paddleTime formats t the way Paddle does: UTC, microseconds, "Z".
func paddleTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

// paddleID derives a Paddle-style id ("<prefix>_01" + 24 lowercase
// Crockford base32 characters) from seed, deterministically.
func paddleID(prefix, seed string) string {
	return prefix + "_01" + derive(prefix+"/"+seed, 24, "0123456789abcdefghjkmnpqrstvwxyz")
}

func paddleSampleData(eventID, eventType string, now time.Time) any {
	entity, action, _ := strings.Cut(eventType, ".")
	created := now.Add(-30 * 24 * time.Hour)
	switch entity {
	case "subscription":
		status := "active"
		switch action {
		case "canceled", "paused", "past_due", "trialing":
			status = action
		}
		var canceledAt, pausedAt, nextBilledAt any
		nextBilledAt = paddleTime(now.AddDate(0, 1, 0))
		switch status {
		case "canceled":
			canceledAt, nextBilledAt = paddleTime(now), nil
		case "paused":
			pausedAt, nextBilledAt = paddleTime(now), nil
		}
		cycle := map[string]any{"interval": "month", "frequency": 1}
		credits := 1000
		return map[string]any{
			"id":              paddleID("sub", eventID),
			"status":          status,
			"customer_id":     paddleID("ctm", eventID),
			"address_id":      paddleID("add", eventID),
			"business_id":     nil,
			"currency_code":   "USD",
			"created_at":      paddleTime(created),
			"updated_at":      paddleTime(now),
			"started_at":      paddleTime(created),
			"first_billed_at": paddleTime(created),
			"next_billed_at":  nextBilledAt,
			"paused_at":       pausedAt,
			"canceled_at":     canceledAt,
			"collection_mode": "automatic",
			"billing_details": nil,
			"current_billing_period": map[string]any{
				"starts_at": paddleTime(now),
				"ends_at":   paddleTime(now.AddDate(0, 1, 0)),
			},
			"billing_cycle":    cycle,
			"scheduled_change": nil,
			"items": []any{map[string]any{
				"status":             "active",
				"quantity":           1,
				"recurring":          true,
				"created_at":         paddleTime(created),
				"updated_at":         paddleTime(now),
				"previous_billed_at": paddleTime(now),
				"next_billed_at":     nextBilledAt,
				"trial_dates":        nil,
				"price": map[string]any{
					"id":            paddleID("pri", eventID),
					"product_id":    paddleID("pro", eventID),
					"description":   "Pro plan, monthly",
					"tax_mode":      "account_setting",
					"billing_cycle": cycle,
					"trial_period":  nil,
					"unit_price":    map[string]any{"amount": "1000", "currency_code": "USD"},
				},
			}},
			"custom_data": map[string]any{"plan": "pro", "credits": credits, "email": sampleEmail(eventID)},
			"import_meta": nil,
		}
	case "customer":
		return map[string]any{
			"id":                paddleID("ctm", eventID),
			"name":              "Ada Lovelace",
			"email":             sampleEmail(eventID),
			"locale":            "en",
			"status":            "active",
			"created_at":        paddleTime(created),
			"updated_at":        paddleTime(now),
			"custom_data":       nil,
			"import_meta":       nil,
			"marketing_consent": false,
		}
	case "transaction":
		return map[string]any{
			"id":              paddleID("txn", eventID),
			"status":          paddleTransactionStatus(action),
			"customer_id":     paddleID("ctm", eventID),
			"subscription_id": paddleID("sub", eventID),
			"currency_code":   "USD",
			"origin":          "subscription_recurring",
			"collection_mode": "automatic",
			"billed_at":       paddleTime(now),
			"created_at":      paddleTime(now),
			"updated_at":      paddleTime(now),
			"details": map[string]any{
				"totals": map[string]any{"subtotal": "1000", "tax": "200", "total": "1200", "currency_code": "USD"},
			},
		}
	default:
		return map[string]any{
			"id":         paddleID(entityPrefix(entity), eventID),
			"status":     "active",
			"created_at": paddleTime(created),
			"updated_at": paddleTime(now),
		}
	}
}

// paddleTransactionStatus maps a transaction.* action to the status the
// entity has after it.
func paddleTransactionStatus(action string) string {
	switch action {
	case "billed", "paid", "completed", "canceled", "past_due", "ready":
		return action
	case "created":
		return "draft"
	}
	return "completed"
}

// Sign returns a Paddle-Signature header for body, signed with the first
// secret at now, and the target "/webhooks/paddle". Paddle carries the
// event id and type in the body, so eventID and eventType are unused.
func (p *Paddle) Sign(eventID, eventType string, body []byte, now time.Time) (http.Header, string, error) {
	if now.Unix() < 0 {
		return nil, "", errors.New("paddle: cannot sign before 1970")
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	var mac [macSize]byte
	p.keys[0].sum(&mac, body, ':', ts)
	h := http.Header{}
	h.Set(PaddleSignatureHeader, "ts="+ts+";h1="+hex.EncodeToString(mac[:]))
	return h, "/webhooks/paddle", nil
}
