package provider

import (
	"bytes"
	"unicode/utf8"

	"github.com/hookhub/hookhub/internal/jsontext"
)

// objectScanner walks the members of the JSON object data starts with:
// the package's one member scanner. Strict, it validates values as
// encoding/json would (jsontext); otherwise it only delimits them
// (skipFast). Call open, then name, value and next until closed.
type objectScanner struct {
	data   []byte
	i      int
	strict bool
	closed bool // the object's '}' was read; i is past it
}

// open reads the object's '{' (and a '}' right after: closed).
func (s *objectScanner) open() bool {
	i := jsontext.SkipSpace(s.data, 0)
	if i == len(s.data) || s.data[i] != '{' {
		return false
	}
	s.i = jsontext.SkipSpace(s.data, i+1)
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i, s.closed = s.i+1, true
	}
	return true
}

// name reads a member's name (raw bytes: an escaped one never equals a
// wanted one) and its ':'; strict, plain says it has no escape.
func (s *objectScanner) name() (key []byte, plain, ok bool) {
	d, end := s.data, 0
	if s.i == len(d) || d[s.i] != '"' {
		return nil, false, false
	}
	if s.strict {
		end, plain, ok = jsontext.ScanString(d, s.i)
	} else {
		end, ok = skipStringFast(d, s.i)
	}
	if !ok {
		return nil, false, false
	}
	key = d[s.i+1 : end-1]
	i := jsontext.SkipSpace(d, end)
	if i == len(d) || d[i] != ':' {
		return nil, false, false
	}
	s.i = jsontext.SkipSpace(d, i+1)
	return key, plain, true
}

// value reads the member's value, whose raw bytes it returns.
func (s *objectScanner) value() ([]byte, bool) {
	start, end, ok := s.i, 0, false
	if s.strict {
		end, ok = jsontext.SkipValue(s.data, start, 1)
	} else {
		end, ok = skipFast(s.data, start)
	}
	if !ok {
		return nil, false
	}
	s.i = end
	return s.data[start:end], true
}

// next reads the ',' or the '}' (closed) after a value.
func (s *objectScanner) next() bool {
	i := jsontext.SkipSpace(s.data, s.i)
	switch {
	case i == len(s.data):
		return false
	case s.data[i] == ',':
		s.i = jsontext.SkipSpace(s.data, i+1)
	case s.data[i] == '}':
		s.i, s.closed = i+1, true
	default:
		return false
	}
	return true
}

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
	s := objectScanner{data: data, strict: true}
	if !s.open() {
		return false
	}
	for !s.closed {
		key, plain, ok := s.name()
		if !ok || !plain {
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
		v, ok := s.value()
		if !ok || (field >= 0 && raw[field] != nil) {
			return false
		}
		if field >= 0 {
			raw[field] = v
		}
		if !s.next() {
			return false
		}
	}
	return jsontext.SkipSpace(data, s.i) == len(data)
}

// jsonMembers reads the members named names of the JSON object starting
// at data (after any whitespace) into raw, in the same positions: the raw
// value of the first member of each name (nil when absent). Names are
// matched exactly, as providers write them; an escaped member name never
// matches. It stops as soon as every name is found, so data may go on
// past the object (a slice from the object's start to the end of the
// enclosing body). Member values are delimited, not validated
// (skipFast). It answers false when data does not start with an object
// or what it scanned is not an object's syntax; raw then holds what was
// found.
func jsonMembers(data []byte, names []string, raw [][]byte) bool {
	clear(raw)
	s := objectScanner{data: data}
	if !s.open() {
		return false
	}
	for found := 0; !s.closed; {
		key, _, ok := s.name()
		if !ok {
			return false
		}
		field := -1
		for n, name := range names {
			if raw[n] == nil && string(key) == name {
				field = n
				break
			}
		}
		v, ok := s.value()
		if !ok {
			return false
		}
		if field >= 0 {
			raw[field] = v
			if found++; found == len(names) {
				return true
			}
		}
		if !s.next() {
			return false
		}
	}
	return true
}

// jsonMember returns the value of the first member named name of the JSON
// object starting at data, and everything after it in data: the value is
// not scanned, so that a caller descending into a large object scans it
// once. It returns nil when there is no such member or data is not an
// object.
func jsonMember(data []byte, name string) []byte {
	s := objectScanner{data: data}
	if !s.open() {
		return nil
	}
	for !s.closed {
		key, _, ok := s.name()
		if !ok {
			return nil
		}
		if string(key) == name {
			return data[s.i:]
		}
		if _, ok := s.value(); !ok || !s.next() {
			return nil
		}
	}
	return nil
}

// jsonPath follows names down nested objects from data (jsonMember at
// each step) and returns the last member's value and what follows it, or
// nil.
func jsonPath(data []byte, names ...string) []byte {
	for _, name := range names {
		if data = jsonMember(data, name); data == nil {
			return nil
		}
	}
	return data
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

// jsonValue trims what follows a value that jsonMember or jsonPath
// returned: the value alone, or nil when it is not JSON.
func jsonValue(data []byte) []byte {
	if data == nil {
		return nil
	}
	end, ok := skipFast(data, 0)
	if !ok {
		return nil
	}
	return data[:end]
}

// skipFast returns the index just past the JSON value starting at
// data[i]. Unlike skipValue it does not validate the value (the body is
// authentic, and was validated when the event was read from it, except
// for Shopify's, whose body the hub reads only here): it finds the end of
// a container by counting brackets outside strings, and the end of a
// string by its next unescaped quote, which is about twice as fast. On
// bytes that are not JSON it still ends, with some index or false;
// whatever is read from a value it delimits is then checked where it is
// used (jsonString, jsonDigits).
func skipFast(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch data[i] {
	case '"':
		return skipStringFast(data, i)
	case '{', '[':
	default:
		// A number or a literal: up to the next delimiter.
		start := i
		for i < len(data) {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r', ':', '"', '{', '[':
				return i, i > start
			}
			i++
		}
		return i, i > start
	}
	depth := 0
	for n := len(data); i < n; i++ {
		for i < n && !jsonStructural[data[i]] {
			i++
		}
		if i == n {
			break
		}
		switch data[i] {
		case '"':
			end, ok := skipStringFast(data, i)
			if !ok {
				return 0, false
			}
			i = end - 1
		case '{', '[':
			depth++
		default: // '}', ']'
			if depth--; depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}

// jsonStructural marks the bytes skipFast stops at inside a container.
var jsonStructural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// skipStringFast returns the index just past the JSON string starting at
// data[i] (a '"'): its next '"' not escaped by an odd number of
// backslashes. Short strings (most member names) are scanned in a plain
// loop; past 16 bytes, bytes.IndexByte takes over.
func skipStringFast(data []byte, i int) (int, bool) {
	for j := i + 1; ; j++ {
		end := min(j+16, len(data))
		for j < end && data[j] != '"' {
			j++
		}
		if j == end {
			k := -1
			if j < len(data) {
				k = bytes.IndexByte(data[j:], '"')
			}
			if k < 0 {
				return 0, false
			}
			j += k
		}
		n := 0
		for p := j - 1; p > i && data[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, true
		}
	}
}
