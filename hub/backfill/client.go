package backfill

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// clientOr returns c, or a client with a 30 s timeout.
func clientOr(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// baseURL checks an API base URL (def when empty) and drops a trailing
// slash; a mistake names the variable (and never shows a password).
func baseURL(raw, def, variable string) (string, error) {
	if raw == "" {
		raw = def
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%s must be an absolute http(s) URL without credentials or query, e.g. %s: %w", variable, def, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s must be an absolute http(s) URL without credentials or query, e.g. %s, got %q", variable, def, u.Redacted())
	}
	return strings.TrimRight(raw, "/"), nil
}

// validCursor accepts a cursor an API gave: an id of at most 255 bytes of
// printable UTF-8.
func validCursor(s string) bool {
	return s != "" && len(s) <= 255 && utf8.ValidString(s) && !hasSpaceOrControl(s)
}

// hasSpaceOrControl reports whether s has a space or a control character
// (cursors, tokens).
func hasSpaceOrControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) })
}
