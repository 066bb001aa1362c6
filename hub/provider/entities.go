package provider

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/hookhub/hookhub/hub"
)

// Entities: the business objects an event is about (hub.Entity). Each
// provider names its events' entities in its own file, reading them from
// the body its verifier has just authenticated (never before), with the
// helpers below; VerifyDelivery applies the domain's rules to every
// provider's list once more (CleanEntities), so a provider cannot break
// them. Extraction never fails a delivery: a field that is absent, of
// another type or not a valid id is simply not an entity.
//
// The JSON helpers read only what they need, in one pass over the bytes
// up to the last member wanted, without allocating: a payload is walked
// member by member (jsonMembers, jsonMember), values are skipped by
// finding their end rather than validating them (skipFast), and a
// member's string is copied out only when it is one of the entities.

// CleanEntities returns the entities of list that keep the domain's
// rules, in order: Kind is [a-z_]{1,32} (hub.MaxEntityKindLen), ID passes
// hub.CheckText("entity", id, hub.MaxEntityIDLen), the same Kind and ID
// appear once, and there are at most hub.MaxEntities of them. Any other
// entity is left out. It returns nil when none is left, and list itself
// (no copy) when every entity keeps the rules.
func CleanEntities(list []hub.Entity) []hub.Entity {
	clean := true
	for i, e := range list {
		if i >= hub.MaxEntities || !validEntity(e.Kind, e.ID) || containsEntity(list[:i], e) {
			clean = false
			break
		}
	}
	if clean {
		if len(list) == 0 {
			return nil
		}
		return list
	}
	var out []hub.Entity
	for _, e := range list {
		out = addEntity(out, e.Kind, e.ID)
	}
	return out
}

// addEntity appends the entity kind:id to dst when it keeps the rules
// (see CleanEntities) and dst has room; otherwise it returns dst as is.
func addEntity(dst []hub.Entity, kind, id string) []hub.Entity {
	e := hub.Entity{Kind: kind, ID: id}
	if len(dst) >= hub.MaxEntities || !validEntity(kind, id) || containsEntity(dst, e) {
		return dst
	}
	if dst == nil {
		dst = make([]hub.Entity, 0, 4)
	}
	return append(dst, e)
}

func containsEntity(list []hub.Entity, e hub.Entity) bool {
	for _, x := range list {
		if x == e {
			return true
		}
	}
	return false
}

// validEntity reports whether kind is [a-z_]{1,32} and id passes the
// domain's check of an entity id.
func validEntity(kind, id string) bool {
	return validEntityKind(kind) && hub.CheckText("entity", id, hub.MaxEntityIDLen) == nil
}

// validEntityKind reports whether kind is 1 to hub.MaxEntityKindLen bytes
// of [a-z_].
func validEntityKind(kind string) bool {
	if len(kind) == 0 || len(kind) > hub.MaxEntityKindLen {
		return false
	}
	for i := 0; i < len(kind); i++ {
		if c := kind[i]; (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}

// entityKind turns a provider's name for a kind of object
// ("checkout.session", "payment_intent", "Draft-Orders") into an entity
// kind: ASCII letters lowered, '.', '-' and ' ' made '_'. The result may
// still be invalid (validEntityKind), and is then left out.
func entityKind(name string) string {
	ok := true
	for i := 0; i < len(name); i++ {
		if c := name[i]; (c < 'a' || c > 'z') && c != '_' {
			ok = false
			break
		}
	}
	if ok || len(name) > hub.MaxEntityKindLen {
		return name
	}
	b := []byte(name)
	for i, c := range b {
		switch {
		case 'A' <= c && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c == '.' || c == '-' || c == ' ':
			b[i] = '_'
		}
	}
	return string(b)
}

// maxEntityRaw bounds the raw JSON of a string read as an entity id: a
// longer one cannot unescape to MaxEntityIDLen bytes (an escape is at
// most 6 bytes for 1 to 3 bytes of UTF-8), so it is not read at all.
const maxEntityRaw = 6*hub.MaxEntityIDLen + 2

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
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true
	}
	found := 0
	for {
		keyStart := i
		end, plain, ok := scanString(data, i)
		if !ok {
			return false
		}
		key := data[keyStart+1 : end-1]
		field := -1
		if plain {
			for n, name := range names {
				if raw[n] == nil && string(key) == name {
					field = n
					break
				}
			}
		}
		i = skipSpace(data, end)
		if i == len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		valueStart := i
		if i, ok = skipFast(data, i); !ok {
			return false
		}
		if field >= 0 {
			raw[field] = data[valueStart:i]
			if found++; found == len(names) {
				return true
			}
		}
		i = skipSpace(data, i)
		if i == len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
}

// jsonMember returns the value of the first member named name of the JSON
// object starting at data, and everything after it in data: the value is
// not scanned, so that a caller descending into a large object scans it
// once. It returns nil when there is no such member or data is not an
// object.
func jsonMember(data []byte, name string) []byte {
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return nil
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for {
		keyStart := i
		end, plain, ok := scanString(data, i)
		if !ok {
			return nil
		}
		match := plain && string(data[keyStart+1:end-1]) == name
		i = skipSpace(data, end)
		if i == len(data) || data[i] != ':' {
			return nil
		}
		i = skipSpace(data, i+1)
		if match {
			return data[i:]
		}
		if i, ok = skipFast(data, i); !ok {
			return nil
		}
		i = skipSpace(data, i)
		if i == len(data) || data[i] != ',' {
			return nil
		}
		i = skipSpace(data, i+1)
	}
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

// jsonString returns the string raw holds (a JSON string value), or false
// when raw is not a string, is too long to be an entity id, or is not
// valid UTF-8 (encoding/json would replace bytes of it, making an id the
// provider never sent). Escapes are decoded.
func jsonString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || len(raw) > maxEntityRaw {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	if !utf8.Valid(s) {
		return "", false
	}
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s), true
	}
	var out string
	if json.Unmarshal(raw, &out) != nil {
		return "", false
	}
	return out, true
}

// jsonDigits returns the decimal digits of raw when it is a JSON number
// that is a non-negative integer of at most 20 digits written plainly
// (GitHub's issue numbers, Shopify's ids), or false.
func jsonDigits(raw []byte) (string, bool) {
	if len(raw) == 0 || len(raw) > 20 {
		return "", false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return string(raw), true
}

// jsonID returns raw as an id: a string (jsonString), or the digits of a
// plain integer (jsonDigits).
func jsonID(raw []byte) (string, bool) {
	if len(raw) > 0 && raw[0] == '"' {
		return jsonString(raw)
	}
	return jsonDigits(raw)
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
// strings with bytes.IndexByte and of containers by counting brackets
// outside strings, which is several times faster. On bytes that are not
// JSON it still ends, with some index or false; whatever is read from a
// value it delimits is then checked where it is used (jsonString,
// jsonDigits).
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
	for i < len(data) {
		switch data[i] {
		case '"':
			end, ok := skipStringFast(data, i)
			if !ok {
				return 0, false
			}
			i = end
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1, true
			}
		}
		i++
	}
	return 0, false
}

// skipStringFast returns the index just past the JSON string starting at
// data[i] (a '"'): the next '"' not escaped by an odd number of
// backslashes.
func skipStringFast(data []byte, i int) (int, bool) {
	for j := i + 1; j < len(data); {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return 0, false
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && data[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
	return 0, false
}
