package provider

import (
	"bytes"
	"unicode/utf8"

	"github.com/hookhub/hookhub/internal/jsontext"
)

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

// The grammar is internal/jsontext's, the one JSON scanner.
func skipSpace(data []byte, i int) int { return jsontext.SkipSpace(data, i) }

func skipValue(data []byte, i, depth int) (int, bool) { return jsontext.SkipValue(data, i, depth) }

func scanString(data []byte, i int) (end int, plain, ok bool) { return jsontext.ScanString(data, i) }

const maxJSONDepth = jsontext.MaxDepth
