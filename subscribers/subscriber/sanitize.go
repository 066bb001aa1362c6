package subscriber

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
)

// ErrUnstorable is wrapped by CheckStorable's errors: a value taken from an
// event cannot be written to a Postgres text column as it is.
var ErrUnstorable = errors.New("subscriber: value cannot be stored (NUL byte or invalid UTF-8)")

// cutMark ends a text SanitizeText had to cut.
const cutMark = "…"

// SanitizeText returns s in a form every Postgres text, varchar and jsonb
// string accepts: valid UTF-8 (each run of invalid bytes becomes U+FFFD),
// no NUL byte (each becomes U+FFFD), and at most maxBytes bytes (maxBytes
// <= 0: no limit), cut at a rune boundary and ended with "…" when it was
// longer. A string that is already storable and short enough is returned
// unchanged, and SanitizeText(SanitizeText(s, n), n) == SanitizeText(s, n).
//
// It is for text the library and the services write about an event:
// errors, log-like columns, email bodies. Values that identify something
// (an event id, a customer id) must not be rewritten: check them with
// CheckStorable instead.
func SanitizeText(s string, maxBytes int) string {
	if Storable(s) && (maxBytes <= 0 || len(s) <= maxBytes) {
		return s
	}
	limit := len(s) * 3 // the worst case: every byte becomes U+FFFD
	if maxBytes > 0 {
		limit = maxBytes
	}
	var b strings.Builder
	b.Grow(min(limit, len(s)+8))
	cut := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		chunk := s[i : i+size]
		switch {
		case r == utf8.RuneError && size <= 1:
			// A run of invalid bytes is one replacement character.
			for i < len(s) {
				if r, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size > 1 {
					break
				}
				i++
			}
			size = 0
			chunk = string(utf8.RuneError)
		case r == 0:
			chunk = string(utf8.RuneError)
		}
		if b.Len()+len(chunk) > limit {
			cut = true
			break
		}
		b.WriteString(chunk)
		i += size
	}
	if !cut {
		return b.String()
	}
	out := b.String()
	if maxBytes < 4*len(cutMark) {
		return out // too short for a mark: a plain cut
	}
	// Make room for the mark, on a rune boundary.
	end := len(out)
	for end > maxBytes-len(cutMark) {
		_, size := utf8.DecodeLastRuneInString(out[:end])
		end -= size
	}
	return out[:end] + cutMark
}

// Storable reports whether s can be written to a Postgres text column as
// it is: valid UTF-8 without NUL bytes.
func Storable(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// CheckStorable returns nil when value is Storable and otherwise a
// permanent error wrapping ErrUnstorable that names field and quotes the
// start of value: a handler returns it for a payload value it would
// write, so the message is dead-lettered at once instead of failing in
// Postgres MaxDeliver times.
//
//	if err := subscriber.CheckStorable("data.customer_id", s.CustomerID); err != nil {
//		return err
//	}
func CheckStorable(field, value string) error {
	if Storable(value) {
		return nil
	}
	const show = 64
	quoted := strconv.Quote(value[:min(len(value), show)])
	if len(value) > show {
		quoted += cutMark
	}
	return Permanent(fmt.Errorf("%w: %s %s", ErrUnstorable, field, quoted))
}

// asciiText is a last-resort form of s for a database that refused even
// SanitizeText's output (a server encoding other than UTF-8): printable
// ASCII, everything else escaped as in a Go string literal, at most max
// bytes.
func asciiText(s string, max int) string {
	q := strconv.QuoteToASCII(s)
	q = q[1 : len(q)-1]
	if len(q) > max {
		q = q[:max]
	}
	return q
}

// maxHeaderKeyLen bounds a header name stored with a dead letter.
const maxHeaderKeyLen = 1 << 10

// storableHeaders renders h as the JSON object stored in dead_letters.headers:
// each name and value sanitized (jsonb refuses \u0000, and encoding/json
// would turn invalid UTF-8 into U+FFFD anyway). It reports whether it had
// to change anything.
func storableHeaders(h nats.Header) ([]byte, bool) {
	m := make(map[string][]string, len(h))
	changed := false
	for k, vs := range h {
		sk := SanitizeText(k, maxHeaderKeyLen)
		changed = changed || sk != k
		for _, v := range vs {
			sv := SanitizeText(v, 0)
			changed = changed || sv != v
			m[sk] = append(m[sk], sv)
		}
		if m[sk] == nil {
			m[sk] = []string{}
		}
	}
	b, err := json.Marshal(m)
	if err != nil { // a map of strings always marshals
		return []byte("{}"), true
	}
	return b, changed
}

// isDataError reports whether err is Postgres refusing the values of a
// statement: SQLSTATE class 22 (data exception: invalid byte sequence,
// untranslatable character, value too long, bad jsonb escape), 23
// (integrity constraint violation) or 54 (program limit exceeded: an index
// entry too large). Retrying the same statement cannot succeed.
func isDataError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 {
		return false
	}
	switch pgErr.Code[:2] {
	case "22", "23", "54":
		return true
	}
	return false
}
