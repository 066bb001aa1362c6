package provider

import (
	"bytes"
	"unicode/utf8"
)

// maxJSONDepth is encoding/json's nesting limit: a body that nests deeper
// is not JSON to it, so it is not to topLevelMembers either.
const maxJSONDepth = 10000

// topLevelMembers is the fast path of reading a few top-level members of a
// JSON body: one pass over the bytes, no allocation. It validates the
// whole of data with the grammar encoding/json accepts and, when data is
// an object, stores the raw value of each member named in names in the
// same position of raw (nil when absent).
//
// It answers true only when the result is exactly what json.Unmarshal into
// a struct with those fields would see. Whenever encoding/json could read
// the body differently, or reject it, it answers false and the caller
// takes the slow path through encoding/json, which also words the errors:
// invalid JSON, a top-level value that is not an object, a wanted member
// named twice (encoding/json merges repeats), and a member name that is
// escaped, not ASCII, or equal to a wanted name but for case
// (encoding/json matches names case-insensitively).
func topLevelMembers(data []byte, names []string, raw [][]byte) bool {
	clear(raw)
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		keyStart := i
		end, plain, ok := scanString(data, i)
		if !ok {
			return false
		}
		key := data[keyStart+1 : end-1]
		if !plain {
			return false
		}
		field := -1
		for n, name := range names {
			switch {
			case string(key) == name:
				field = n
			case equalFoldASCII(key, name):
				return false
			}
		}
		i = skipSpace(data, end)
		if i == len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		valueStart := i
		if i, ok = skipValue(data, i, 1); !ok {
			return false
		}
		if field >= 0 {
			if raw[field] != nil {
				return false
			}
			raw[field] = data[valueStart:i]
		}
		i = skipSpace(data, i)
		if i == len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return skipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

// readMembers reads the top-level members named by names from body into
// raw (topLevelMembers) and decodes the first len(strs) of them into strs
// (plainString): the fast path of json.Unmarshal into a struct whose
// first fields are those strings; the caller decodes the other members
// from raw. False means it could not tell: the caller decodes body with
// encoding/json into a zero struct, since what readMembers set does not
// count. (Decoders passed as interfaces would make the caller's struct
// escape to the heap.)
func readMembers(body []byte, names []string, raw [][]byte, strs ...*string) bool {
	if !topLevelMembers(body, names, raw) {
		return false
	}
	for i, s := range strs {
		if !plainString(s, raw[i]) {
			return false
		}
	}
	return true
}

// plainString decodes the raw value of a string member the way
// encoding/json would, when that needs no unescaping: absent or null leave
// dst alone, a string without escapes of valid UTF-8 is stored. It answers
// false for anything else (escapes, invalid UTF-8, another type), which
// the caller hands to encoding/json.
func plainString(dst *string, raw []byte) bool {
	switch {
	case raw == nil || string(raw) == "null":
		return true
	case len(raw) < 2 || raw[0] != '"':
		return false
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return false
	}
	*dst = string(s)
	return true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(data []byte, i int) int {
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

// skipValue validates the JSON value starting at data[i], which sits at
// nesting depth depth, and returns the index just past it. It keeps its
// own stack of open containers instead of recursing.
func skipValue(data []byte, i, depth int) (int, bool) {
	var inline [32]byte
	open := inline[:0] // '{' or '[' per open container
	for {
		// A value starts at i.
		if i >= len(data) {
			return 0, false
		}
		var ok bool
		switch c := data[i]; {
		case c == '{' || c == '[':
			if depth+len(open) >= maxJSONDepth {
				return 0, false
			}
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			j := skipSpace(data, i+1)
			if j < len(data) && data[j] == closer {
				i, ok = j+1, true
				break
			}
			open = append(open, c)
			if c == '{' {
				if i, ok = skipMemberName(data, j); !ok {
					return 0, false
				}
			} else {
				i = j
			}
			continue
		case c == '"':
			i, _, ok = scanString(data, i)
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
			i = skipSpace(data, i)
			if i == len(data) {
				return 0, false
			}
			top := open[len(open)-1]
			c := data[i]
			if c == ',' {
				i = skipSpace(data, i+1)
				if top == '{' {
					if i, ok = skipMemberName(data, i); !ok {
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
func skipMemberName(data []byte, i int) (int, bool) {
	end, _, ok := scanString(data, i)
	if !ok {
		return 0, false
	}
	i = skipSpace(data, end)
	if i == len(data) || data[i] != ':' {
		return 0, false
	}
	return skipSpace(data, i+1), true
}

// scanString scans the JSON string starting at data[i] and returns the
// index just past its closing quote, and whether it has no escapes.
// Like encoding/json, it accepts any byte of 0x20 and above unescaped,
// valid UTF-8 or not.
func scanString(data []byte, i int) (end int, plain, ok bool) {
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

// equalFoldASCII reports whether the ASCII bytes b equal s ignoring case.
func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
