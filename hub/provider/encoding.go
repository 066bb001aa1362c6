// Decoders shared by the providers' header and body parsers: hex MACs,
// the elements of a header list, and lenient body times.

package provider

import (
	"bytes"
	"time"
)

// decodeHexMAC decodes exactly 2*macSize hex digits (either case) into
// dst, without allocating.
func decodeHexMAC(dst *[macSize]byte, s string) bool {
	if len(s) != 2*macSize {
		return false
	}
	for i := range dst {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// trimOWS trims the spaces and tabs HTTP allows around list elements.
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// lenientRFC3339 decodes an optional RFC 3339 string; anything else (null,
// a number, a malformed date) leaves it zero instead of failing the body.
type lenientRFC3339 struct{ t time.Time }

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (l *lenientRFC3339) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' || bytes.IndexByte(b[1:len(b)-1], '\\') >= 0 {
		return nil
	}
	if t, err := time.Parse(time.RFC3339, string(b[1:len(b)-1])); err == nil {
		l.t = t
	}
	return nil
}
