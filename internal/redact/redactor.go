package redact

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// URLMask replaces a URL's query value or token-shaped path segment
// (URL): the word the destinations manual promises.
const URLMask = "REDACTED"

// MinSecretLen is the shortest value a Redactor hides wherever it
// appears: a shorter one ("1", "on") would blank ordinary words.
const MinSecretLen = 4

var (
	// signature matches a signature an echo may show: a Standard Webhooks
	// "v1,<base64>" (or v1a), or "v1=" / "sha256=" and hex, as Stripe and
	// GitHub write theirs.
	signature = regexp.MustCompile(`(?i)\b(v1a?[,=]|sha(?:1|256|512)=)([A-Za-z0-9+/_-]{16,}=*)`)
	// urlInText matches an http(s) URL in free text, up to a space or
	// quote.
	urlInText = regexp.MustCompile(`(?i)\bhttps?://[^\s"'<>\\]+`)
)

// Redactor hides the credentials of one party (a destination): the values
// it was configured with or sends as credentials, wherever they appear,
// and everything Text hides, signatures, and the query values and
// token-shaped path segments of every URL (URL). Its zero value and a nil
// *Redactor hide what Text and those rules hide. It is safe for concurrent
// use.
type Redactor struct {
	secrets []string
	escaped []*regexp.Regexp // jsonEscaped of each secret, compiled once
}

// NewRedactor returns a Redactor hiding secrets (values shorter than
// MinSecretLen are ignored; the longest is replaced first, so no part of
// one survives a shorter one's mask).
func NewRedactor(secrets ...string) *Redactor {
	var keep []string
	for _, s := range secrets {
		if len(s) >= MinSecretLen && !slices.Contains(keep, s) {
			keep = append(keep, s)
		}
	}
	slices.SortFunc(keep, func(a, b string) int { return len(b) - len(a) })
	escaped := make([]*regexp.Regexp, len(keep))
	for i, s := range keep {
		escaped[i] = jsonEscaped(s)
	}
	return &Redactor{secrets: keep, escaped: escaped}
}

// Text returns s with r's secrets, what Text hides, signatures and the
// tokens of URLs (URL) replaced.
func (r *Redactor) Text(s string) string {
	var secrets []string
	var escaped []*regexp.Regexp
	if r != nil {
		secrets, escaped = r.secrets, r.escaped
	}
	s = text(s, secrets, escaped)
	lower := strings.ToLower(s)
	if strings.Contains(lower, "v1") || strings.Contains(lower, "sha") {
		s = signature.ReplaceAllString(s, "${1}"+Mask)
	}
	if !strings.Contains(lower, "http") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, func(u string) string {
		// A URL Text already marked keeps its marks; its tokens go.
		return URL(u)
	})
}

// Answer is Answer with r's rules: b cleaned, redacted, then cut to n
// bytes.
func (r *Redactor) Answer(b []byte, n int) string {
	return Truncate(strings.ToValidUTF8(r.Text(Clean(b)), "\uFFFD"), n)
}

// Error returns err with its text redacted by r (Hide), nil for nil.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	return Hide(err, r.Text(err.Error()))
}

// URL returns raw as it may be shown: without user information, every
// query value and every token-shaped path segment (TokenLike) replaced by
// URLMask, the names and the other segments kept. Text that does not
// parse as a URL becomes "(invalid URL)".
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = URLMask
		} else {
			for k := range q {
				q[k] = []string{URLMask}
			}
			u.RawQuery = q.Encode()
		}
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = URLMask, ""
	}
	segs := strings.Split(u.EscapedPath(), "/")
	changed := false
	for i, s := range segs {
		if p, err := url.PathUnescape(s); err == nil && TokenLike(p) {
			segs[i], changed = URLMask, true
		}
	}
	if changed {
		path := strings.Join(segs, "/")
		u.Path, u.RawPath = path, ""
	}
	return u.String()
}

// URLSecrets returns the parts of raw that URL hides (query values,
// token-shaped path segments, the password), raw and escaped, for a
// Redactor: a receiver may echo them outside a URL.
func URLSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	add := func(v string) {
		out = append(out, v)
		if esc := url.QueryEscape(v); esc != v {
			out = append(out, esc)
		}
	}
	if p, ok := u.User.Password(); ok {
		add(p)
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			add(v)
		}
	}
	for _, s := range strings.Split(u.Path, "/") {
		if TokenLike(s) {
			add(s)
		}
	}
	return out
}

// TokenLike reports whether a URL path segment looks like a credential
// (Slack's and Discord's webhook URLs carry theirs in the path): 16 to 31
// letters and digits holding both (a 24-character Slack token), or 32
// characters or more of [A-Za-z0-9_.~=-] (Discord's, a UUID, a hash). A
// readable slug ("payment-events-2024") is not one.
func TokenLike(s string) bool {
	if len(s) < 16 || len(s) > 4096 {
		return false
	}
	letter, digit, other := false, false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9':
			digit = true
		case c == '_' || c == '-' || c == '.' || c == '~' || c == '=':
			other = true
		default:
			return false
		}
	}
	return len(s) >= 32 || (letter && digit && !other)
}
