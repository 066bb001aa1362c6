package schema

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidSubject reports an event type (or provider name) that cannot
// form a NATS subject: an empty token, or a character outside
// [A-Za-z0-9_-] in a token.
var ErrInvalidSubject = errors.New("invalid subject")

// MaxSubjectLen bounds the subject the hub builds. NATS allows longer
// subjects, but the archive stores event types in VARCHAR(128).
const MaxSubjectLen = 32 + 1 + 128

// Subject returns the subject an event is published on: the provider name,
// a dot, then the event type, whose dots become subject tokens. For example
// Subject("paddle", "subscription.created") is "paddle.subscription.created".
// Every token must be non-empty and consist of [A-Za-z0-9_-]; anything else
// (spaces, '*', '>', empty tokens) is rejected with ErrInvalidSubject, never
// passed through.
func Subject(provider, eventType string) (string, error) {
	if !ValidToken(provider) {
		return "", fmt.Errorf("%w: provider %q is not a valid subject token", ErrInvalidSubject, provider)
	}
	if eventType == "" {
		return "", fmt.Errorf("%w: empty event type", ErrInvalidSubject)
	}
	for tok := range strings.SplitSeq(eventType, ".") {
		if !ValidToken(tok) {
			return "", fmt.Errorf("%w: event type %q has token %q outside [A-Za-z0-9_-]", ErrInvalidSubject, eventType, tok)
		}
	}
	return provider + "." + eventType, nil
}

// ValidToken reports whether s is a non-empty subject token made of
// [A-Za-z0-9_-] only.
func ValidToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// ProviderFilter is the subject filter that matches every event of one
// provider, e.g. "paddle.>".
func ProviderFilter(provider string) string { return provider + ".>" }

// MsgID is the JetStream message id of an event: "<provider>:<event_id>".
// JetStream drops a second publish with the same id inside the stream's
// duplicate window.
func MsgID(provider, eventID string) string { return provider + ":" + eventID }

// SplitEventRef splits "<provider>:<event_id>" into its parts. Event ids may
// themselves contain ':'; only the first one separates.
func SplitEventRef(ref string) (provider, eventID string, ok bool) {
	provider, eventID, ok = strings.Cut(ref, ":")
	if !ok || provider == "" || eventID == "" {
		return "", "", false
	}
	return provider, eventID, true
}

// MatchSubject reports whether subject (no wildcards) matches pattern, in
// which "*" stands for one token and a final ">" for one or more.
func MatchSubject(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i := range p {
		if p[i] == ">" {
			return len(s) > i
		}
		if i >= len(s) || (p[i] != "*" && p[i] != s[i]) {
			return false
		}
	}
	return len(p) == len(s)
}

// SubjectsOverlap reports whether some subject matches both patterns.
// (JetStream rejects a consumer whose filter subjects overlap.)
func SubjectsOverlap(a, b string) bool {
	x, y := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; ; i++ {
		if i == len(x) || i == len(y) {
			return len(x) == len(y)
		}
		if x[i] == ">" || y[i] == ">" {
			return true
		}
		if x[i] != y[i] && x[i] != "*" && y[i] != "*" {
			return false
		}
	}
}
