package destination

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/internal/redact"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Where a new destination's consumer starts (Spec.Start).
const (
	// StartNew delivers the events published after the destination's
	// consumer is created. The default.
	StartNew = "new"
	// StartAll delivers the stream's whole retained history first.
	StartAll = "all"
	// DefaultStart is the start of a destination that names none.
	DefaultStart = StartNew
)

// ReservedNames are names a destination may not take (besides pg_*,
// which subscriber.ValidName refuses): Postgres's own schemas, the
// hub's schema (its tables live in public: `DROP SCHEMA … CASCADE` of a
// destination named so would drop the archive), and the schemas and
// consumers of the hub's other subscribers.
var ReservedNames = map[string]string{
	"public":             "the hub's schema (its archive)",
	"information_schema": "a Postgres schema",
	"credits":            "the credits subscriber's",
	"email":              "the email subscriber's",
	"downgrade":          "the downgrade subscriber's",
	"hookhub":            "the hub's",
}

// validateSecrets resolves the secret_env names with getenv.
func validateSecrets(names []string, getenv func(string) (string, bool), bad func(field, format string, args ...any)) []Secret {
	var out []Secret
	switch {
	case len(names) == 0:
		bad("secret_env", "is required: the name of the environment variable holding the whsec_ signing secret")
	case len(names) > MaxSecrets:
		bad("secret_env", "%d variables, at most %d", len(names), MaxSecrets)
	default:
		seen := make(map[string]bool, len(names))
		for i, name := range names {
			field := "secret_env"
			if len(names) > 1 {
				field = fmt.Sprintf("secret_env[%d]", i)
			}
			switch {
			case strings.HasPrefix(strings.TrimSpace(name), "whsec_"):
				// Never quoted: it is the secret itself.
				bad(field, "holds a secret: give the name of the environment variable that holds it")
				continue
			case !envNameRE.MatchString(name) || len(name) > 256:
				// Not quoted either: it may be a secret in another form.
				bad(field, "is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*, at most 256 bytes)")
				continue
			case seen[name]:
				bad(field, "%s is listed twice", name)
				continue
			}
			seen[name] = true
			v, ok := getenv(name)
			if !ok || v == "" {
				bad(field, "the environment variable %s is not set", name)
				continue
			}
			key, err := ParseSecret(v) // its errors never contain the secret
			if err != nil {
				bad(field, "the environment variable %s: %v", name, err)
				continue
			}
			out = append(out, key)
		}
	}

	return out
}

// validateMore checks the fields the first version of the file did not
// have, and the rules that protect the hub: the name, the start, and the
// URL's address.
func validateMore(s Spec, d *Destination, bad func(field, format string, args ...any)) {
	if why, ok := ReservedNames[s.Name]; ok {
		bad("name", "%s is reserved (%s): a destination's name is its Postgres schema and its consumer, which must be its own", quote(s.Name), why)
	}
	if _, err := ParseStart(s.Start); err != nil {
		bad("start", "%v", err)
	}
	d.Start = cmp.Or(d.Start, DefaultStart)
	if s.AllowLinkLocal {
		return
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return // validateURL said so
	}
	if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && Forbidden(ip) {
		bad("url", "the host %s is a link-local or cloud metadata address: refused unless allow_link_local: true", ip)
	}
}

// ParseStart reads a start: "" (DefaultStart), "new", "all", or an RFC
// 3339 time ("2026-01-02T15:04:05Z") from which the stream's events are
// delivered.
func ParseStart(s string) (subscriber.Start, error) {
	switch s {
	case "", StartNew:
		return subscriber.Start{Policy: jetstream.DeliverNewPolicy}, nil
	case StartAll:
		return subscriber.Start{Policy: jetstream.DeliverAllPolicy}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return subscriber.Start{}, fmt.Errorf("must be %q, %q or an RFC 3339 time such as \"2026-01-02T15:04:05Z\", got %s", StartNew, StartAll, quote(s))
	}
	return subscriber.Start{Policy: jetstream.DeliverByStartTimePolicy, Time: t}, nil
}

// Receives says what d receives, for `destinations check`: its subjects
// and where a new consumer starts.
func (d Destination) Receives() string {
	var from string
	switch d.Start {
	case "", StartNew:
		from = "events published from its first start on (start: new)"
	case StartAll:
		from = "the stream's whole retained history, then every new event (start: all)"
	default:
		from = "the events published since " + d.Start
	}
	return fmt.Sprintf("%s: %s; %s; a consumer that exists already keeps its position", d.Name, strings.Join(d.Subjects, ", "), from)
}

// metadataAddrs are cloud metadata services outside 169.254.0.0/16.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
}

// Forbidden reports a link-local (169.254.0.0/16, fe80::/10) or cloud
// metadata address, which a destination may reach only with
// allow_link_local: true.
func Forbidden(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || slices.Contains(metadataAddrs, ip)
}

// ErrForbiddenAddress is wrapped by an attempt's error when the URL's
// host resolved to an address Forbidden refuses.
var ErrForbiddenAddress = fmt.Errorf("link-local or cloud metadata address refused (allow_link_local is false)")

// dialControl is the dialer's Control hook: it refuses a connection to a
// Forbidden address, whatever name resolved to it (DNS may answer
// 169.254.169.254 for a public name). Nil when allowed.
func dialControl(allow bool) func(network, address string, c syscall.RawConn) error {
	if allow {
		return nil
	}
	return func(network, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return fmt.Errorf("dial %s: %w", network, err)
		}
		ip, err := netip.ParseAddr(host)
		if err == nil && Forbidden(ip) {
			return fmt.Errorf("%w: %s", ErrForbiddenAddress, ip)
		}
		return nil
	}
}

// Redactor hides what d was configured with or sends as a credential in
// text its endpoint answered (a snippet, an error) and in its URL: the
// static headers' values, the signing secrets (whsec_ and base64), the
// URL's query values and token-shaped path segments, and every
// signature (redact.Redactor).
func (d Destination) Redactor() *redact.Redactor {
	var secrets []string
	for _, v := range d.Headers {
		secrets = append(secrets, v)
		if _, cred, ok := strings.Cut(v, " "); ok {
			secrets = append(secrets, strings.TrimSpace(cred)) // "Bearer <token>": the token alone
		}
	}
	for _, s := range d.Secrets {
		b64 := base64.StdEncoding.EncodeToString(s)
		secrets = append(secrets, "whsec_"+b64, b64, base64.RawStdEncoding.EncodeToString(s), base64.URLEncoding.EncodeToString(s))
	}
	secrets = append(secrets, redact.URLSecrets(d.URL)...)
	return redact.NewRedactor(secrets...)
}
