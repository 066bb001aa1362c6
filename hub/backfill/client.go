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

// bearerAPI returns the client of an API authenticated by a bearer key
// (Stripe, Paddle): the key is required (its variable and what it must be
// are named when empty), the base URL checked by baseURL.
func bearerAPI(key, keyVar, what, rawBase, defaultBase, baseVar string, client *http.Client) (*api, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return nil, fmt.Errorf("%s is empty: set it to %s", keyVar, what)
	}
	base, err := baseURL(rawBase, defaultBase, baseVar)
	if err != nil {
		return nil, err
	}
	return &api{client: clientOr(client), base: base, keyVar: keyVar,
		auth: func(h http.Header) { h.Set("Authorization", "Bearer "+key) }}, nil
}

// pageSize is n within 1..most, most when n is out of it.
func pageSize(n, most int) int {
	if n <= 0 || n > most {
		return most
	}
	return n
}
