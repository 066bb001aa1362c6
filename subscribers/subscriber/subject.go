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
