package destination

import (
	"cmp"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hookhub/hookhub/internal/redact"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Payload is what a destination receives as the request body.
type Payload string

const (
	// PayloadEnvelope is the Standard Webhooks envelope
	// {"type","timestamp","data"} (see Body). The default.
	PayloadEnvelope Payload = "envelope"
	// PayloadRaw is the provider's request body, byte for byte.
	PayloadRaw Payload = "raw"
)

// Defaults applied to a destination's omitted fields.
const (
	DefaultConcurrency    = 4
	DefaultTimeout        = 10 * time.Second
	DefaultConnectTimeout = 5 * time.Second
	DefaultRetryFor       = 72 * time.Hour
	DefaultPayload        = PayloadEnvelope
)

// Limits of a destinations file and of its fields.
const (
	MaxFileSize        = 1 << 20 // bytes of a destinations file
	MaxDestinations    = 1000
	MaxConcurrency     = 256
	MaxRateLimit       = 10000 // requests per second
	MinTimeout         = 100 * time.Millisecond
	MaxTimeout         = 5 * time.Minute
	MinConnectTimeout  = 100 * time.Millisecond
	MinRetryFor        = time.Minute
	MaxRetryFor        = 30 * 24 * time.Hour
	MinMaxRetryAfter   = time.Second
	MaxSubjects        = 100 // subject filters of one destination
	MaxSecrets         = 8   // secret_env names of one destination
	MaxHeaderBytes     = 4 << 10
	MaxURLLen          = 2048
	MaxCAFileSize      = 1 << 20
	maxQuoted          = 64 // bytes of a value quoted in an error
	maxDecodeErrorSize = 512
)

// ErrInvalidFile is wrapped by every error Parse and Load return.
var ErrInvalidFile = errors.New("invalid destinations file")

// FieldError is one problem with one field of one destination.
type FieldError struct {
	// Destination is the destination's name, or "#n" (n counted from 1
	// in file order) when its name is missing or invalid, or "" for a
	// problem with the file itself.
	Destination string
	// Field is the field as written in the file: "url", "secret_env[1]",
	// "headers.X-Foo"; "" for the whole entry or file.
	Field  string
	Reason string
}

// Error reads `destination "billing_node": url: must be http or https,
// got "ftp"`. It never contains a secret's value, nor a static header's.
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Destination != "" {
		if strings.HasPrefix(e.Destination, "#") {
			b.WriteString("destination " + e.Destination + ": ")
		} else {
			b.WriteString("destination " + strconv.Quote(e.Destination) + ": ")
		}
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Is makes every FieldError match ErrInvalidFile.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidFile }

// StringList is a list of strings that a destinations file may write as
// one string or as a list.
type StringList []string

// UnmarshalYAML accepts a scalar or a sequence of scalars.
func (l *StringList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			*l = nil
			return nil
		}
		*l = StringList{n.Value}
		return nil
	case yaml.SequenceNode:
		out := make(StringList, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: want a string or a list of strings", n.Line)
			}
			out = append(out, c.Value)
		}
		*l = out
		return nil
	}
	return fmt.Errorf("line %d: want a string or a list of strings", n.Line)
}

// Duration is a time.Duration written as "10s", "1m30s", "72h"
// (time.ParseDuration) or as whole days, "3d".
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String writes d as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes d as its String.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads a duration string (see ParseDuration).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as \"10s\" or \"3d\"", n.Line)
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// ParseDuration reads "10s", "1h30m" (time.ParseDuration) or a whole
// number of days, "3d" (at most 3650).
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok && days != "" && !strings.ContainsAny(days, "hmsuµn") {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil || n > 3650 {
			return 0, fmt.Errorf("%s is not a duration: want whole days up to 3650, such as \"3d\"", quote(s))
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s is not a duration such as \"10s\", \"72h\" or \"3d\"", quote(s))
	}
	return v, nil
}

// Spec is one entry of a destinations file, as written.
type Spec struct {
	Name           string            `yaml:"name" json:"name"`
	URL            string            `yaml:"url" json:"url"`
	Subjects       []string          `yaml:"subjects" json:"subjects"`
	SecretEnv      StringList        `yaml:"secret_env" json:"secret_env"`
	Payload        Payload           `yaml:"payload,omitempty" json:"payload,omitempty"`
	Concurrency    int               `yaml:"concurrency,omitempty" json:"concurrency,omitempty"`
	Ordered        bool              `yaml:"ordered,omitempty" json:"ordered,omitempty"`
	RateLimit      float64           `yaml:"rate_limit,omitempty" json:"rate_limit,omitempty"`
	Timeout        Duration          `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	ConnectTimeout Duration          `yaml:"connect_timeout,omitempty" json:"connect_timeout,omitempty"`
	RetryFor       Duration          `yaml:"retry_for,omitempty" json:"retry_for,omitempty"`
	MaxRetryAfter  Duration          `yaml:"max_retry_after,omitempty" json:"max_retry_after,omitempty"`
	Start          string            `yaml:"start,omitempty" json:"start,omitempty"`
	AllowLinkLocal bool              `yaml:"allow_link_local,omitempty" json:"allow_link_local,omitempty"`
	Headers        map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	CAFile         string            `yaml:"ca_file,omitempty" json:"ca_file,omitempty"`
}

// Destination is a validated Spec with its defaults applied and its
// secrets resolved.
type Destination struct {
	Spec
	// Secrets are the decoded signing keys, in SecretEnv order; each
	// signs every message (a rotation sends two signatures).
	Secrets []Secret
	// RootCAs is the system roots plus the certificates of CAFile, or
	// nil (the system roots) when there is no CAFile.
	RootCAs *x509.CertPool

	caSum [sha256.Size]byte // of CAFile's content, for Fingerprint
}

// Fingerprint is the SHA-256 (hex) of the resolved configuration: the
// Spec with its defaults, the secrets and the content of CAFile. Two
// Destinations with the same Fingerprint behave the same, so a reload
// restarts only the changed ones. The secrets are mixed in as their own
// SHA-256, and the result reveals nothing of them.
func (d Destination) Fingerprint() string {
	h := sha256.New()
	spec, _ := json.Marshal(d.Spec) // a Spec always marshals (NaN is refused by Parse)
	h.Write(spec)
	h.Write([]byte{0})
	for _, s := range d.Secrets {
		k := sha256.Sum256(s)
		h.Write(k[:])
	}
	h.Write([]byte{0})
	h.Write(d.caSum[:])
	return hex.EncodeToString(h.Sum(nil))
}

// Load reads the destinations file at path (at most MaxFileSize bytes)
// and Parses it; a relative ca_file is read relative to the file's
// directory. Its errors name path and wrap ErrInvalidFile (those about
// the entries are *FieldError values, joined).
func Load(path string, getenv func(string) (string, bool)) ([]Destination, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrInvalidFile, path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w %s: read: %w", ErrInvalidFile, path, err)
	}
	ds, err := parse(data, getenv, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ds, nil
}

// Parse decodes a destinations file (YAML, or JSON, which is YAML too) and
// validates every entry, with getenv (os.LookupEnv in production)
// resolving each secret_env. Unknown fields are errors. It refuses a file
// over MaxFileSize bytes or with more than MaxDestinations entries. A
// relative ca_file is read relative to the working directory. An empty
// file holds no destinations.
//
// Every problem is reported at once: the error is errors.Join of
// *FieldError values, each wrapping ErrInvalidFile. No error contains the
// value of a secret or of a static header.
func Parse(data []byte, getenv func(string) (string, bool)) ([]Destination, error) {
	return parse(data, getenv, "")
}

func parse(data []byte, getenv func(string) (string, bool), dir string) ([]Destination, error) {
	if len(data) > MaxFileSize {
		return nil, &FieldError{Reason: fmt.Sprintf("the file is larger than %d bytes", MaxFileSize)}
	}
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	specs, bad, errs, fileErr := decodeFile(data)
	if fileErr != nil {
		return nil, fileErr
	}
	seen := make(map[string]int, len(specs))
	out := make([]Destination, 0, len(specs))
	for i, s := range specs {
		label := "#" + strconv.Itoa(i+1)
		if subscriber.ValidName(s.Name) {
			label = s.Name
			if j, dup := seen[s.Name]; dup {
				errs = append(errs, &FieldError{Destination: "#" + strconv.Itoa(i+1), Field: "name",
					Reason: fmt.Sprintf("%q is also the name of destination #%d: names must be unique", s.Name, j+1)})
			} else {
				seen[s.Name] = i
			}
		}
		d, es := validate(s, label, getenv, dir)
		errs = append(errs, withoutFields(es, bad[i])...)
		if len(es) == 0 && bad[i] == nil {
			out = append(out, d)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// decode runs dec.Decode, turning a panic (none is known) into an error
// and capping the error's length: a YAML error may quote the input.
func decode(dec *yaml.Decoder, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot decode the file: %v", r)
		}
	}()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return err
		}
		msg := subscriber.SanitizeText(err.Error(), maxDecodeErrorSize)
		return errors.New(strings.TrimPrefix(msg, "yaml: "))
	}
	return nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// refusedHeaders are set by the sender itself, or by HTTP.
var refusedHeaders = map[string]bool{
	"content-type": true, "content-length": true, "host": true, "transfer-encoding": true,
	"connection": true, "traceparent": true, "tracestate": true, "user-agent": true,
}

func validate(s Spec, label string, getenv func(string) (string, bool), dir string) (Destination, []error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Destination: label, Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	d := Destination{Spec: s}

	switch {
	case s.Name == "":
		bad("name", "is required")
	case !subscriber.ValidName(s.Name):
		bad("name", "%s must be a lower-case identifier ([a-z][a-z0-9_]*, at most 63 bytes, not starting with pg_): it names the consumer and the Postgres schema", quote(s.Name))
	}

	validateURL(s.URL, bad)

	switch {
	case len(s.Subjects) == 0:
		bad("subjects", "at least one subject filter is required, such as \"stripe.>\"")
	case len(s.Subjects) > MaxSubjects:
		bad("subjects", "%d filters, at most %d", len(s.Subjects), MaxSubjects)
	default:
		for i, p := range s.Subjects {
			field := fmt.Sprintf("subjects[%d]", i)
			if err := validFilter(p); err != nil {
				bad(field, "%s", err)
				continue
			}
			for j := range i {
				if validFilter(s.Subjects[j]) == nil && schema.SubjectsOverlap(s.Subjects[j], p) {
					bad(field, "%s overlaps subjects[%d] %s: a subject may match only one filter of a destination", quote(p), j, quote(s.Subjects[j]))
					break
				}
			}
		}
	}

	d.Secrets = validateSecrets(s.SecretEnv, getenv, bad)
	validateMore(s, &d, bad)

	switch s.Payload {
	case "":
		d.Payload = DefaultPayload
	case PayloadEnvelope, PayloadRaw:
	default:
		bad("payload", "must be %q or %q, got %s", PayloadEnvelope, PayloadRaw, quote(string(s.Payload)))
	}

	switch {
	case s.Concurrency == 0 && s.Ordered:
		d.Concurrency = 1
	case s.Concurrency == 0:
		d.Concurrency = DefaultConcurrency
	case s.Concurrency < 1 || s.Concurrency > MaxConcurrency:
		bad("concurrency", "must be between 1 and %d, got %d", MaxConcurrency, s.Concurrency)
	case s.Ordered && s.Concurrency != 1:
		bad("concurrency", "must be 1 (or omitted) when ordered is true, got %d", s.Concurrency)
	}

	if math.IsNaN(s.RateLimit) || s.RateLimit < 0 || s.RateLimit > MaxRateLimit {
		bad("rate_limit", "must be between 0 (unlimited) and %d requests per second, got %v", MaxRateLimit, s.RateLimit)
		d.RateLimit = 0
	}

	timeoutOK := true
	switch t := s.Timeout.D(); {
	case t == 0:
		d.Timeout = Duration(DefaultTimeout)
	case t < MinTimeout || t > MaxTimeout:
		bad("timeout", "must be between %v and %v, got %v", MinTimeout, MaxTimeout, t)
		timeoutOK = false
	}
	switch t := s.ConnectTimeout.D(); {
	case t == 0:
		d.ConnectTimeout = Duration(min(DefaultConnectTimeout, d.Timeout.D()))
	case t < MinConnectTimeout:
		bad("connect_timeout", "must be at least %v, got %v", MinConnectTimeout, t)
	case timeoutOK && t > d.Timeout.D():
		bad("connect_timeout", "must not exceed timeout (%v), got %v", d.Timeout.D(), t)
	}
	validateRetries(&d, bad)

	validateHeaders(s.Headers, bad)

	if s.CAFile != "" {
		pool, sum, err := loadCA(s.CAFile, dir)
		if err != nil {
			bad("ca_file", "%v", err)
		} else {
			d.RootCAs, d.caSum = pool, sum
		}
	}
	return d, errs
}

// validateRetries checks retry_for and max_retry_after (a Retry-After's
// cap, DefaultMaxRetryAfter by default), setting their defaults in d.
func validateRetries(d *Destination, bad func(field, format string, args ...any)) {
	switch t := d.RetryFor.D(); {
	case t == 0:
		d.RetryFor = Duration(DefaultRetryFor)
	case t < MinRetryFor || t > MaxRetryFor:
		bad("retry_for", "must be between %v and %v (30d), got %v", MinRetryFor, MaxRetryFor, t)
	}
	switch t := d.MaxRetryAfter.D(); {
	case t == 0:
		d.MaxRetryAfter = Duration(DefaultMaxRetryAfter)
	case t < MinMaxRetryAfter || t > MaxRetryAfter:
		bad("max_retry_after", "must be between %v and %v, got %v", MinMaxRetryAfter, MaxRetryAfter, t)
	}
}

func validateURL(raw string, bad func(field, format string, args ...any)) {
	if raw == "" {
		bad("url", "is required")
		return
	}
	if len(raw) > MaxURLLen {
		bad("url", "is %d bytes, at most %d", len(raw), MaxURLLen)
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the URL, which may hold credentials.
		bad("url", "is not a URL")
		return
	}
	if u.User != nil {
		// Not quoted: it holds credentials.
		bad("url", "must not contain credentials (user:password@); use headers or the signature")
		return
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		bad("url", "must be http or https, got %s", quote(u.Scheme))
		return
	}
	// Quoted without its query's values, which may hold a token.
	shown := quote(RedactURL(raw))
	if u.Host == "" || u.Hostname() == "" {
		bad("url", "%s has no host", shown)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		bad("url", "%s must not have a fragment (#...)", shown)
	}
	if u.Opaque != "" {
		bad("url", "%s must be of the form http(s)://host/path", shown)
	}
}

// RedactURL is a destination URL as logs, the database and `hub
// destinations` show it (redact.URL): the query's values and the path's
// token-shaped segments (Slack's, Discord's), which may hold a token,
// become "REDACTED" (the names and the other segments stay). A URL that
// does not parse becomes "(invalid URL)".
func RedactURL(raw string) string { return redact.URL(raw) }

// validFilter checks a subject filter over "<provider>.<event_type>".
func validFilter(p string) error {
	if p == "" {
		return errors.New("is empty")
	}
	if len(p) > schema.MaxSubjectLen {
		return fmt.Errorf("is %d bytes, at most %d", len(p), schema.MaxSubjectLen)
	}
	toks := strings.Split(p, ".")
	if len(toks) < 2 {
		return fmt.Errorf("%s must be \"<provider>.<event_type>\" with wildcards, such as \"stripe.>\" or \"*.>\"", quote(p))
	}
	if toks[0] == "_replay" {
		return fmt.Errorf("%s: the _replay subjects are the hub's", quote(p))
	}
	for i, t := range toks {
		switch {
		case t == "*":
		case t == ">":
			if i != len(toks)-1 {
				return fmt.Errorf("%s: '>' must be the last token", quote(p))
			}
		case !schema.ValidToken(t):
			return fmt.Errorf("%s: token %s is not '*', '>' or [A-Za-z0-9_-]+", quote(p), quote(t))
		}
	}
	return nil
}

func validateHeaders(h map[string]string, bad func(field, format string, args ...any)) {
	total := 0
	lower := make(map[string]string, len(h))
	for name, value := range h {
		total += len(name) + len(value)
		field := "headers." + name
		if !validToken(name) {
			bad("headers", "%s is not a header name (an HTTP token)", quote(name))
			continue
		}
		l := strings.ToLower(name)
		switch {
		case refusedHeaders[l]:
			bad(field, "is set by the sender and cannot be configured")
		case strings.HasPrefix(l, "webhook-"), strings.HasPrefix(l, "hookhub-"):
			bad(field, "webhook-* and hookhub-* headers are set by the sender and cannot be configured")
		case lower[l] != "":
			bad(field, "is also written as %s: header names are case-insensitive", quote(lower[l]))
		}
		lower[l] = cmp.Or(lower[l], name)
		if !validHeaderValue(value) {
			// The value is never quoted: it may be a credential.
			bad(field, "the value holds a control character (CR, LF, NUL, ...)")
		}
	}
	if total > MaxHeaderBytes {
		bad("headers", "names and values add up to %d bytes, at most %d", total, MaxHeaderBytes)
	}
}

// validToken reports whether s is an HTTP token (RFC 9110, 5.6.2).
func validToken(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue refuses control characters other than horizontal tab.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// loadCA reads a PEM bundle (relative to dir when not absolute) and
// returns the system roots with its certificates added.
func loadCA(path, dir string) (*x509.CertPool, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, sum, fmt.Errorf("cannot open: %w", err)
	}
	defer f.Close()
	pem, err := io.ReadAll(io.LimitReader(f, MaxCAFileSize+1))
	if err != nil {
		return nil, sum, fmt.Errorf("cannot read %s: %w", path, err)
	}
	if len(pem) > MaxCAFileSize {
		return nil, sum, fmt.Errorf("%s is larger than %d bytes", path, MaxCAFileSize)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, sum, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, sha256.Sum256(pem), nil
}

// quote quotes s for an error, cut to maxQuoted bytes.
func quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(subscriber.SanitizeText(s[:maxQuoted], 0)) + "…"
	}
	return strconv.Quote(s)
}
