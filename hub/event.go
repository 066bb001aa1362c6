package hub

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Event is what a verified delivery carries: what hub/provider's verifiers
// extract from a webhook, and its parsers from an event a provider's API
// returns (provider.Event is this type).
type Event struct {
	ID         string    // the provider's stable event id, unchanged across retries
	Type       string    // the provider's event type, e.g. "subscription.created"
	Signature  string    // the signature header value, archived for forensics
	SignedAt   time.Time // the signed timestamp; zero for schemes without one
	OccurredAt time.Time // when the provider says it happened, from signed data only; zero if unknown
	// Entities are the business objects the event is about (at most
	// MaxEntities), extracted from the verified body; none when the
	// provider defines none for this event.
	Entities []Entity
}

// Limits on an event's id and type, wherever the event comes from: the
// archive stores them in event_id VARCHAR(255) and event_type
// VARCHAR(128), and they travel in message headers (schema.MaxSubjectLen
// is a provider name, a dot and a type of at most MaxEventTypeLen).
const (
	MaxEventIDLen   = 255
	MaxEventTypeLen = 128
)

// TextError is why a text cannot be an event id or type (CheckText).
type TextError struct {
	Name   string // what the text is: "event id", "X-GitHub-Delivery", "type"
	Reason string // "is empty", "is longer than 255 bytes", "contains control characters", "is not valid UTF-8"
}

// Error returns "<name> <reason>".
func (e *TextError) Error() string { return e.Name + " " + e.Reason }

// CheckText is the one check of an event id or type, wherever it comes
// from (a webhook's body, headers or URL, a provider's API, an operator's
// filter): present, at most maxLen bytes (MaxEventIDLen, MaxEventTypeLen),
// valid UTF-8, no control characters (ids and types end up in message
// headers, where CR and LF must never appear, and in text columns an
// operator reads). Its error is a *TextError naming the text name. It does
// not allocate when s passes.
func CheckText(name, s string, maxLen int) error {
	switch {
	case s == "":
		return &TextError{name, "is empty"}
	case len(s) > maxLen:
		return &TextError{name, fmt.Sprintf("is longer than %d bytes", maxLen)}
	case hasASCIIControl(s):
		return &TextError{name, "contains control characters"}
	case !utf8.ValidString(s):
		return &TextError{name, "is not valid UTF-8"}
	case strings.ContainsFunc(s, unicode.IsControl):
		return &TextError{name, "contains control characters"}
	}
	return nil
}

// CheckEventID checks an event id (CheckText, at most MaxEventIDLen bytes).
func CheckEventID(id string) error { return CheckText("event id", id, MaxEventIDLen) }

// CheckEventType checks an event type (CheckText, at most MaxEventTypeLen
// bytes).
func CheckEventType(typ string) error { return CheckText("event type", typ, MaxEventTypeLen) }

// hasASCIIControl reports whether s holds an ASCII control character: the
// fast first pass of CheckText, and what it reports even when s is also
// not valid UTF-8.
func hasASCIIControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}
