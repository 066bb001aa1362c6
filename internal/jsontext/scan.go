package jsontext

import "unicode/utf8"

// The one JSON scanner: the grammar encoding/json accepts, read in one
// pass without allocating (hub/provider reads a body's members with it,
// hub/store weighs a body with it).

// MaxDepth is encoding/json's nesting limit: a text that nests deeper is
// not JSON to it, so it is not to SkipValue either.
const MaxDepth = 10000

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// SkipValue validates the JSON value starting at data[i], which sits at
// nesting depth depth, and returns the index just past it. It keeps its
// own stack of open containers instead of recursing.
func SkipValue(data []byte, i, depth int) (int, bool) { return skipValue(data, i, depth, nil) }

// counter counts the values and member names skipValue passes, and stops
// it once there are more than limit.
type counter struct{ n, limit int }

// more counts one and reports whether the count is still within limit.
func (c *counter) more() bool {
	if c == nil {
		return true
	}
	c.n++
	return c.n <= c.limit
}

// skipValue is SkipValue, counting in cnt (when not nil): it stops with
// false once cnt is past its limit.
func skipValue(data []byte, i, depth int, cnt *counter) (int, bool) {
	var inline [32]byte
	open := inline[:0] // '{' or '[' per open container
	for {
		// A value starts at i.
		if i >= len(data) || !cnt.more() {
			return 0, false
		}
		var ok bool
		switch c := data[i]; {
		case c == '{' || c == '[':
			if depth+len(open) >= MaxDepth {
				return 0, false
			}
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			j := SkipSpace(data, i+1)
			if j < len(data) && data[j] == closer {
				i, ok = j+1, true
				break
			}
			open = append(open, c)
			if c == '{' {
				if i, ok = skipMemberName(data, j, cnt); !ok {
					return 0, false
				}
			} else {
				i = j
			}
			continue
		case c == '"':
			i, _, ok = ScanString(data, i)
		case c == '-' || ('0' <= c && c <= '9'):
			i, ok = scanNumber(data, i)
		case c == 't':
			i, ok = scanLiteral(data, i, "true")
		case c == 'f':
			i, ok = scanLiteral(data, i, "false")
		case c == 'n':
			i, ok = scanLiteral(data, i, "null")
		}
		if !ok {
			return 0, false
		}
		// A value ended at i: close containers, or go on to the next
		// element.
		for {
			if len(open) == 0 {
				return i, true
			}
			i = SkipSpace(data, i)
			if i == len(data) {
				return 0, false
			}
			top := open[len(open)-1]
			c := data[i]
			if c == ',' {
				i = SkipSpace(data, i+1)
				if top == '{' {
					if i, ok = skipMemberName(data, i, cnt); !ok {
						return 0, false
					}
				}
				break
			}
			if (top == '{' && c == '}') || (top == '[' && c == ']') {
				open = open[:len(open)-1]
				i++
				continue
			}
			return 0, false
		}
	}
}

// skipMemberName scans `"name" :` from data[i] and returns the index of
// the member's value (after any whitespace).
func skipMemberName(data []byte, i int, c *counter) (int, bool) {
	end, _, ok := ScanString(data, i)
	if !ok || !c.more() {
		return 0, false
	}
	i = SkipSpace(data, end)
	if i == len(data) || data[i] != ':' {
		return 0, false
	}
	return SkipSpace(data, i+1), true
}

// ScanString scans the JSON string starting at data[i] and returns the
// index just past its closing quote, and whether it has no escapes.
// Like encoding/json, it accepts any byte of 0x20 and above unescaped,
// valid UTF-8 or not.
func ScanString(data []byte, i int) (end int, plain, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return 0, false, false
	}
	plain = true
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			return i + 1, plain, true
		case c == '\\':
			plain = false
			i++
			if i == len(data) {
				return 0, false, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return 0, false, false
				}
				for _, h := range data[i+1 : i+5] {
					if !isHex(h) {
						return 0, false, false
					}
				}
				i += 4
			default:
				return 0, false, false
			}
		case c < 0x20:
			return 0, false, false
		case c >= utf8.RuneSelf:
			plain = false // encoding/json may replace invalid UTF-8
		}
	}
	return 0, false, false
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? from
// data[i].
func scanNumber(data []byte, i int) (int, bool) {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = skipDigits(data, i+1)
	default:
		return 0, false
	}
	if i < len(data) && data[i] == '.' {
		j := skipDigits(data, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := skipDigits(data, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

func scanLiteral(data []byte, i int, lit string) (int, bool) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// Values reports the number of values and member names in the JSON text
// data, counting at most up to limit+1: whether data weighs more than
// limit (what Postgres's jsonb parse costs is per value and name). A
// text that is not JSON, or stops being JSON before limit is passed,
// counts what was read up to there.
func Values(data []byte, limit int) int {
	c := counter{limit: limit}
	skipValue(data, SkipSpace(data, 0), 0, &c)
	return c.n
}
