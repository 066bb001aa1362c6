// Package redact hides credentials in text the hub prints or logs that it
// did not write itself (a provider API's answer, an error built from one):
// the configured secrets wherever they appear, whatever follows an
// authentication scheme (Bearer, Basic, token), the value of a field named
// like a credential, and the password of a URL. It also makes such text safe
// to print: bounded, valid UTF-8, without control characters (Clean, for a
// one-line field), and owns what the hub's programs print (Terminal, the
// writer of every CLI output and log line).
//
// A Redactor (NewRedactor) is the same for one party that holds or sends
// credentials (a destination): its configured values, plus signatures and
// the query values and token-shaped path segments of every URL (URL,
// TokenLike), whose secrets URLSecrets lists.
package redact

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mask replaces what Text hides.
const Mask = "[redacted]"

var (
	// scheme matches an Authorization value: a scheme and its credentials
	// ("Bearer sk_live_…", "Basic dXNlcjpwYXNz", "token ghp_…"). After
	// "token" only a credential-like value (8 characters or more) counts,
	// so that "token expired" stays readable.
	scheme = regexp.MustCompile(`(?i)\b(bearer|basic)(\s+|%20|\+)([A-Za-z0-9._~+/=:\\-]+)|\b(token)(\s+|%20|\+)([A-Za-z0-9._~+/=:\\-]{8,})`)
	// field matches a field named like a credential and its value, in
	// JSON ("api_key": "…"), a header ("X-Api-Key: …") or a query
	// (access_token=…).
	field = regexp.MustCompile(`(?i)\b(authorization|proxy-authorization|x-api-key|api[_-]?key|access[_-]?token|refresh[_-]?token|client[_-]?secret|password|secret)("?\s*[:=]\s*\[?\s*"?)([^\s"',;&\]}]+)`)
	// userinfo matches the password of a URL (scheme://user:password@).
	userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)[^/\s@]*@`)
)

// Text returns s with every non-empty secret (and its URL-escaped form),
// every credential after an authentication scheme and every value of a
// field named like a credential replaced by Mask, and every URL password
// by "***" (user:***@host, as internal/pgurl writes database URLs).
func Text(s string, secrets ...string) string { return text(s, secrets, nil) }

// text is Text with escaped[i], when given, the compiled jsonEscaped of
// secrets[i].
func text(s string, secrets []string, escaped []*regexp.Regexp) string {
	for i, sec := range secrets {
		if sec == "" {
			continue
		}
		s = strings.ReplaceAll(s, sec, Mask)
		if esc := url.QueryEscape(sec); esc != sec {
			s = strings.ReplaceAll(s, esc, Mask)
		}
		if strings.Contains(s, `\u`) {
			var re *regexp.Regexp
			if escaped != nil {
				re = escaped[i]
			} else {
				re = jsonEscaped(sec)
			}
			s = re.ReplaceAllString(s, Mask)
		}
	}
	// Each rule below runs only on text holding a word it needs: most
	// answers hold none, and the regular expressions cost.
	lower := strings.ToLower(s)
	if containsAny(lower, "bearer", "basic", "token") {
		s = scheme.ReplaceAllStringFunc(s, func(m string) string {
			sub := scheme.FindStringSubmatch(m)
			if sub[1] != "" {
				return sub[1] + sub[2] + Mask
			}
			return sub[4] + sub[5] + Mask
		})
	}
	if containsAny(lower, "authorization", "api", "token", "secret", "password") {
		s = field.ReplaceAllStringFunc(s, func(m string) string {
			sub := field.FindStringSubmatch(m)
			v := strings.ToLower(sub[3])
			if v == strings.ToLower(Mask) || v == "[redacted" || v == "bearer" || v == "basic" || v == "token" {
				return m // a scheme, whose credentials the rule above hid
			}
			return sub[1] + sub[2] + Mask
		})
	}
	if strings.Contains(s, "://") && strings.Contains(s, "@") {
		s = userinfo.ReplaceAllString(s, "${1}"+"***@")
	}
	return s
}

// containsAny reports whether s contains one of words.
func containsAny(s string, words ...string) bool {
	return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(s, w) })
}

// jsonEscaped matches sec as a JSON string may spell it: any of its ASCII
// characters as a \u00XX escape ("\u0073k_live_…" is "sk_live_…").
func jsonEscaped(sec string) *regexp.Regexp {
	var b strings.Builder
	for _, r := range sec {
		if r < utf8.RuneSelf {
			fmt.Fprintf(&b, `(?:%s|\\u(?i:%04x))`, regexp.QuoteMeta(string(r)), r)
		} else {
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return regexp.MustCompile(b.String())
}

// Clean returns b as printable text: invalid UTF-8 as U+FFFD, every
// control character (NUL, CR, LF, ESC, …) and every other space as one
// space.
func Clean(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		switch {
		case r == utf8.RuneError && size <= 1:
			sb.WriteRune(utf8.RuneError)
		case Unsafe(r) || unicode.IsSpace(r):
			sb.WriteByte(' ')
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// Truncate returns s cut to at most n bytes on a rune boundary, with "…"
// appended when it was cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// Answer returns what of a provider's answer may be printed: b cleaned
// (Clean), its credentials hidden (Text, with secrets) and then cut to at
// most n bytes (Truncate), so that no part of a secret survives the cut.
func Answer(b []byte, n int, secrets ...string) string {
	// A secret that is not valid UTF-8 may have matched part of a rune.
	return Truncate(strings.ToValidUTF8(Text(Clean(b), secrets...), "\uFFFD"), n)
}
