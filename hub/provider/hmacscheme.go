package provider

import (
	"encoding/hex"
	"errors"
	"net/http"
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
	*timedHeader
	name      string // provider name, the prefix of Sign's errors
	keys      []*macKey
	tolerance time.Duration
}

// timedHeader is how a timedHMAC provider lays out its signature header:
// parts "<tsKey>=<unix>" and "<sigKey>=<hex>" separated by partSep, and
// the errors that name what is wrong with it.
type timedHeader struct {
	name            string // the header's name
	partSep         string // ";" for Paddle, "," for Stripe
	sep             byte   // between timestamp and body in what is signed: ':' for Paddle, '.' for Stripe
	tsKey, sigKey   string
	noHeader, noTS  error
	dupTS, badTS    error
	noSig, mismatch error
	// signedTS, when not nil, returns the timestamp's text as signed;
	// otherwise it is signed as written.
	signedTS func(header string, unix int64) string
}

// newTimedHeader is the layout of header name: partSep-separated
// key=value parts, the timestamp under tsKey and the signatures under
// sigKey, signed as <ts><sep><body>, with the errors that name them.
func newTimedHeader(name, partSep string, sep byte, tsKey, sigKey string) timedHeader {
	return timedHeader{
		name: name, partSep: partSep, sep: sep, tsKey: tsKey, sigKey: sigKey,
		noHeader: errSig("missing " + name + " header"),
		noTS:     errSig(name + " has no " + tsKey),
		dupTS:    errSig(name + " has more than one " + tsKey),
		badTS:    errSig(name + " " + tsKey + " is not a unix time"),
		noSig:    errSig(name + " has no well-formed " + sigKey),
		mismatch: errSig("no " + sigKey + " matches any secret"),
	}
}

// newTimedHMAC builds the scheme for provider name: one key per secret,
// used as bytes, and tolerance (def when 0). See NewPaddle for the rules.
func newTimedHMAC(name string, secrets []string, tolerance, def time.Duration, h *timedHeader) (*timedHMAC, error) {
	keys, err := rawKeys(name, secrets)
	if err != nil {
		return nil, err
	}
	if tolerance, err = timestampTolerance(name, tolerance, def); err != nil {
		return nil, err
	}
	return &timedHMAC{timedHeader: h, name: name, keys: keys, tolerance: tolerance}, nil
}

// Name returns the provider's name.
func (s *timedHMAC) Name() string { return s.name }

// Tolerance returns the timestamp tolerance in effect.
func (s *timedHMAC) Tolerance() time.Duration { return s.tolerance }

// parse parses a signature header value: partSep-separated key=value
// parts, with optional spaces or tabs around each part. It returns the
// timestamp exactly as written (1 to 20 ASCII digits) and its value, and
// every well-formed signature (64 hex digits, at most maxSignatures of
// them) decoded, appended to dst. Unknown keys, parts without '=' and
// malformed signatures are skipped. It fails, with an error wrapping
// ErrInvalidSignature, when the timestamp is missing, repeated or not a
// unix time, or when no signature is well-formed.
func (l *timedHeader) parse(header string, dst [][macSize]byte) (ts string, unix int64, sigs [][macSize]byte, err error) {
	sigs = dst
	haveTS := false
	for rest := header; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, l.partSep)
		key, value, ok := strings.Cut(trimOWS(part), "=")
		if !ok {
			continue
		}
		switch key {
		case l.tsKey:
			if haveTS {
				return "", 0, nil, l.dupTS
			}
			haveTS, ts = true, value
		case l.sigKey:
			var sig [macSize]byte
			if len(sigs)-len(dst) < maxSignatures && decodeHexMAC(&sig, value) {
				sigs = append(sigs, sig)
			}
		}
	}
	if !haveTS {
		return "", 0, nil, l.noTS
	}
	unix, ok := parseUnixDigits(ts)
	if !ok {
		return "", 0, nil, l.badTS
	}
	if len(sigs) == 0 {
		return "", 0, nil, l.noSig
	}
	return ts, unix, sigs, nil
}

// verify authenticates r against the signatures of its signature header,
// over the signed timestamp, and checks that timestamp against the
// tolerance at r.Now, signature first: a forged delivery reports
// ErrInvalidSignature and an authentic but stale (or future) one
// ErrTimestamp. It then reads the event from the body with parseBody.
func (s *timedHMAC) verify(r Request, parseBody func([]byte) (Event, error)) (Event, error) {
	header := r.Header.Get(s.timedHeader.name)
	if header == "" {
		return Event{}, s.noHeader
	}
	var buf [4][macSize]byte
	ts, unix, sigs, err := s.parse(header, buf[:0])
	if err != nil {
		return Event{}, err
	}
	if s.signedTS != nil {
		ts = s.signedTS(header, unix)
	}
	if !authenticate(s.keys, sigs, r.Body, s.sep, ts) {
		return Event{}, s.mismatch
	}
	signedAt := time.Unix(unix, 0)
	if !withinTolerance(signedAt, r.Now, s.tolerance) {
		return Event{}, timestampError(signedAt, r.Now, s.tolerance)
	}
	ev, err := parseBody(r.Body)
	if err != nil {
		return Event{}, err
	}
	ev.Signature = header
	ev.SignedAt = signedAt
	return ev, nil
}

// sign returns the signature header for body, signed with the first
// secret at now: "<tsKey>=<unix><partSep><sigKey>=<hex>".
func (s *timedHMAC) sign(body []byte, now time.Time) (http.Header, error) {
	if now.Unix() < 0 {
		return nil, errors.New(s.name + ": cannot sign before 1970")
	}
	var mac [macSize]byte
	ts := strconv.FormatInt(now.Unix(), 10)
	s.keys[0].sum(&mac, body, s.sep, ts)
	h := http.Header{}
	h.Set(s.timedHeader.name, s.tsKey+"="+ts+s.partSep+s.sigKey+"="+hex.EncodeToString(mac[:]))
	return h, nil
}

// bodyHMAC is the scheme of GitHub and Shopify: one header carries one
// HMAC-SHA256 of the raw body, keyed with each secret's bytes; no
// timestamp is signed, and the event id and type travel in headers.
type bodyHMAC struct {
	name string // provider name
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
	return &bodyHMAC{name: name, keys: keys, hexPrefix: hexPrefix, noHeader: noHeader, malform: malform, mismatch: mismatch}, nil
}

// Name returns the provider's name.
func (s *bodyHMAC) Name() string { return s.name }

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
