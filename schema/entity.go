package schema

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
)

// HeaderEntity carries the event's entities, the business objects it is
// about (a Stripe customer, a GitHub pull request): one header value per
// entity, "<kind>:<id>" (FormatEntity), in the order the provider named
// them, at most MaxEntities. Absent when the event names none.
const HeaderEntity = "Hookhub-Entity"

// Entity is a business object an event is about, as the hub's provider
// extraction names it (hub.Entity is this type): Kind says what the id names ("customer", "subscription",
// "user", "repository", "pull_request", "order", "message", …) and ID is
// the id as the provider writes it ("cus_123", "octo/hello#12",
// "gid://shopify/Order/1"). docs/providers.md lists what each provider
// names.
type Entity struct {
	Kind string `json:"kind"` // [a-z_]{1,32}
	ID   string `json:"id"`   // at most MaxEntityIDLen bytes
}

// String returns the entity as the archive and the stream write it,
// "<kind>:<id>" (FormatEntity).
func (e Entity) String() string { return FormatEntity(e.Kind, e.ID) }

// Bounds on entities, the hub's and the subscribers'. An entity that does
// not fit is left out; it never fails a delivery.
const (
	MaxEntities      = 8
	MaxEntityIDLen   = 255
	MaxEntityKindLen = 32
)

// maxEntityValues bounds how many Hookhub-Entity values Entities
// examines: the hub writes at most MaxEntities, so more is not the hub's.
const maxEntityValues = 4 * MaxEntities

// FormatEntity returns the Hookhub-Entity value of an entity,
// "<kind>:<id>". The kind has no ':', so the value splits at its first.
func FormatEntity(kind, id string) string { return kind + ":" + id }

// ValidEntity reports whether an entity keeps the hub's rules: Kind is 1
// to MaxEntityKindLen bytes of [a-z_], ID is 1 to MaxEntityIDLen bytes of
// valid UTF-8 without control characters.
func ValidEntity(e Entity) bool {
	if len(e.Kind) == 0 || len(e.Kind) > MaxEntityKindLen || len(e.ID) == 0 || len(e.ID) > MaxEntityIDLen {
		return false
	}
	for i := 0; i < len(e.Kind); i++ {
		if c := e.Kind[i]; (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return utf8.ValidString(e.ID) && !strings.ContainsFunc(e.ID, unicode.IsControl)
}

// ParseEntity reads a Hookhub-Entity value, "<kind>:<id>" split at the
// first ':'. It answers false for a value that does not keep the rules
// (ValidEntity).
func ParseEntity(v string) (Entity, bool) {
	kind, id, ok := strings.Cut(v, ":")
	e := Entity{Kind: kind, ID: id}
	if !ok || !ValidEntity(e) {
		return Entity{}, false
	}
	return e, true
}

// Entities returns the entities of a message's Hookhub-Entity values, in
// order: each once, at most MaxEntities, from at most the first
// 4×MaxEntities values; a value that does not parse (ParseEntity) is
// skipped. It never fails: entities are advisory, and a message whose
// header is damaged is still the event. Nil when there are none.
func Entities(h nats.Header) []Entity {
	values := h.Values(HeaderEntity)
	values = values[:min(len(values), maxEntityValues)]
	var out []Entity
	for _, v := range values {
		if len(out) == MaxEntities {
			break
		}
		e, ok := ParseEntity(v)
		if ok && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// AddEntities adds a Hookhub-Entity value to h for each entity of list
// that keeps the rules, each once, at most MaxEntities in all, so that
// Entities reads back exactly what was written.
func AddEntities(h nats.Header, list []Entity) {
	var written []Entity
	for _, e := range list {
		if len(written) == MaxEntities {
			return
		}
		if ValidEntity(e) && !slices.Contains(written, e) {
			written = append(written, e)
			h.Add(HeaderEntity, FormatEntity(e.Kind, e.ID))
		}
	}
}

// Entity returns the id of the first entity of kind ("customer"), or ""
// when the event names none: ev.Entity("customer") in a subscriber.
func (m Metadata) Entity(kind string) string {
	for _, e := range m.Entities {
		if e.Kind == kind {
			return e.ID
		}
	}
	return ""
}
