package provider

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// The HMAC-SHA256 skeletons shared by the schemes that differ only in
// header layout: timedHMAC (Paddle, Stripe) and bodyHMAC (GitHub,
// Shopify) here, svixScheme (Clerk, Standard Webhooks) in svix.go. Each
// provider parses its own header (where the timestamp and the signatures
// are, how they are encoded) and builds its own header when signing; what
// is done with them is in the skeleton, once.

// timedHMAC is the scheme of Paddle and Stripe: one header carries a unix
// timestamp and one or more hex HMAC-SHA256 signatures of
// "<timestamp><sep><raw body>", keyed with each secret's bytes; the body
// carries the event.
type timedHMAC struct {
	name      string // provider name, the prefix of Sign's errors
	keys      []*macKey
	tolerance time.Duration
	sep       byte // ':' for Paddle, '.' for Stripe
	mismatch  error
}

// newTimedHMAC builds the scheme for provider name: one key per secret,
// used as bytes, and tolerance (def when 0). See NewPaddle for the rules.
func newTimedHMAC(name string, secrets []string, tolerance, def time.Duration, sep byte, mismatch error) (*timedHMAC, error) {
	keys, err := rawKeys(name, secrets)
	if err != nil {
		return nil, err
	}
	if tolerance, err = timestampTolerance(name, tolerance, def); err != nil {
		return nil, err
	}
	return &timedHMAC{name: name, keys: keys, tolerance: tolerance, sep: sep, mismatch: mismatch}, nil
}

// verify authenticates body against sigs, the signatures parsed from
// header, over ts (the signed timestamp's text) and checks unix against
// the tolerance at now, signature first: a forged delivery reports
// ErrInvalidSignature and an authentic but stale (or future) one
// ErrTimestamp. It then reads the event from the body with parseBody.
func (s *timedHMAC) verify(header, ts string, unix int64, sigs [][macSize]byte, body []byte, now time.Time, parseBody func([]byte) (Event, error)) (Event, error) {
	if !authenticate(s.keys, sigs, body, s.sep, ts) {
		return Event{}, s.mismatch
	}
	signedAt := time.Unix(unix, 0)
	if !withinTolerance(signedAt, now, s.tolerance) {
		return Event{}, timestampError(signedAt, now, s.tolerance)
	}
	ev, err := parseBody(body)
	if err != nil {
		return Event{}, err
	}
	ev.Signature = header
	ev.SignedAt = signedAt
	return ev, nil
}

// sign returns the timestamp of now, as signed, and the MAC of body under
// the first secret.
func (s *timedHMAC) sign(body []byte, now time.Time) (ts string, mac [macSize]byte, err error) {
	if now.Unix() < 0 {
		return "", mac, errors.New(s.name + ": cannot sign before 1970")
	}
	ts = strconv.FormatInt(now.Unix(), 10)
	s.keys[0].sum(&mac, body, s.sep, ts)
	return ts, mac, nil
}

// bodyHMAC is the scheme of GitHub and Shopify: one header carries one
// HMAC-SHA256 of the raw body, keyed with each secret's bytes; no
// timestamp is signed, and the event id and type travel in headers.
type bodyHMAC struct {
	keys []*macKey
	// hexPrefix, when not empty, makes the signature hexPrefix and 64 hex
	// digits (GitHub's "sha256="); otherwise it is the canonical padded
	// standard base64 of the MAC (Shopify).
	hexPrefix                   string
	noHeader, malform, mismatch error
}

// newBodyHMAC builds the scheme for provider name: one key per secret,
// used as bytes.
func newBodyHMAC(name string, secrets []string, hexPrefix string, noHeader, malform, mismatch error) (*bodyHMAC, error) {
	keys, err := rawKeys(name, secrets)
	if err != nil {
		return nil, err
	}
	return &bodyHMAC{keys: keys, hexPrefix: hexPrefix, noHeader: noHeader, malform: malform, mismatch: mismatch}, nil
}

// verify authenticates body against header, the signature header's value.
func (s *bodyHMAC) verify(header string, body []byte) error {
	if header == "" {
		return s.noHeader
	}
	var sig [1][macSize]byte
	if !s.decode(&sig[0], header) {
		return s.malform
	}
	if !authenticate(s.keys, sig[:], body, 0) {
		return s.mismatch
	}
	return nil
}

// decode decodes a signature header value into dst.
func (s *bodyHMAC) decode(dst *[macSize]byte, header string) bool {
	if s.hexPrefix == "" {
		return decodeB64MAC(dst, header)
	}
	hexMAC, ok := strings.CutPrefix(header, s.hexPrefix)
	return ok && decodeHexMAC(dst, hexMAC)
}

// sign returns the MAC of body under the first secret.
func (s *bodyHMAC) sign(body []byte) [macSize]byte {
	var mac [macSize]byte
	s.keys[0].sum(&mac, body, 0)
	return mac
}
