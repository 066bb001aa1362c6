// Package pgurl edits Postgres connection URLs, for the tools that create
// databases next to a configured one (tests, `hub bench`).
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
		return "", fmt.Errorf("pgurl: %q is not a postgres:// URL", redact(u))
	}
	p.Path = "/" + name
	p.RawPath = ""
	return p.String(), nil
}

func redact(u string) string {
	if i := strings.LastIndex(u, "@"); i >= 0 {
		return "…" + u[i:]
	}
	return u
}
