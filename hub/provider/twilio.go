package provider

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Header names of Twilio webhook requests, in canonical form.
const (
	TwilioSignatureHeader = "X-Twilio-Signature"
	// TwilioSettingsHeader names the MAC algorithm of a "Webhooks Rule"
	// signature: "key=<id>,algorithm=HMAC_SHA256". Without it the MAC is
	// HMAC-SHA1.
	TwilioSettingsHeader = "X-Twilio-Webhooks-Signature-Settings"
	// TwilioIdempotencyHeader carries a token that stays the same across
	// Twilio's retries of one request.
	TwilioIdempotencyHeader = "I-Twilio-Idempotency-Token"
)

// TwilioTypeParam is the query parameter of the webhook URL that names the
// event type: configure Twilio to call
// https://hub.example.com/webhooks/twilio?type=sms.status. The query is
// part of what Twilio signs, so the type cannot be forged.
const TwilioTypeParam = "type"

// TwilioConfig configures a Twilio verifier.
type TwilioConfig struct {
	// PublicURL is the hub's base URL as Twilio calls it (HUB_PUBLIC_URL):
	// scheme, host, optional port and optional path prefix, without query,
	// e.g. "https://hub.example.com". The URL Twilio signs is PublicURL
	// followed by the request-target the hub receives, so behind a proxy
	// that strips a path prefix, PublicURL carries that prefix. Required.
	PublicURL string
}

// Twilio verifies Twilio webhook requests (voice, messaging and status
// callbacks).
//
// X-Twilio-Signature is the standard base64 HMAC-SHA1, keyed with the
// Auth Token's bytes, of the full URL Twilio requested (PublicURL plus the
// path and query as received) followed, for a form body, by every
// parameter's name and URL-decoded value, sorted by name in byte order (the
// values of a repeated name sorted too, each preceded by the name). When
// the URL's query carries bodySHA256 (Twilio's JSON bodies), the MAC
// covers the URL alone and the body must hash to bodySHA256. Both the URL
// as configured and the URL with its port added (the scheme's default) or
// removed are tried, as the official SDKs do. Under a Webhooks Rule the
// X-Twilio-Webhooks-Signature-Settings header names HMAC_SHA256, which
// replaces HMAC-SHA1 over the same string; the rule's shared key is then
// one of the secrets. Every secret is tried: Twilio signs with the primary
// Auth Token, so keep the secondary one configured while promoting it.
//
// The request carries no signed timestamp: replays are caught by
// deduplication on the event id alone. The event id is the
// I-Twilio-Idempotency-Token header (not signed) or else, from the signed
// parameters, the MessageSid, SmsSid or CallSid followed by ":" and the
// status (MessageStatus, SmsStatus or CallStatus), e.g.
// "SM0123…:delivered". The type is the URL's type parameter when present
// (signed, since the URL is); otherwise "message.<status>" or
// "call.<status>" as inferred from the parameters. OccurredAt is the
// Timestamp parameter of call status callbacks, when present.
//
// Verification needs the request URL, so the server must call
// VerifyRequest; Verify always fails. A Twilio is safe for concurrent use.
// It implements Provider, RequestVerifier, Payloader, Sender and
// TypedSender.
type Twilio struct {
	sha1Keys   []*macKey
	sha256Keys []*macKey
	// bases are PublicURL as configured and with the port added or
	// removed; bases[0] signs.
	bases [2][]byte
}

var (
	_ Provider        = (*Twilio)(nil)
	_ RequestVerifier = (*Twilio)(nil)
	_ Payloader       = (*Twilio)(nil)
	_ Sender          = (*Twilio)(nil)
	_ TypedSender     = (*Twilio)(nil)
)

// NewTwilio returns a Twilio verifier that accepts a signature made with
// any of secrets (Auth Tokens, or Webhooks Rule shared keys, used as
// bytes; the first one signs in Sign). It fails when secrets is empty, a
// secret is the empty string, or cfg.PublicURL is missing or not an
// absolute http(s) URL without query, fragment or user info.
func NewTwilio(secrets []string, cfg TwilioConfig) (*Twilio, error) {
	if len(secrets) == 0 {
		return nil, errors.New("twilio: no secret configured")
	}
	t := &Twilio{sha1Keys: make([]*macKey, len(secrets)), sha256Keys: make([]*macKey, len(secrets))}
	for i, s := range secrets {
		if s == "" {
			return nil, fmt.Errorf("twilio: secret %d is empty", i)
		}
		t.sha1Keys[i] = newMACKeyHash(sha1.New, []byte(s))
		t.sha256Keys[i] = newMACKey([]byte(s))
	}
	bases, err := twilioBases(cfg.PublicURL)
	if err != nil {
		return nil, err
	}
	t.bases = [2][]byte{[]byte(bases[0]), []byte(bases[1])}
	return t, nil
}

// newTwilioFactory is Twilio's registry factory: it takes the public URL
// from o and ignores the tolerance (Twilio signs no timestamp).
func newTwilioFactory(secrets []string, o Options) (Provider, error) {
	return provide(NewTwilio(secrets, TwilioConfig{PublicURL: o.PublicURL}))
}

// twilioBases validates a public URL and returns it as configured (less a
// trailing '/') and with its port added (the scheme's default) or removed.
func twilioBases(public string) ([2]string, error) {
	if public == "" {
		return [2]string{}, errors.New("twilio: no public URL configured: set it to the base URL Twilio calls, e.g. https://hub.example.com")
	}
	u, err := url.Parse(public)
	switch {
	case err != nil:
		return [2]string{}, fmt.Errorf("twilio: public URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return [2]string{}, fmt.Errorf("twilio: public URL %q is not http or https", public)
	case u.Host == "" || u.Opaque != "":
		return [2]string{}, fmt.Errorf("twilio: public URL %q has no host", public)
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(public, "#"):
		return [2]string{}, fmt.Errorf("twilio: public URL %q must not carry user info, a query or a fragment", public)
	}
	host := u.Hostname()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	without := u.Scheme + "://" + host + path
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		return [2]string{without, u.Scheme + "://" + host + ":" + port + path}, nil
	}
	return [2]string{u.Scheme + "://" + host + ":" + port + path, without}, nil
}

// Name returns "twilio".
func (t *Twilio) Name() string { return "twilio" }

// PublicURL returns the public base URL signatures are checked against.
func (t *Twilio) PublicURL() string { return string(t.bases[0]) }

// WebhookURL returns the URL to configure in Twilio for events of
// eventType: PublicURL + "/webhooks/twilio?type=" + eventType.
func (t *Twilio) WebhookURL(eventType string) string {
	return string(t.bases[0]) + twilioTarget(eventType)
}

func twilioTarget(eventType string) string {
	if eventType == "" {
		return "/webhooks/twilio"
	}
	return "/webhooks/twilio?" + TwilioTypeParam + "=" + url.QueryEscape(eventType)
}

// Static errors of the Twilio verifier.
var (
	errTwilioNoURL       = errSig("Twilio signs the request URL: the server must call VerifyRequest")
	errTwilioNoHeader    = errSig("missing X-Twilio-Signature header")
	errTwilioBadSettings = errSig("X-Twilio-Webhooks-Signature-Settings names no supported algorithm")
	errTwilioMalformed   = errSig("X-Twilio-Signature is not the standard base64 of a MAC of the named algorithm")
	errTwilioBadURI      = errSig("request-target is not a path")
	errTwilioBadForm     = errSig("body is not a well-formed form")
	errTwilioBadHash     = errSig("bodySHA256 is not 64 hex digits")
	errTwilioMismatch    = errSig("X-Twilio-Signature matches no secret")
	errTwilioBodyHash    = errSig("body does not match the URL's bodySHA256")
	errTwilioNoID        = errPayload("no I-Twilio-Idempotency-Token header and no MessageSid, SmsSid or CallSid parameter")
	errTwilioNoType      = errPayload("no event type: add ?type=<type> to the webhook URL configured in Twilio")
)

// Verify always fails: the signature covers the request URL, which only
// VerifyRequest receives.
func (t *Twilio) Verify(h Header, body []byte, now time.Time) (Event, error) {
	return Event{}, errTwilioNoURL
}

// twilioAlgorithm is the MAC of a Twilio signature.
type twilioAlgorithm int

const (
	twilioSHA1 twilioAlgorithm = iota
	twilioSHA256
)

// parseTwilioSettings parses an X-Twilio-Webhooks-Signature-Settings value,
// ','-separated key=value pairs with optional spaces, and returns the
// algorithm it names: HMAC_SHA1 when the header is empty or names none,
// HMAC_SHA256 or HMAC_SHA1 as named (case-insensitively). A repeated or
// unknown algorithm fails.
func parseTwilioSettings(header string) (twilioAlgorithm, bool) {
	alg, seen := twilioSHA1, false
	for rest := header; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		key, value, _ := strings.Cut(trimOWS(part), "=")
		if !strings.EqualFold(key, "algorithm") {
			continue
		}
		if seen {
			return 0, false
		}
		seen = true
		switch {
		case strings.EqualFold(value, "HMAC_SHA256"):
			alg = twilioSHA256
		case strings.EqualFold(value, "HMAC_SHA1"):
			alg = twilioSHA1
		default:
			return 0, false
		}
	}
	return alg, true
}

// parseTwilioSignature decodes an X-Twilio-Signature value, the canonical
// padded standard base64 of a MAC of alg (20 bytes for HMAC-SHA1, 32 for
// HMAC-SHA256), into dst, and returns the MAC's length.
func parseTwilioSignature(dst *[macSize]byte, header string, alg twilioAlgorithm) (int, bool) {
	if alg == twilioSHA256 {
		return macSize, decodeB64MAC(dst, header)
	}
	const n, encLen = sha1.Size, 28 // base64 of 20 bytes, with one '='
	if len(header) != encLen {
		return 0, false
	}
	var src [encLen]byte
	var mac [21]byte // DecodedLen(28)
	copy(src[:], header)
	if m, err := strictB64.Decode(mac[:], src[:]); err != nil || m != n {
		return 0, false
	}
	copy(dst[:], mac[:n])
	return n, true
}

// twilioRequestTarget returns the path and query of a request-target: uri
// itself in origin form ("/webhooks/twilio?type=x"), the part from the
// path on in absolute form ("https://host/webhooks/twilio?type=x").
func twilioRequestTarget(uri string) (string, bool) {
	if strings.HasPrefix(uri, "/") {
		return uri, true
	}
	_, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return "", false
	}
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		if rest[i] == '?' {
			return "/" + rest[i:], true
		}
		return rest[i:], true
	}
	return "/", true
}

// appendTwilioParams appends to dst every form parameter's name and value,
// sorted by name in byte order; the values of a repeated name are sorted
// and each is preceded by the name (as twilio-python and twilio-node do;
// twilio-go signs only the first value, which would let unsigned values
// in).
func appendTwilioParams(dst []byte, form url.Values) []byte {
	names := make([]string, 0, len(form))
	for name := range form {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		values := form[name]
		if len(values) > 1 {
			values = slices.Sorted(slices.Values(values))
		}
		for _, v := range values {
			dst = append(dst, name...)
			dst = append(dst, v...)
		}
	}
	return dst
}

// VerifyRequest authenticates a Twilio request and returns its event.
func (t *Twilio) VerifyRequest(r Request) (Event, error) {
	header := r.Header.Get(TwilioSignatureHeader)
	if header == "" {
		return Event{}, errTwilioNoHeader
	}
	alg, ok := parseTwilioSettings(r.Header.Get(TwilioSettingsHeader))
	if !ok {
		return Event{}, errTwilioBadSettings
	}
	var sig [macSize]byte
	n, ok := parseTwilioSignature(&sig, header, alg)
	if !ok {
		return Event{}, errTwilioMalformed
	}
	target, ok := twilioRequestTarget(r.URI)
	if !ok {
		return Event{}, errTwilioBadURI
	}
	_, rawQuery, _ := strings.Cut(target, "?")
	query, _ := url.ParseQuery(rawQuery) // what parses; the MAC covers the raw bytes anyway

	// The signed string, less the base URL: the target, then the form's
	// parameters, unless the body is JSON announced by bodySHA256.
	var form url.Values
	signed := make([]byte, 0, len(target)+len(r.Body)+64)
	signed = append(signed, target...)
	bodyHash, jsonBody := query["bodySHA256"]
	if !jsonBody {
		var err error
		if form, err = url.ParseQuery(string(r.Body)); err != nil {
			return Event{}, errTwilioBadForm
		}
		signed = appendTwilioParams(signed, form)
	}
	keys := t.sha1Keys
	if alg == twilioSHA256 {
		keys = t.sha256Keys
	}
	if !t.authenticate(keys, sig[:n], signed) {
		return Event{}, errTwilioMismatch
	}
	if jsonBody {
		var want [sha256.Size]byte
		if !decodeHexMAC(&want, bodyHash[0]) {
			return Event{}, errTwilioBadHash
		}
		got := sha256.Sum256(r.Body)
		if !hmac.Equal(got[:], want[:]) {
			return Event{}, errTwilioBodyHash
		}
	}
	ev, err := twilioEvent(r.Header, query, form)
	if err != nil {
		return Event{}, err
	}
	ev.Signature = header
	return ev, nil
}

// authenticate reports whether, for either base URL and any key, the MAC
// of base+signed equals sig. Every comparison is constant-time.
func (t *Twilio) authenticate(keys []*macKey, sig, signed []byte) bool {
	ok := false
	for _, base := range t.bases {
		for _, k := range keys {
			st := k.acquire()
			st.h.Write(base)
			st.h.Write(signed)
			if hmac.Equal(st.h.Sum(st.sum[:0]), sig) {
				ok = true
			}
			k.release(st)
		}
	}
	return ok
}

// twilioEvent extracts the event of an authentic request.
func twilioEvent(h Header, query, form url.Values) (Event, error) {
	var ev Event
	sid, status, kind := "", "", ""
	switch {
	case form.Get("MessageSid") != "" || form.Get("SmsSid") != "":
		sid, kind = firstNonEmpty(form.Get("MessageSid"), form.Get("SmsSid")), "message"
		status = firstNonEmpty(form.Get("MessageStatus"), form.Get("SmsStatus"))
	case form.Get("CallSid") != "":
		sid, kind, status = form.Get("CallSid"), "call", form.Get("CallStatus")
	}
	if token := h.Get(TwilioIdempotencyHeader); token != "" {
		ev.ID = token
	} else if sid != "" {
		ev.ID = sid
		if status != "" {
			ev.ID += ":" + status
		}
	} else {
		return Event{}, errTwilioNoID
	}
	if err := checkText("", "event id", ev.ID, maxEventIDLen); err != nil {
		return Event{}, err
	}
	switch {
	case query.Get(TwilioTypeParam) != "":
		ev.Type = query.Get(TwilioTypeParam)
	case kind != "" && status != "":
		ev.Type = kind + "." + status
	case kind != "":
		ev.Type = kind
	default:
		return Event{}, errTwilioNoType
	}
	if err := checkText("", "type", ev.Type, maxEventTypeLen); err != nil {
		return Event{}, err
	}
	if ts := form.Get("Timestamp"); ts != "" {
		if at, err := time.Parse(time.RFC1123Z, ts); err == nil {
			ev.OccurredAt = at
		}
	}
	return ev, nil
}

// firstNonEmpty returns the first of a and b that is not empty.
func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// PayloadJSON returns the JSON view of a body VerifyRequest accepted, for
// the archive's payload column: a JSON body (the bodySHA256 variant) as
// is, a form body as a JSON object of its parameters, each a string, or an
// array of strings for a repeated name ({"CallSid":"CA…","Digits":"1234"}).
func (t *Twilio) PayloadJSON(body []byte) ([]byte, error) {
	if c := firstNonSpace(body); (c == '{' || c == '[') && json.Valid(body) {
		return body, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("%w: body is neither JSON nor a form: %v", ErrPayload, err)
	}
	obj := make(map[string]any, len(form))
	for name, values := range form {
		if len(values) == 1 {
			obj[name] = values[0]
		} else {
			obj[name] = values
		}
	}
	return json.Marshal(obj)
}

// sign returns the X-Twilio-Signature (HMAC-SHA1, first secret) for body
// sent to target, with I-Twilio-Idempotency-Token (eventID), User-Agent
// and Content-Type. A JSON body is signed in the bodySHA256 variant, whose
// hash sign appends to target.
func (t *Twilio) sign(eventID, target string, body []byte) (http.Header, string, error) {
	if eventID == "" || len(eventID) > maxEventIDLen || hasControl(eventID) {
		return nil, "", errors.New("twilio: event id is not a valid idempotency token")
	}
	h := http.Header{}
	signed := []byte(target)
	if c := firstNonSpace(body); (c == '{' || c == '[') && json.Valid(body) {
		sum := sha256.Sum256(body)
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		target += sep + "bodySHA256=" + hex.EncodeToString(sum[:])
		signed = []byte(target)
		h.Set("Content-Type", "application/json")
	} else {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, "", fmt.Errorf("twilio: body is neither JSON nor a form: %w", err)
		}
		signed = appendTwilioParams(signed, form)
		h.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	st := t.sha1Keys[0].acquire()
	st.h.Write(t.bases[0])
	st.h.Write(signed)
	h.Set(TwilioSignatureHeader, base64.StdEncoding.EncodeToString(st.h.Sum(st.sum[:0])))
	t.sha1Keys[0].release(st)
	h.Set(TwilioIdempotencyHeader, eventID)
	h.Set("User-Agent", "TwilioProxy/1.1")
	return h, target, nil
}

// Sign returns the headers authenticating a form body posted to
// PublicURL + "/webhooks/twilio" (no query): X-Twilio-Signature, signed
// with the first secret, I-Twilio-Idempotency-Token (eventID), User-Agent
// and Content-Type. Without ?type=, Verify infers the type from the body
// (message.<status>, call.<status>), as for Sample's bodies. A JSON body
// needs bodySHA256 in the URL: use SignTyped.
func (t *Twilio) Sign(eventID string, body []byte, now time.Time) (http.Header, error) {
	h, target, err := t.sign(eventID, twilioTarget(""), body)
	if err != nil {
		return nil, err
	}
	if target != twilioTarget("") {
		return nil, errors.New("twilio: a JSON body is signed with its bodySHA256 in the URL: use SignTyped")
	}
	return h, nil
}

// SignTyped returns the headers authenticating body posted to target,
// "/webhooks/twilio?type=<eventType>" (plus "&bodySHA256=<hex>" for a JSON
// body), as Twilio would sign it for a webhook configured at
// WebhookURL(eventType).
func (t *Twilio) SignTyped(eventID, eventType string, body []byte, now time.Time) (http.Header, string, error) {
	if eventType == "" {
		return nil, "", errors.New("twilio: empty event type")
	}
	return t.sign(eventID, twilioTarget(eventType), body)
}

// Twilio statuses, for samples.
var (
	twilioMessageStatuses = []string{"accepted", "scheduled", "canceled", "queued", "sending", "sent", "failed", "delivered", "undelivered", "receiving", "received", "read", "partially_delivered"}
	twilioCallStatuses    = []string{"queued", "initiated", "ringing", "in-progress", "completed", "busy", "failed", "no-answer", "canceled"}
)

// twilioSID derives a Twilio SID (two letters and 32 hex digits) from seed.
func twilioSID(prefix, seed string) string {
	return prefix + derive(prefix+"/"+seed, 32, "0123456789abcdef")
}

// Sample returns a form-encoded Twilio request body. Types whose first
// token is call, calls or voice give a voice call webhook, every other
// type a messaging one. The status is the type's second token when it is
// a Twilio status ("message.delivered", "call.completed"; the default is
// received for messages, ringing for calls), so that Verify infers the
// same type when the URL carries none. SIDs depend only on eventID, so the
// output is deterministic given its inputs. data, when not nil, must be a
// JSON object of strings, numbers, booleans or nulls: its members replace
// parameters of the same name (null removes one).
func (t *Twilio) Sample(eventID, eventType string, data []byte, now time.Time) ([]byte, error) {
	if eventID == "" || eventType == "" {
		return nil, errors.New("twilio: sample needs an event id and type")
	}
	kind, action, _ := strings.Cut(eventType, ".")
	account := twilioSID("AC", "account")
	form := url.Values{}
	set := func(kv ...string) {
		for i := 0; i+1 < len(kv); i += 2 {
			form.Set(kv[i], kv[i+1])
		}
	}
	set("AccountSid", account, "ApiVersion", "2010-04-01",
		"From", "+14155550123", "FromCity", "SAN FRANCISCO", "FromState", "CA", "FromZip", "94105", "FromCountry", "US",
		"To", "+442071838750", "ToCity", "", "ToState", "", "ToZip", "", "ToCountry", "GB")
	switch kind {
	case "call", "calls", "voice":
		status := "ringing"
		if slices.Contains(twilioCallStatuses, action) {
			status = action
		}
		set("CallSid", twilioSID("CA", eventID), "CallStatus", status, "Direction", "inbound",
			"Caller", "+14155550123", "CallerCity", "SAN FRANCISCO", "CallerState", "CA", "CallerZip", "94105", "CallerCountry", "US",
			"Called", "+442071838750", "CalledCity", "", "CalledState", "", "CalledZip", "", "CalledCountry", "GB",
			"StirVerstat", "TN-Validation-Passed-A",
			"CallToken", `{"parentCallInfoToken":"eyJhbGciOiJFUzI1NiJ9.`+derive("token/"+eventID, 160, base62)+`","identityHeaderTokens":[]}`)
		if status == "completed" {
			set("CallDuration", "42", "Duration", "1", "SipResponseCode", "200",
				"CallbackSource", "call-progress-events", "SequenceNumber", "3",
				"Timestamp", now.UTC().Format(time.RFC1123Z))
		}
	default:
		status := "received"
		if slices.Contains(twilioMessageStatuses, action) {
			status = action
		}
		sid := twilioSID("SM", eventID)
		set("MessageSid", sid, "SmsSid", sid, "SmsMessageSid", sid, "SmsStatus", status,
			"MessagingServiceSid", twilioSID("MG", "service"), "NumMedia", "0", "NumSegments", "1", "ReferralNumMedia", "0",
			"Body", "Hi! Is the analytical engine still available for a demo on Thursday afternoon? It would be great to bring two colleagues along.")
		if status != "received" {
			set("MessageStatus", status, "ChannelToAddress", "+44207183XXXX", "ChannelPrefix", "sms",
				"ChannelInstallSid", twilioSID("XE", "channel"), "StructuredMessage", "false")
		}
		if status == "failed" || status == "undelivered" {
			set("ErrorCode", "30003", "ErrorMessage", "Unreachable destination handset")
		}
	}
	if data != nil {
		var members map[string]json.RawMessage
		if firstNonSpace(data) != '{' || json.Unmarshal(data, &members) != nil {
			return nil, errors.New("twilio: sample data is not a JSON object")
		}
		for name, raw := range members {
			var s string
			switch {
			case string(raw) == "null":
				form.Del(name)
				continue
			case raw[0] == '"':
				if err := json.Unmarshal(raw, &s); err != nil {
					return nil, err
				}
			case raw[0] == '{' || raw[0] == '[':
				return nil, fmt.Errorf("twilio: sample data member %q is not a string, number or boolean", name)
			default:
				s = string(raw)
			}
			form.Set(name, s)
		}
	}
	return []byte(form.Encode()), nil
}
