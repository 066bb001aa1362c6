package destination_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/subscribers/destination"
)

// testEnv resolves BILLING_SECRET and OLD_SECRET to test secrets, and
// BAD_SECRET to a value that is not a whsec_ secret.
func testEnv(name string) (string, bool) {
	switch name {
	case "BILLING_SECRET":
		return testSecret, true
	case "OLD_SECRET":
		return testOldSecret, true
	case "BAD_SECRET":
		return "hunter2-not-a-whsec", true
	case "EMPTY_SECRET":
		return "", true
	}
	return "", false
}

const minimal = `
destinations:
  - name: billing_node
    url: https://billing.internal/hooks
    subjects: ["paddle.subscription.*", "stripe.>"]
    secret_env: BILLING_SECRET
`

func TestParseDefaults(t *testing.T) {
	ds, err := destination.Parse([]byte(minimal), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 {
		t.Fatalf("%d destinations", len(ds))
	}
	d := ds[0]
	if d.Name != "billing_node" || d.URL != "https://billing.internal/hooks" || len(d.Subjects) != 2 {
		t.Fatalf("spec = %+v", d.Spec)
	}
	if d.Payload != destination.PayloadEnvelope || d.Concurrency != destination.DefaultConcurrency ||
		d.Timeout.D() != destination.DefaultTimeout || d.ConnectTimeout.D() != destination.DefaultConnectTimeout ||
		d.RetryFor.D() != destination.DefaultRetryFor || d.RateLimit != 0 || d.Ordered || d.RootCAs != nil ||
		d.MaxRetryAfter.D() != destination.DefaultMaxRetryAfter {
		t.Fatalf("defaults not applied: %+v", d.Spec)
	}
	if len(d.Secrets) != 1 || len(d.Secrets[0]) == 0 {
		t.Fatalf("secrets = %v", d.Secrets)
	}
}

func TestParseFull(t *testing.T) {
	ca := writeCA(t)
	src := `
destinations:
  - name: billing_node
    url: http://billing.internal:8080/hooks?x=1
    subjects: ["paddle.subscription.*"]
    secret_env: [BILLING_SECRET, OLD_SECRET]
    payload: raw
    ordered: true
    rate_limit: 2.5
    timeout: 1s
    retry_for: 3d
    max_retry_after: 10m
    headers: {X-Team: billing, Authorization: "Bearer abc"}
    ca_file: ` + ca + `
  - name: second
    url: https://b.example/
    subjects: ["*.>"]
    secret_env: [OLD_SECRET]
    concurrency: 256
    timeout: 5m
    connect_timeout: 100ms
`
	ds, err := destination.Parse([]byte(src), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	d := ds[0]
	if d.Payload != destination.PayloadRaw || !d.Ordered || d.Concurrency != 1 || d.RateLimit != 2.5 ||
		d.Timeout.D() != time.Second || d.ConnectTimeout.D() != time.Second || d.RetryFor.D() != 72*time.Hour ||
		d.Headers["X-Team"] != "billing" || d.RootCAs == nil || len(d.Secrets) != 2 || d.MaxRetryAfter.D() != 10*time.Minute {
		t.Fatalf("first = %+v (%d secrets)", d.Spec, len(d.Secrets))
	}
	if d := ds[1]; d.Concurrency != 256 || d.Timeout.D() != 5*time.Minute || d.ConnectTimeout.D() != 100*time.Millisecond {
		t.Fatalf("second = %+v", d.Spec)
	}
}

func TestParseJSON(t *testing.T) {
	src := `{"destinations":[{"name":"a","url":"https://a.example/h","subjects":["stripe.>"],"secret_env":"BILLING_SECRET","timeout":"2s"}]}`
	ds, err := destination.Parse([]byte(src), testEnv)
	if err != nil || len(ds) != 1 || ds[0].Timeout.D() != 2*time.Second {
		t.Fatalf("Parse(JSON) = %+v, %v", ds, err)
	}
}

func TestParseEmpty(t *testing.T) {
	for _, src := range []string{"", "# nothing\n", "destinations: []\n"} {
		ds, err := destination.Parse([]byte(src), testEnv)
		if err != nil || len(ds) != 0 {
			t.Fatalf("Parse(%q) = %v, %v", src, ds, err)
		}
	}
}

// entry is a valid destination with one field replaced (or added).
func entry(field, value string) string {
	fields := []struct{ k, v string }{
		{"name", "billing_node"},
		{"url", "https://billing.internal/hooks"},
		{"subjects", `["paddle.subscription.*"]`},
		{"secret_env", "BILLING_SECRET"},
	}
	var b strings.Builder
	b.WriteString("destinations:\n  - ")
	found := false
	for i, f := range fields {
		v := f.v
		if f.k == field {
			v, found = value, true
		}
		if i > 0 {
			b.WriteString("    ")
		}
		if v != "<omit>" {
			b.WriteString(f.k + ": " + v + "\n")
		} else {
			b.WriteString("# omitted\n")
		}
	}
	if !found {
		b.WriteString("    " + field + ": " + value + "\n")
	}
	return b.String()
}

func TestParseFieldRules(t *testing.T) {
	long := strings.Repeat("a", 2100)
	for _, tc := range []struct {
		name, field, value string
		dest, errField     string // the FieldError expected
		reason             string // a part of its reason
	}{
		{"name missing", "name", "<omit>", "#1", "name", "is required"},
		{"name upper case", "name", "Billing", "#1", "name", "lower-case identifier"},
		{"name pg_", "name", "pg_x", "#1", "name", "lower-case identifier"},
		{"name too long", "name", strings.Repeat("a", 64), "#1", "name", "lower-case identifier"},
		{"url missing", "url", "<omit>", "billing_node", "url", "is required"},
		{"url ftp", "url", "ftp://x/y", "billing_node", "url", `must be http or https, got "ftp"`},
		{"url relative", "url", "/hooks", "billing_node", "url", `must be http or https, got ""`},
		{"url no host", "url", "https:///hooks", "billing_node", "url", "has no host"},
		{"url userinfo", "url", "https://u:pw@x/h", "billing_node", "url", "must not contain credentials"},
		{"url fragment", "url", "https://x/h#f", "billing_node", "url", "fragment"},
		{"url opaque", "url", "https:x", "billing_node", "url", "has no host"},
		{"url too long", "url", "https://x/" + long, "billing_node", "url", "at most 2048"},
		{"url control", "url", `"https://x/\u0001"`, "billing_node", "url", "is not a URL"},
		{"subjects missing", "subjects", "<omit>", "billing_node", "subjects", "at least one"},
		{"subjects empty", "subjects", "[]", "billing_node", "subjects", "at least one"},
		{"subject empty", "subjects", `[""]`, "billing_node", "subjects[0]", "is empty"},
		{"subject one token", "subjects", `[">"]`, "billing_node", "subjects[0]", "<provider>.<event_type>"},
		{"subject replay", "subjects", `["_replay.>"]`, "billing_node", "subjects[0]", "_replay"},
		{"subject bad token", "subjects", `["paddle.a b"]`, "billing_node", "subjects[0]", "is not '*', '>'"},
		{"subject > not last", "subjects", `["paddle.>.x"]`, "billing_node", "subjects[0]", "must be the last"},
		{"subject empty token", "subjects", `["paddle..x"]`, "billing_node", "subjects[0]", "is not '*', '>'"},
		{"subject too long", "subjects", `["paddle.` + long[:200] + `"]`, "billing_node", "subjects[0]", "at most"},
		{"subjects overlap", "subjects", `["paddle.>", "paddle.subscription.*"]`, "billing_node", "subjects[1]", `overlaps subjects[0] "paddle.>"`},
		{"subjects overlap star", "subjects", `["*.created", "paddle.*"]`, "billing_node", "subjects[1]", "overlaps"},
		{"subjects too many", "subjects", "[" + strings.Repeat(`"a.b",`, 100) + `"a.c"]`, "billing_node", "subjects", "at most 100"},
		{"secret_env missing", "secret_env", "<omit>", "billing_node", "secret_env", "is required"},
		{"secret_env unset", "secret_env", "NOPE", "billing_node", "secret_env", "NOPE is not set"},
		{"secret_env empty value", "secret_env", "EMPTY_SECRET", "billing_node", "secret_env", "is not set"},
		{"secret_env bad secret", "secret_env", "BAD_SECRET", "billing_node", "secret_env", "must start with whsec_"},
		{"secret_env list unset", "secret_env", "[BILLING_SECRET, NOPE]", "billing_node", "secret_env[1]", "NOPE is not set"},
		{"secret_env twice", "secret_env", "[BILLING_SECRET, BILLING_SECRET]", "billing_node", "secret_env[1]", "listed twice"},
		{"secret_env holds secret", "secret_env", testSecret, "billing_node", "secret_env", "holds a secret"},
		{"secret_env bad name", "secret_env", `"a-b"`, "billing_node", "secret_env", "is not an environment variable name"},
		{"secret_env map", "secret_env", "{a: b}", "billing_node", "secret_env", "want a string or a list of strings"},
		{"secret_env too many", "secret_env", "[A,B,C,D,E,F,G,H,I]", "billing_node", "secret_env", "at most 8"},
		{"payload", "payload", "xml", "billing_node", "payload", `must be "envelope" or "raw", got "xml"`},
		{"concurrency 0 ok, negative", "concurrency", "-1", "billing_node", "concurrency", "between 1 and 256, got -1"},
		{"concurrency too big", "concurrency", "257", "billing_node", "concurrency", "between 1 and 256"},
		{"concurrency not int", "concurrency", "two", "billing_node", "concurrency", `want a whole number, got "two"`},
		{"concurrency not whole", "concurrency", "1.5", "billing_node", "concurrency", `want a whole number, got "1.5"`},
		{"ordered not bool", "ordered", "maybe", "billing_node", "ordered", `want true or false, got "maybe"`},
		{"subjects map", "subjects", "{a: b}", "billing_node", "subjects", "want a list of strings, got a map"},
		{"headers list", "headers", "[a]", "billing_node", "headers", "want a map of names to strings, got a list"},
		{"name public", "name", "public", "public", "name", `"public" is reserved (the hub's schema`},
		{"name information_schema", "name", "information_schema", "information_schema", "name", "is reserved (a Postgres schema)"},
		{"name credits", "name", "credits", "credits", "name", "is reserved (the credits subscriber's)"},
		{"name email", "name", "email", "email", "name", "is reserved"},
		{"name downgrade", "name", "downgrade", "downgrade", "name", "is reserved"},
		{"start bad", "start", "yesterday", "billing_node", "start", `must be "new", "all" or an RFC 3339 time`},
		{"url link-local v4", "url", "http://169.254.169.254/latest/meta-data", "billing_node", "url", "link-local or cloud metadata address"},
		{"url link-local v6", "url", "http://[fe80::1]/h", "billing_node", "url", "link-local or cloud metadata address"},
		{"url link-local mapped", "url", "http://[::ffff:169.254.1.1]/h", "billing_node", "url", "link-local"},
		{"url aws v6 metadata", "url", "http://[fd00:ec2::254]/h", "billing_node", "url", "cloud metadata"},
		{"ordered concurrency", "ordered", "true\n    concurrency: 2", "billing_node", "concurrency", "must be 1 (or omitted) when ordered"},
		{"rate_limit negative", "rate_limit", "-1", "billing_node", "rate_limit", "between 0 (unlimited) and 10000"},
		{"rate_limit too big", "rate_limit", "10001", "billing_node", "rate_limit", "between 0"},
		{"rate_limit nan", "rate_limit", ".nan", "billing_node", "rate_limit", "between 0"},
		{"rate_limit inf", "rate_limit", ".inf", "billing_node", "rate_limit", "between 0"},
		{"timeout short", "timeout", "99ms", "billing_node", "timeout", "between 100ms and 5m0s, got 99ms"},
		{"timeout long", "timeout", "301s", "billing_node", "timeout", "between 100ms and 5m0s"},
		{"timeout negative", "timeout", "-1s", "billing_node", "timeout", "between"},
		{"timeout no unit", "timeout", "10", "billing_node", "timeout", "not a duration"},
		{"timeout garbage", "timeout", "soon", "billing_node", "timeout", "not a duration"},
		{"timeout list", "timeout", "[1s]", "billing_node", "timeout", "want a duration"},
		{"connect_timeout short", "connect_timeout", "50ms", "billing_node", "connect_timeout", "at least 100ms"},
		{"connect_timeout over timeout", "connect_timeout", "11s", "billing_node", "connect_timeout", "must not exceed timeout (10s)"},
		{"retry_for short", "retry_for", "59s", "billing_node", "retry_for", "between 1m0s and 720h0m0s"},
		{"max_retry_after short", "max_retry_after", "500ms", "billing_node", "max_retry_after", "between 1s and 24h0m0s"},
		{"max_retry_after long", "max_retry_after", "2d", "billing_node", "max_retry_after", "between 1s and 24h0m0s"},
		{"retry_for long", "retry_for", "31d", "billing_node", "retry_for", "between"},
		{"retry_for days garbage", "retry_for", "1.5d", "billing_node", "retry_for", "not a duration"},
		{"retry_for many days", "retry_for", "99999d", "billing_node", "retry_for", "whole days up to 3650"},
		{"header bad name", "headers", `{"X Team": a}`, "billing_node", "headers", `"X Team" is not a header name`},
		{"header content-type", "headers", `{Content-Type: a}`, "billing_node", "headers.Content-Type", "set by the sender"},
		{"header host", "headers", `{host: a}`, "billing_node", "headers.host", "set by the sender"},
		{"header traceparent", "headers", `{Traceparent: a}`, "billing_node", "headers.Traceparent", "set by the sender"},
		{"header webhook-", "headers", `{Webhook-Id: a}`, "billing_node", "headers.Webhook-Id", "webhook-* and hookhub-*"},
		{"header hookhub-", "headers", `{HookHub-Provider: a}`, "billing_node", "headers.HookHub-Provider", "webhook-* and hookhub-*"},
		{"header CR", "headers", `{X-A: "a\rb"}`, "billing_node", "headers.X-A", "control character"},
		{"header LF", "headers", `{X-A: "a\nb"}`, "billing_node", "headers.X-A", "control character"},
		{"header NUL", "headers", `{X-A: "a\0b"}`, "billing_node", "headers.X-A", "control character"},
		{"header too big", "headers", `{X-A: ` + strings.Repeat("v", 4100) + `}`, "billing_node", "headers", "at most 4096"},
		{"ca_file missing", "ca_file", "/nonexistent/ca.pem", "billing_node", "ca_file", "cannot open"},
		{"ca_file not pem", "ca_file", "config_test.go", "billing_node", "ca_file", "holds no PEM certificate"},
		{"unknown field", "urls", "x", "billing_node", "urls", "unknown field; the fields are allow_link_local, ca_file"},
		{"field twice", "url", "https://a/\n    url: https://b/", "billing_node", "url", "is given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := entry(tc.field, tc.value)
			ds, err := destination.Parse([]byte(src), testEnv)
			if err == nil {
				t.Fatalf("Parse accepted:\n%s\n=> %+v", src, ds)
			}
			if !errors.Is(err, destination.ErrInvalidFile) {
				t.Errorf("%v does not wrap ErrInvalidFile", err)
			}
			if ds != nil {
				t.Errorf("destinations returned with an error: %+v", ds)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err = %v\nwant it to say %q", err, tc.reason)
			}
			if !hasFieldError(err, tc.dest, tc.errField, tc.reason) {
				t.Fatalf("err = %v\nhas no FieldError{%q, %q, ...%q...}", err, tc.dest, tc.errField, tc.reason)
			}
			for _, secret := range []string{testSecret, strings.TrimPrefix(testSecret, "whsec_"), "hunter2", "Bearer"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("the error shows a secret: %v", err)
				}
			}
		})
	}
}

// hasFieldError reports whether err holds a *FieldError for dest and field
// whose reason contains reason.
func hasFieldError(err error, dest, field, reason string) bool {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var fe *destination.FieldError
		if errors.As(e, &fe) && fe.Destination == dest && fe.Field == field && strings.Contains(fe.Reason, reason) {
			return true
		}
	}
	return false
}

func TestParseFileRules(t *testing.T) {
	big := "# " + strings.Repeat("x", destination.MaxFileSize) + "\n"
	var many strings.Builder
	many.WriteString("destinations:\n")
	for range destination.MaxDestinations + 1 {
		many.WriteString("  - {}\n")
	}
	two := minimal + strings.Replace(strings.TrimPrefix(minimal, "\ndestinations:\n"), "url: https://billing.internal/hooks", "url: https://other/", 1)
	for _, tc := range []struct {
		name, src, want string
	}{
		{"too big", big, "larger than 1048576 bytes"},
		{"too many", many.String(), "1001 destinations, at most 1000"},
		{"two documents", minimal + "---\n" + minimal, "more than one YAML document"},
		{"not a map", "- a\n", `want a map with a list under "destinations:", got a list`},
		{"destinations not a list", "destinations: {a: 1}\n", "destinations: want a list of destinations, got a map"},
		{"entry not a map", "destinations:\n  - 5\n", `destination #1: line 2: want a map of fields`},
		{"unknown top field", "destination: []\n", `unknown field "destination": the file has only "destinations:"`},
		{"duplicate name", two, `destination #2: name: "billing_node" is also the name of destination #1`},
		{"bad yaml", "destinations: [\n", "did not find expected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := destination.Parse([]byte(tc.src), testEnv)
			if err == nil || !errors.Is(err, destination.ErrInvalidFile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %.300v\nwant ErrInvalidFile saying %q", err, tc.want)
			}
		})
	}
}

// Every problem of every entry is reported at once.
func TestParseJoinsErrors(t *testing.T) {
	src := `
destinations:
  - name: a
    url: ftp://x
    subjects: []
    secret_env: NOPE
  - url: https://x/
    subjects: [a.b]
    secret_env: BILLING_SECRET
`
	_, err := destination.Parse([]byte(src), testEnv)
	for _, want := range []struct{ dest, field, reason string }{
		{"a", "url", "http or https"},
		{"a", "subjects", "at least one"},
		{"a", "secret_env", "not set"},
		{"#2", "name", "is required"},
	} {
		if !hasFieldError(err, want.dest, want.field, want.reason) {
			t.Errorf("missing %+v in %v", want, err)
		}
	}
	if got := strings.Count(err.Error(), "\n") + 1; got != 4 {
		t.Errorf("%d errors, want 4:\n%v", got, err)
	}
}

func TestFieldErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    destination.FieldError
		want string
	}{
		{destination.FieldError{Destination: "billing_node", Field: "url", Reason: `must be http or https, got "ftp"`}, `destination "billing_node": url: must be http or https, got "ftp"`},
		{destination.FieldError{Destination: "#3", Field: "name", Reason: "is required"}, `destination #3: name: is required`},
		{destination.FieldError{Reason: "the file holds more than one YAML document"}, `the file holds more than one YAML document`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	ca := writeCA(t)
	if err := os.Rename(ca, filepath.Join(dir, "ca.pem")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "destinations.yaml")
	if err := os.WriteFile(path, []byte(minimal+"    ca_file: ca.pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ds, err := destination.Load(path, testEnv)
	if err != nil || len(ds) != 1 || ds[0].RootCAs == nil {
		t.Fatalf("Load = %+v, %v", ds, err)
	}
	_, err = destination.Load(filepath.Join(dir, "nope.yaml"), testEnv)
	if !errors.Is(err, destination.ErrInvalidFile) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte(entry("url", "ftp://x")), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = destination.Load(path, testEnv)
	if !errors.Is(err, destination.ErrInvalidFile) || !strings.HasPrefix(err.Error(), path+": ") {
		t.Fatalf("invalid file: %v", err)
	}
}

func TestFingerprint(t *testing.T) {
	fp := func(src string, env func(string) (string, bool)) string {
		t.Helper()
		ds, err := destination.Parse([]byte(src), env)
		if err != nil {
			t.Fatal(err)
		}
		return ds[0].Fingerprint()
	}
	base := fp(minimal, testEnv)
	if len(base) != 64 || base != fp(minimal, testEnv) {
		t.Fatalf("fingerprint %q is not a stable sha256 hex", base)
	}
	rotated := func(name string) (string, bool) {
		if name == "BILLING_SECRET" {
			return testOldSecret, true
		}
		return testEnv(name)
	}
	for name, other := range map[string]string{
		"secret value": fp(minimal, rotated),
		"url":          fp(strings.Replace(minimal, "/hooks", "/hooks2", 1), testEnv),
		"timeout":      fp(minimal+"    timeout: 11s\n", testEnv),
		"header":       fp(minimal+"    headers: {X-A: b}\n", testEnv),
	} {
		if other == base {
			t.Errorf("%s: same fingerprint", name)
		}
	}
	if explicit := fp(minimal+"    timeout: 10s\n    payload: envelope\n", testEnv); explicit != base {
		t.Errorf("writing a default changes the fingerprint")
	}
	if strings.Contains(base, "MfKQ") {
		t.Fatal("fingerprint shows the secret")
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"10s": 10 * time.Second, "72h": 72 * time.Hour, "3d": 72 * time.Hour, "0d": 0, "1h30m": 90 * time.Minute, " 5m ": 5 * time.Minute,
	} {
		got, err := destination.ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "10", "-3d", "1.5d", "3dd", "3 d", "3650001d"} {
		if _, err := destination.ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) accepted", in)
		}
	}
}

// writeCA writes a self-signed CA certificate as PEM to a temporary file.
func writeCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.example.com/x":                      "https://hooks.example.com/x",
		"https://hooks.example.com/x?token=s3cr3t&team=ab": "https://hooks.example.com/x?team=REDACTED&token=REDACTED",
		"http://u:p@h/x?t=1":                               "http://h/x?t=REDACTED",
		"https://h/x?%zz=1;a":                              "https://h/x?REDACTED",
		"::nope":                                           "(invalid URL)",
	} {
		if got := destination.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	_, err := destination.Parse([]byte("destinations:\n  - name: a\n    url: \"https://h/x?token=s3cr3t#frag\"\n    subjects: [\"paddle.>\"]\n    secret_env: S\n"),
		func(string) (string, bool) { return testSecret, true })
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "fragment") {
		t.Fatalf("err = %v: want the fragment refused without the token", err)
	}
}
