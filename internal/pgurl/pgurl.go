// Package pgurl edits Postgres connection URLs, for the tools that create
// databases next to a configured one (tests, `hub bench`), and hides their
// passwords in messages.
package pgurl

import (
	"fmt"
	"net/url"
	"strings"
)

// WithDatabase returns the postgres:// (or postgresql://) URL u with its
// database replaced by name; user, password, host and query are kept.
func WithDatabase(u, name string) (string, error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "postgres" && p.Scheme != "postgresql") {
		return "", fmt.Errorf("pgurl: %q is not a postgres:// URL", Redact(u))
	}
	p.Path = "/" + name
	p.RawPath = ""
	return p.String(), nil
}

// Redact returns the URL u for messages, its password replaced by ***:
// postgres://user:***@host/db. A URL with credentials but no scheme://
// keeps only what follows its last '@'. It splits at the last '@', so a
// password holding an unescaped '@' is hidden whole.
func Redact(u string) string {
	at := strings.LastIndex(u, "@")
	if at < 0 {
		return u
	}
	scheme, userinfo, ok := strings.Cut(u[:at], "://")
	if !ok {
		return "…" + u[at:]
	}
	user, _, hasPass := strings.Cut(userinfo, ":")
	if !hasPass {
		return u
	}
	return scheme + "://" + user + ":***" + u[at:]
}
