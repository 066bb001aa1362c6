package main

import (
	"strings"
	"unicode/utf8"
)

// oneLine squeezes s onto one line of at most n bytes for a table
// column; an empty s is "-".
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		i := n - 1 // cut on a rune boundary
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		return s[:i] + "…"
	}
	if s == "" {
		return "-"
	}
	return s
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
