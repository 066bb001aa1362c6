package provider

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/hookhub/hookhub/hub"
)

// Entities: the business objects an event is about (hub.Entity). Each
// provider names its events' entities in its own file, reading them from
// the body its verifier has just authenticated (never before), with the
// member scanner of jsonobject.go and the helpers below; VerifyDelivery
// applies the domain's rules to every provider's list once more
// (CleanEntities), so a provider cannot break them. Extraction never fails a delivery: a field that is absent, of
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
		if i >= hub.MaxEntities || !validEntity(e.Kind, e.ID) || slices.Contains(list[:i], e) {
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
	if len(dst) >= hub.MaxEntities || !validEntity(kind, id) || slices.Contains(dst, e) {
		return dst
	}
	if dst == nil {
		dst = make([]hub.Entity, 0, 4)
	}
	return append(dst, e)
}

// validEntity reports whether kind is [a-z_]{1,32} and id passes the
// domain's check of an entity id.
func validEntity(kind, id string) bool {
	return validEntityKind(kind) && (printableASCII(id) || hub.CheckText("entity", id, hub.MaxEntityIDLen) == nil)
}

// printableASCII reports whether s is 1 to hub.MaxEntityIDLen bytes of
// printable ASCII (0x20 to 0x7e): the ids providers issue, which
// hub.CheckText accepts, checked without its per-rune pass.
func printableASCII(s string) bool {
	if len(s) == 0 || len(s) > hub.MaxEntityIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
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
