// Helpers shared by the providers: pooled HMAC keys, timestamp checks,
// error wrapping and payload limits.

package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"sync"
	"time"

	"github.com/hookhub/hookhub/hub"
)

// macSize is the size of an HMAC-SHA256 tag, the MAC of every built-in
// provider but Twilio (HMAC-SHA1 by default).
const macSize = sha256.Size

// maxSignatures bounds how many signatures a header may contribute; later
// entries are ignored. Providers send one or two (during a rotation); the
// bound keeps a huge header from costing memory and comparisons.
const maxSignatures = 16

// maxTimestampLen bounds a signed timestamp's text. Unix seconds fit in 19
// digits; the bound keeps pathological leading zeros out of the MAC input.
const maxTimestampLen = 20

// macKey is one secret's HMAC-SHA256 key. Keyed hash states are pooled, so
// Verify neither re-derives the key pads nor allocates per call, and a
// macKey is safe for concurrent use.
type macKey struct {
	pool sync.Pool // of *macState
}

// macState is a pooled keyed hash plus scratch space for the signed prefix
// and the tag, so that nothing escapes to the heap per call.
type macState struct {
	h   hash.Hash
	buf []byte // signed prefix (timestamp, id, separators)
	sum [macSize]byte
}

func newMACKey(key []byte) *macKey { return newMACKeyHash(sha256.New, key) }

// newMACKeyHash returns a macKey for HMAC over newHash (SHA-1 for Twilio).
// Only SHA-256 keys may use sum; others go through acquire and release.
func newMACKeyHash(newHash func() hash.Hash, key []byte) *macKey {
	key = append([]byte(nil), key...)
	k := &macKey{}
	k.pool.New = func() any {
		return &macState{h: hmac.New(newHash, key), buf: make([]byte, 0, 64)}
	}
	return k
}

// acquire returns a reset pooled state, for MACs whose input is assembled
// piecewise in st.buf; the tag is st.h.Sum(st.sum[:0]). Give it back with
// release.
func (k *macKey) acquire() *macState {
	st := k.pool.Get().(*macState)
	st.h.Reset()
	st.buf = st.buf[:0]
	return st
}

// release returns st to the pool. Oversized scratch buffers are dropped so
// that one huge request does not pin its memory.
func (k *macKey) release(st *macState) {
	if cap(st.buf) > 64<<10 {
		st.buf = make([]byte, 0, 64)
	}
	k.pool.Put(st)
}

// sum writes HMAC-SHA256(key, parts[0] sep parts[1] sep … sep body) to out:
// every part is followed by sep, which covers "ts:body" and "id.ts.body".
func (k *macKey) sum(out *[macSize]byte, body []byte, sep byte, parts ...string) {
	st := k.pool.Get().(*macState)
	st.h.Reset()
	st.buf = st.buf[:0]
	for _, p := range parts {
		st.buf = append(st.buf, p...)
		st.buf = append(st.buf, sep)
	}
	st.h.Write(st.buf)
	st.h.Write(body)
	*out = [macSize]byte(st.h.Sum(st.sum[:0]))
	k.pool.Put(st)
}

// anyMatch reports whether mac equals one of sigs, in constant time per
// comparison. Every signature is compared, whatever the outcome.
func anyMatch(mac *[macSize]byte, sigs [][macSize]byte) bool {
	ok := false
	for i := range sigs {
		if hmac.Equal(mac[:], sigs[i][:]) {
			ok = true
		}
	}
	return ok
}

// authenticate reports whether, for any key, the MAC over parts and body
// (see macKey.sum) matches any of sigs.
func authenticate(keys []*macKey, sigs [][macSize]byte, body []byte, sep byte, parts ...string) bool {
	var mac [macSize]byte
	for _, k := range keys {
		k.sum(&mac, body, sep, parts...)
		if anyMatch(&mac, sigs) {
			return true
		}
	}
	return false
}

// withinTolerance reports whether |now - signedAt| <= tol.
func withinTolerance(signedAt, now time.Time, tol time.Duration) bool {
	d := now.Sub(signedAt) // saturates instead of overflowing
	return d <= tol && d >= -tol
}

// parseUnixDigits parses a signed timestamp: 1 to maxTimestampLen ASCII
// digits, nothing else (no sign, no spaces), within int64.
func parseUnixDigits(s string) (int64, bool) {
	if len(s) == 0 || len(s) > maxTimestampLen {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// detailError is a sentinel plus detail for logs. Its text is
// "<sentinel>: <detail>" and errors.Is sees the sentinel.
type detailError struct {
	kind   error
	detail string
}

// Error returns "<sentinel>: <detail>".
func (e *detailError) Error() string { return e.kind.Error() + ": " + e.detail }

// Unwrap returns the sentinel.
func (e *detailError) Unwrap() error { return e.kind }

func errSig(detail string) error     { return &detailError{ErrInvalidSignature, detail} }
func errPayload(detail string) error { return &detailError{ErrPayload, detail} }

// Limits on what an event may carry: the domain's (hub.MaxEventIDLen,
// hub.MaxEventTypeLen).
const (
	maxEventIDLen   = hub.MaxEventIDLen
	maxEventTypeLen = hub.MaxEventTypeLen
)

// timestampError wraps ErrTimestamp with how far off the signed time is.
// Only authentic deliveries reach it, so it may spend an allocation.
func timestampError(signedAt, now time.Time, tol time.Duration) error {
	d := now.Sub(signedAt)
	if d > 0 {
		return fmt.Errorf("%w: signed %v ago, tolerance %v", ErrTimestamp, d, tol)
	}
	return fmt.Errorf("%w: signed %v in the future, tolerance %v", ErrTimestamp, -d, tol)
}

// decodeBody decodes a JSON object body into a B: with its decodeFast
// when that answers for the body, with json.Unmarshal otherwise.
func decodeBody[B any, P interface {
	*B
	decodeFast([]byte) bool
}](body []byte) (B, error) {
	var b B
	if P(&b).decodeFast(body) {
		return b, nil
	}
	var full B
	if err := json.Unmarshal(body, &full); err != nil {
		return full, jsonPayloadError(err)
	}
	return full, nil
}

// jsonPayloadError turns a json.Unmarshal error into an ErrPayload with a
// precise message.
func jsonPayloadError(err error) error {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field == "" {
			return fmt.Errorf("%w: body is a JSON %s, not an object", ErrPayload, te.Value)
		}
		return fmt.Errorf("%w: %s is a JSON %s, not a string", ErrPayload, te.Field, te.Value)
	}
	return fmt.Errorf("%w: body is not JSON: %v", ErrPayload, err)
}

// hasControl reports whether s holds an ASCII control character. Event ids
// and types end up in message headers, where CR and LF must never appear.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// checkText applies hub.CheckText, the one check of an event id or type,
// where a provider reads the value (a body field, a header, the URL), and
// VerifyDelivery once more to every event, whatever the provider. Its
// error wraps ErrPayload; the detail is missing when s is empty, and
// otherwise hub.CheckText's text, which starts with name ("id",
// "X-GitHub-Delivery").
func checkText(missing, name, s string, maxLen int) error {
	if s == "" {
		return errPayload(missing)
	}
	if err := hub.CheckText(name, s, maxLen); err != nil {
		return errPayload(err.Error())
	}
	return nil
}

// CheckEventID is VerifyDelivery's check of an event id (hub.CheckText, at
// most hub.MaxEventIDLen bytes), for events that reach the archive another
// way (backfill): its ErrPayload says what is wrong.
func CheckEventID(id string) error {
	return checkText("empty event id", "event id", id, maxEventIDLen)
}

// CheckEventType is VerifyDelivery's check of an event type
// (hub.CheckText, at most hub.MaxEventTypeLen bytes), for events that
// reach the archive another way.
func CheckEventType(typ string) error {
	return checkText("empty event type", "event type", typ, maxEventTypeLen)
}

// b64MACLen is the length of a padded standard base64 HMAC-SHA256.
const b64MACLen = 44

// strictB64 decodes signatures strictly, so that an accepted signature is
// the canonical encoding of its MAC.
var strictB64 = base64.StdEncoding.Strict()

// decodeB64MAC decodes s, the canonical padded standard base64 of exactly
// macSize bytes, into dst without allocating.
func decodeB64MAC(dst *[macSize]byte, s string) bool {
	if len(s) != b64MACLen {
		return false
	}
	var src [b64MACLen]byte
	var mac [macSize + 1]byte // DecodedLen(44) is 33
	copy(src[:], s)
	if n, err := strictB64.Decode(mac[:], src[:]); err != nil || n != macSize {
		return false
	}
	*dst = [macSize]byte(mac[:macSize])
	return true
}

// rawKeys builds one HMAC-SHA256 key per secret, used as bytes. It fails
// when secrets is empty or one is the empty string; errors name the
// secret's index, never its value.
func rawKeys(name string, secrets []string) ([]*macKey, error) {
	if len(secrets) == 0 {
		return nil, errors.New(name + ": no secret configured")
	}
	keys := make([]*macKey, len(secrets))
	for i, s := range secrets {
		if s == "" {
			return nil, fmt.Errorf("%s: secret %d is empty", name, i)
		}
		keys[i] = newMACKey([]byte(s))
	}
	return keys, nil
}

// timestampTolerance returns tolerance, or def when it is 0; a negative
// tolerance is an error naming the provider.
func timestampTolerance(name string, tolerance, def time.Duration) (time.Duration, error) {
	switch {
	case tolerance < 0:
		return 0, fmt.Errorf("%s: negative tolerance %v", name, tolerance)
	case tolerance == 0:
		return def, nil
	}
	return tolerance, nil
}
