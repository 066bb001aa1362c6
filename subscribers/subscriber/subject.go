package subscriber

import (
	"fmt"
	"strings"

	"github.com/hookhub/hookhub/schema"
)

// validPattern checks a subject a handler is registered for: tokens of
// [A-Za-z0-9_-] as in schema.Subject, or the wildcards "*" (one token) and
// ">" (the rest, last token only).
func validPattern(p string) error {
	if p == "" {
		return fmt.Errorf("empty subject")
	}
	toks := strings.Split(p, ".")
	for i, t := range toks {
		switch {
		case t == "*":
		case t == ">":
			if i != len(toks)-1 {
				return fmt.Errorf("subject %q: '>' must be the last token", p)
			}
		case !schema.ValidToken(t):
			return fmt.Errorf("subject %q: token %q is not '*', '>' or [A-Za-z0-9_-]+", p, t)
		}
	}
	return nil
}

// matches reports whether subject (no wildcards) matches pattern.
func matches(pattern, subject string) bool {
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

// overlaps reports whether some subject matches both patterns. JetStream
// rejects a consumer whose filter subjects overlap.
func overlaps(a, b string) bool {
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
