package provider

import (
	"cmp"
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
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/internal/jsontext"
	"github.com/hookhub/hookhub/schema"
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

// TwilioPath is the path Twilio calls: the hub mounts every provider at
// /webhooks/<name>. The URL the hub verifies a signature against is the
// configured public URL followed by TwilioPath and the query; the path a
// request arrives with is never used in their place.
const TwilioPath = "/webhooks/twilio"

// TwilioTypeParam is the query parameter of the webhook URL that names the
// event type: configure Twilio to call WebhookURL(type), e.g.
// https://hub.example.com/webhooks/twilio?type=sms.status. The query is
// part of what Twilio signs and the hub accepts it only in that exact form
// (see Verify), so the type of a delivery to such a URL cannot be
// changed without the signature failing. A type the hub infers from the
// form's parameters (a URL without ?type=) does not have that guarantee.
const TwilioTypeParam = "type"

// twilioHashParam is the query parameter Twilio appends to the configured
// URL for a JSON body: the body's SHA-256, in lowercase hex.
const twilioHashParam = "bodySHA256"

// ValidTwilioType reports whether t can be a Twilio event type, in ?type=
// or in Options.TwilioTypes: 1 to 128 bytes of tokens of [a-z0-9_-]
// separated by single dots ("sms.status", "voice.no-answer"). The grammar
// has no upper-case letter, '&', '=' or '%' on purpose: Twilio's parameter
// names start with an upper-case letter, so the type's last byte and the
// first parameter name's first byte can never be confused in the signed
// string (see Verify). Such a type is also a valid subject suffix.
func ValidTwilioType(t string) bool {
	if len(t) == 0 || len(t) > maxEventTypeLen || t[0] == '.' || t[len(t)-1] == '.' {
		return false
	}
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '-':
		case c == '.' && t[i-1] != '.':
		default:
			return false
		}
	}
	return true
}

// Twilio verifies Twilio webhook requests (voice, messaging and status
// callbacks).
//
// X-Twilio-Signature is the standard base64 HMAC-SHA1, keyed with the
// Auth Token's bytes, of the full URL Twilio requested followed, for a form
// body, by every parameter's name and URL-decoded value, sorted by name
// (each distinct value of a repeated name once, the values sorted too,
// each preceded by the name: see appendTwilioParams). When the URL's query carries bodySHA256 (Twilio's JSON
// bodies), the MAC covers the URL alone and the body must hash to
// bodySHA256. The URL is always PublicURL + TwilioPath + the query, never
// the path received; both PublicURL as configured and with its port added
// (the scheme's default) or removed are tried, as the official SDKs do.
// Under a Webhooks Rule the X-Twilio-Webhooks-Signature-Settings header
// names HMAC_SHA256, which replaces HMAC-SHA1 over the same string; the
// rule's shared key is then one of the secrets. Every secret is tried:
// Twilio signs with the primary Auth Token, so keep the secondary one
// configured while promoting it.
//
// The signed string has no delimiters, so the hub accepts only requests
// whose boundaries it can place unambiguously: see Verify for the
// rules and why they suffice, and for what they cannot protect.
//
// The request carries no signed timestamp: replays are caught by
// deduplication on the event id alone. The event id is the
// I-Twilio-Idempotency-Token header (not signed) or else, from the form,
// the MessageSid, SmsSid or CallSid followed by ":" and the status
// (MessageStatus, SmsStatus or CallStatus), e.g. "SM0123…:delivered". The
// type is the URL's type parameter when present; otherwise, unless Types
// are configured, "message.<status>" or "call.<status>" as inferred from
// the form. OccurredAt is the Timestamp parameter of call status
// callbacks, when present.
//
// Verification needs the request URL: Request.URI. A Twilio is safe for
// concurrent use. It implements Provider, Payloader and Signer.
type Twilio struct {
	sha1Keys   []*macKey
	sha256Keys []*macKey
	// bases are PublicURL as configured and with the port added or
	// removed, each followed by TwilioPath; bases[0] signs.
	bases [2][]byte
	// types are the accepted event types; nil accepts any valid type and
	// the URL without one.
	types map[string]bool
}

var (
	_ Provider  = (*Twilio)(nil)
	_ Payloader = (*Twilio)(nil)
	_ Signer    = (*Twilio)(nil)
)

// NewTwilio returns a Twilio verifier that accepts a signature made with
// any of secrets (Auth Tokens, or Webhooks Rule shared keys, used as
// bytes; the first one signs in Sign). It fails when secrets is empty, a
// secret is the empty string, o.PublicURL is missing or not an absolute
// http(s) URL without query, fragment or user info, or one of
// o.TwilioTypes is not a valid type (ValidTwilioType). Twilio signs no
// timestamp, so it ignores o.Tolerance.
func NewTwilio(secrets []string, o Options) (*Twilio, error) {
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
	bases, err := twilioBases(o.PublicURL)
	if err != nil {
		return nil, err
	}
	t.bases = [2][]byte{[]byte(bases[0] + TwilioPath), []byte(bases[1] + TwilioPath)}
	if len(o.TwilioTypes) > 0 {
		t.types = make(map[string]bool, len(o.TwilioTypes))
		for _, typ := range o.TwilioTypes {
			if !ValidTwilioType(typ) {
				return nil, fmt.Errorf("twilio: type %q is not lowercase tokens of [a-z0-9_-] separated by dots", typ)
			}
			t.types[typ] = true
		}
	}
	return t, nil
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
func (t *Twilio) PublicURL() string { return strings.TrimSuffix(string(t.bases[0]), TwilioPath) }

// WebhookURL returns the URL to configure in Twilio for events of
// eventType: PublicURL + "/webhooks/twilio?type=" + eventType. It is a URL
// the hub accepts only when eventType is valid (ValidTwilioType) and, if
// types are configured, one of them.
func (t *Twilio) WebhookURL(eventType string) string {
	return t.PublicURL() + twilioTarget(eventType)
}

func twilioTarget(eventType string) string {
	if eventType == "" {
		return TwilioPath
	}
	return TwilioPath + "?" + TwilioTypeParam + "=" + url.QueryEscape(eventType)
}

// Static errors of the Twilio verifier.
var (
	errTwilioNoHeader    = errSig("missing X-Twilio-Signature header")
	errTwilioBadSettings = errSig("X-Twilio-Webhooks-Signature-Settings names no supported algorithm")
	errTwilioMalformed   = errSig("X-Twilio-Signature is not the standard base64 of a MAC of the named algorithm")
	errTwilioBadPath     = errSig("request-target is not " + TwilioPath + " or " + TwilioPath + "?<query> in origin form")
	errTwilioBadQuery    = errSig("query is not type=<type>, bodySHA256=<hash> or type=<type>&bodySHA256=<hash>")
	errTwilioBadType     = errSig("type is not lowercase tokens of [a-z0-9_-] separated by dots")
	errTwilioBadHash     = errSig("bodySHA256 is not 64 lowercase hex digits")
	errTwilioTypeUnknown = errSig("type is not one of the configured Twilio types")
	errTwilioTypeMissing = errSig("URL has no type and Twilio types are configured: only their webhook URLs are accepted")
	errTwilioBadForm     = errSig("body is not a well-formed form")
	errTwilioFirstName   = errSig("the form's first parameter name (in byte order) does not start with an upper-case letter, as Twilio's do")
	errTwilioMismatch    = errSig("X-Twilio-Signature matches no secret")
	errTwilioBodyHash    = errSig("body does not match the URL's bodySHA256")
	errTwilioBadStatus   = errSig("the inferred type is not lowercase tokens: the form's status is no Twilio status")
	errTwilioNoID        = errPayload("no I-Twilio-Idempotency-Token header and no MessageSid, SmsSid or CallSid parameter")
	errTwilioNoType      = errPayload("no event type: add ?type=<type> to the webhook URL configured in Twilio")
)

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

// twilioQuery is the query of an accepted request-target.
type twilioQuery struct {
	typ      string // the type parameter; "" when absent
	bodyHash string // the bodySHA256 parameter; "" when absent (a form body)
}

// parseTwilioTarget parses a request-target as received. It accepts
// exactly TwilioPath, optionally followed by "?" and one of the queries
// "type=T", "bodySHA256=H" and "type=T&bodySHA256=H", byte for byte: T
// satisfies ValidTwilioType (so it needs no escaping) and H is 64
// lowercase hex digits (Twilio's hex SHA-256). Anything else fails: another
// path or a prefix, the absolute form, a '#', an empty or trailing '?',
// another key, a repeated, empty or reordered key, an escaped byte.
func parseTwilioTarget(uri string) (twilioQuery, error) {
	rest, ok := strings.CutPrefix(uri, TwilioPath)
	switch {
	case !ok:
		return twilioQuery{}, errTwilioBadPath
	case rest == "":
		return twilioQuery{}, nil
	case rest[0] != '?':
		return twilioQuery{}, errTwilioBadPath
	}
	var q twilioQuery
	param, rest, more := strings.Cut(rest[1:], "&")
	if v, ok := strings.CutPrefix(param, TwilioTypeParam+"="); ok {
		if !ValidTwilioType(v) {
			return twilioQuery{}, errTwilioBadType
		}
		q.typ = v
		if !more {
			return q, nil
		}
		param, rest, more = strings.Cut(rest, "&")
	}
	v, ok := strings.CutPrefix(param, twilioHashParam+"=")
	switch {
	case !ok || more:
		return twilioQuery{}, errTwilioBadQuery
	case !validLowerHexSHA256(v):
		return twilioQuery{}, errTwilioBadHash
	}
	q.bodyHash = v
	return q, nil
}

// validLowerHexSHA256 reports whether s is 64 lowercase hex digits.
func validLowerHexSHA256(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Verify authenticates a Twilio request and returns its event.
//
// Twilio signs S = B || P || Q || F with no delimiters, where B is the
// public URL (either port variant), P is TwilioPath, Q is "?" and the
// query (or nothing) and F is the form's names and values in sorted order
// (or nothing, for a JSON body announced by bodySHA256). Because nothing
// separates the parts, bytes could be moved from one to the next without
// changing S, so the hub accepts a request only if its parts are the only
// ones S decomposes into, under these rules:
//
//  1. B || P comes from configuration, never from the request: the path
//     received must be exactly P (no prefix, no absolute form). The two
//     variants of B differ right after the host (a ':' and a port, or
//     not), so S starts with exactly one of them.
//  2. Q is empty, "?type=T", "?bodySHA256=H" or "?type=T&bodySHA256=H",
//     byte for byte, with T in [a-z0-9_.-]+ (ValidTwilioType) and H 64
//     lowercase hex digits: no other key, no repetition, no escape, no
//     empty or trailing part, nothing after H.
//  3. The body is a form exactly when Q holds no bodySHA256, and then the
//     first name of F in byte order starts with [A-Z], as Twilio's do.
//     (F sorts names in UTF-16 order; the first names in both orders
//     start with the same character when either starts with ASCII: the
//     orders agree on ASCII and put it before every other character.)
//  4. A JSON body must hash to H (checked after the MAC).
//
// Take two accepted requests whose S is the same; after B || P, the same
// string X. F, when not empty, starts with [A-Z] (3), so X starts with
// '?' exactly when both requests have a query. With no query, X = F for
// both. With one, X's second byte tells "type=" from "bodySHA256=" (2);
// after "type=", T is the longest run of [a-z0-9_.-], since what follows
// it is '&', F's [A-Z] first byte or the end of X: T is the same in both.
// What follows T (or starts the query) is, for both, "&bodySHA256=" and
// H, then the end of X (a JSON body), or F (a form), or nothing. So both
// requests carry the same query, byte for byte, and both are forms or
// both JSON: moving a byte of F into T would put [A-Z] in T, a byte of T
// into F would start F outside [A-Z], a byte into or out of H would break
// its 64 lowercase hex digits or follow it. No splice across the URL,
// query, form and JSON boundaries passes: not a type grown out of the
// form's first name, not a bodySHA256 smuggled in through a form value
// (it would have to sit in the query next to keys the rules refuse).
//
// What no rule can protect is the boundaries inside F: Twilio's scheme
// does not delimit one parameter from the next, so "Body"="hiFrom+1…"
// and "Body"="hi", "From"="+1…" give the same S, and a form value whose
// text the sender chose (an SMS body) can be re-split into parameters of
// the sender's choosing. Nor are the order of a repeated name's values or
// their count signed: "Tag=b&Tag=a", "Tag=a&Tag=b" and "Tag=a&Tag=a&Tag=b"
// sign alike, as twilio-node's helper has it (appendTwilioParams). No
// verifier can tell which split Twilio sent. The
// hub therefore routes on the URL's type, never on F, when the URL
// carries one; subscribers must treat a Twilio form's parameters as
// authentic only as a whole. When the URL carries no type, the type
// inferred from F (message.<status>, call.<status>) and an id derived
// from F inherit that weakness: configure ?type= URLs, and Types to refuse
// any other.
func (t *Twilio) Verify(r Request) (Event, error) {
	q, err := parseTwilioTarget(r.URI)
	if err != nil {
		return Event{}, err
	}
	if t.types != nil {
		if q.typ == "" {
			return Event{}, errTwilioTypeMissing
		}
		if !t.types[q.typ] {
			return Event{}, errTwilioTypeUnknown
		}
	}
	var form url.Values
	if q.bodyHash == "" {
		if form, err = url.ParseQuery(string(r.Body)); err != nil {
			return Event{}, errTwilioBadForm
		}
		if !twilioFirstNameOK(form) {
			return Event{}, errTwilioFirstName
		}
	}
	// The request-target is P || Q exactly (parseTwilioTarget), so the
	// signed string is a base, r.URI less P, then F.
	header, err := t.checkSignature(r.Header, r.URI[len(TwilioPath):], form, q.bodyHash, r.Body)
	if err != nil {
		return Event{}, err
	}
	ev, err := twilioEvent(r.Header, q.typ, form)
	if err != nil {
		return Event{}, err
	}
	ev.Signature = header
	return ev, nil
}

// checkSignature checks the request's X-Twilio-Signature against each base
// (PublicURL + TwilioPath) followed by query (the part of the URL after the
// path, "?…" or empty) and, for a form body (bodyHash empty), form's sorted
// parameters; for a JSON body, body must then hash to bodyHash. It is
// Twilio's scheme alone, as the SDKs implement it: the hub's rules on what
// a request may look like are Verify's. It returns the signature
// header.
func (t *Twilio) checkSignature(h Header, query string, form url.Values, bodyHash string, body []byte) (string, error) {
	header := h.Get(TwilioSignatureHeader)
	if header == "" {
		return "", errTwilioNoHeader
	}
	alg, ok := parseTwilioSettings(h.Get(TwilioSettingsHeader))
	if !ok {
		return "", errTwilioBadSettings
	}
	var sig [macSize]byte
	n, ok := parseTwilioSignature(&sig, header, alg)
	if !ok {
		return "", errTwilioMalformed
	}
	signed := make([]byte, 0, len(query)+len(body)+64)
	signed = append(signed, query...)
	if bodyHash == "" {
		signed = appendTwilioParams(signed, form)
	}
	keys := t.sha1Keys
	if alg == twilioSHA256 {
		keys = t.sha256Keys
	}
	if !t.authenticate(keys, sig[:n], signed) {
		return "", errTwilioMismatch
	}
	if bodyHash != "" {
		var want [sha256.Size]byte
		if !decodeHexMAC(&want, bodyHash) {
			return "", errTwilioBadHash
		}
		got := sha256.Sum256(body)
		if !hmac.Equal(got[:], want[:]) {
			return "", errTwilioBodyHash
		}
	}
	return header, nil
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

// twilioEvent extracts the event of an authentic request whose URL named
// typ ("" for none).
func twilioEvent(h Header, typ string, form url.Values) (Event, error) {
	var ev Event
	sid, status, kind := "", "", ""
	switch {
	case form.Get("MessageSid") != "" || form.Get("SmsSid") != "":
		sid, kind = cmp.Or(form.Get("MessageSid"), form.Get("SmsSid")), "message"
		status = cmp.Or(form.Get("MessageStatus"), form.Get("SmsStatus"))
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
	case typ != "":
		ev.Type = typ
	case kind != "" && status != "":
		ev.Type = kind + "." + status
	case kind != "":
		ev.Type = kind
	default:
		return Event{}, errTwilioNoType
	}
	if !ValidTwilioType(ev.Type) {
		// Only an inferred type can fail: every Twilio status is
		// lowercase (in-progress, partially_delivered), so a status with
		// other bytes is a form re-split across a parameter boundary.
		return Event{}, errTwilioBadStatus
	}
	if ts := form.Get("Timestamp"); ts != "" {
		if at, err := time.Parse(time.RFC1123Z, ts); err == nil {
			ev.OccurredAt = at
		}
	}
	ev.Entities = twilioEntities(form)
	return ev, nil
}

// twilioEntities returns the entities of a Twilio form: the message
// (MessageSid, or SmsSid, "message") or the call (CallSid, "call") the
// request is about. The AccountSid is not one: it would name every
// request of the account. A JSON body (the bodySHA256 variant) names
// none. Like a type inferred from the form, they inherit the form's
// weakness (see Verify): Twilio does not sign where one parameter ends,
// so a sender whose text Twilio forwards (an SMS body) can make a
// delivery name another SID. They are a search aid, never an
// authenticated claim.
func twilioEntities(form url.Values) []hub.Entity {
	var out []hub.Entity
	out = addEntity(out, "message", cmp.Or(form.Get("MessageSid"), form.Get("SmsSid")))
	return addEntity(out, "call", form.Get("CallSid"))
}

// PayloadJSON returns the JSON view of a body Verify accepted, for
// the archive's payload column: a JSON body (the bodySHA256 variant) as
// is, a form body as schema.FormJSON has it, the rule the destinations'
// envelope follows too.
func (t *Twilio) PayloadJSON(body []byte) ([]byte, error) {
	if c := jsontext.FirstNonSpace(body); (c == '{' || c == '[') && json.Valid(body) {
		return body, nil
	}
	obj, err := schema.FormJSON(body)
	if err != nil {
		return nil, fmt.Errorf("%w: body is neither JSON nor a form: %v", ErrPayload, err)
	}
	return obj, nil
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
	signed := []byte(strings.TrimPrefix(target, TwilioPath)) // after the base, which ends in TwilioPath
	if c := jsontext.FirstNonSpace(body); (c == '{' || c == '[') && json.Valid(body) {
		sum := sha256.Sum256(body)
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		target += sep + twilioHashParam + "=" + hex.EncodeToString(sum[:])
		signed = []byte(strings.TrimPrefix(target, TwilioPath))
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

// Sign returns the headers authenticating body posted to the target it
// returns, as Twilio would sign it for a webhook configured at
// WebhookURL(eventType): X-Twilio-Signature, signed with the first secret,
// I-Twilio-Idempotency-Token (eventID), User-Agent and Content-Type. The
// target is "/webhooks/twilio?type=<eventType>", plus
// "&bodySHA256=<hex>" for a JSON body. eventType must be valid
// (ValidTwilioType), or empty: the target is then "/webhooks/twilio" with
// no query, Verify infers the type from a form body (message.<status>,
// call.<status>), and a JSON body, which needs bodySHA256 in the URL,
// fails.
func (t *Twilio) Sign(eventID, eventType string, body []byte, now time.Time) (http.Header, string, error) {
	if eventType == "" {
		h, target, err := t.sign(eventID, twilioTarget(""), body)
		if err != nil {
			return nil, "", err
		}
		if target != twilioTarget("") {
			return nil, "", errors.New("twilio: a JSON body is signed with its bodySHA256 in the URL: sign it with an event type")
		}
		return h, target, nil
	}
	if !ValidTwilioType(eventType) {
		return nil, "", fmt.Errorf("twilio: type %q is not lowercase tokens of [a-z0-9_-] separated by dots", eventType)
	}
	return t.sign(eventID, twilioTarget(eventType), body)
}
