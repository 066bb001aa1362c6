package main

import (
	"cmp"
	"strings"

	"github.com/hookhub/hookhub/internal/redact"
)

// oneLine squeezes s onto one line of at most n bytes for a table
// column; an empty s is "-".
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return redact.Truncate(s, n-1) // on a rune boundary
	}
	return cmp.Or(s, "-")
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string { return cmp.Or(s, "-") }

// cleanLine is oneLine for text from outside (an endpoint's answer, a
// transport error quoting it): control characters, escape sequences
// included, become spaces first, so nothing printed can drive the
// terminal.
func cleanLine(s string, n int) string {
	return oneLine(redact.Clean([]byte(s)), n)
}
