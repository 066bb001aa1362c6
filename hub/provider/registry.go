package provider

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrUnknownProvider is returned by New for a name no provider registers.
var ErrUnknownProvider = errors.New("unknown provider")

// Options configures a provider beyond its secrets. Each provider reads
// the fields it needs and ignores the others.
type Options struct {
	// Tolerance bounds |now - signed timestamp| for the schemes that sign
	// one (Paddle, Clerk, Standard Webhooks, Stripe); 0 means the
	// provider's default. GitHub, Shopify and Twilio sign no timestamp.
	Tolerance time.Duration
	// PublicURL is the hub's public base URL as Twilio calls it
	// (HUB_PUBLIC_URL): scheme, host, optional port and optional path
	// prefix, without query, e.g. "https://hub.example.com". Twilio signs
	// the URL it calls, PublicURL followed by TwilioPath and the query, so
	// it requires one; behind a proxy that strips a path prefix, PublicURL
	// carries that prefix.
	PublicURL string
	// TwilioTypes, when not empty, are the only event types Twilio
	// deliveries may name (HUB_TWILIO_TYPES): the hub then accepts exactly
	// the URLs WebhookURL(t) for t in TwilioTypes (with bodySHA256
	// appended for JSON bodies), and refuses the URL without ?type=, whose
	// type it would infer from the form. Each must satisfy
	// ValidTwilioType.
	TwilioTypes []string
	// Name is the name a Standard Webhooks provider is mounted under, an
	// operator's choice (HUB_STANDARD_PROVIDERS); empty means
	// StandardWebhooksName. Other providers ignore it.
	Name string
}

// Spec is a registered provider: its name, how to build it, and what the
// hub's configuration derives from it (the HUB_<NAME>_SECRETS variable and
// the development secret).
type Spec struct {
	// Name is the provider's name (Provider.Name).
	Name string
	// New builds the provider from its secrets (every one is accepted;
	// the first signs) and options.
	New func(secrets []string, o Options) (Provider, error)
	// Secrets describes what HUB_<NAME>_SECRETS holds, for the
	// configuration's help; empty when the provider has no such variable
	// (Standard Webhooks providers are mounted by name through
	// HUB_STANDARD_PROVIDERS).
	Secrets string
	// DevSecret is the public development secret `hub dev` and `hub send`
	// use when none is configured; never for production.
	DevSecret string
}

// Registry returns every built-in provider, one line each, in the order
// of the configuration's help.
func Registry() []Spec {
	return []Spec{
		{"paddle", build(NewPaddle), "Paddle endpoint secrets (pdl_ntfset_...), comma-separated; several during a rotation",
			"pdl_ntfset_01hookhubdev0000000000000000_DevOnlyNotASecret000000000"},
		{"clerk", build(NewClerk), "Clerk (Svix) signing secrets (whsec_...), comma-separated; several during a rotation",
			"whsec_aG9va2h1Yi1kZXZlbG9wbWVudC1vbmx5LWtleSE="},
		{"stripe", build(NewStripe), "Stripe endpoint secrets (whsec_..., used whole), comma-separated",
			"whsec_hookhub_development_only_not_a_secret"},
		{"github", build(NewGitHub), "GitHub webhook secrets, comma-separated (try old and new during a rotation)",
			"hookhub-development-only-not-a-secret"},
		{"shopify", build(NewShopify), "Shopify app client secrets, comma-separated",
			"hookhub-development-only-not-a-secret"},
		{"twilio", build(NewTwilio), "Twilio Auth Tokens (primary first, the secondary while promoting), comma-separated; needs HUB_PUBLIC_URL",
			"hookhubdevelopmentonlynotasecret"},
		{StandardWebhooksName, build(NewStandardWebhooks), "", ""},
	}
}

// build turns a constructor into a Spec's New, so that a failing
// constructor yields a nil Provider rather than a typed nil.
func build[P Provider](newP func([]string, Options) (P, error)) func([]string, Options) (Provider, error) {
	return func(secrets []string, o Options) (Provider, error) {
		p, err := newP(secrets, o)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}

// lookup returns the Spec registered as name.
func lookup(name string) (Spec, bool) {
	for _, s := range Registry() {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// New returns the provider registered as name, configured with secrets
// (every one is accepted; the first signs) and o. An unregistered name
// yields an error wrapping ErrUnknownProvider. A Standard Webhooks
// provider is mounted under an operator's name with
// New(StandardWebhooksName, secrets, Options{Name: name}). Every built-in
// provider also implements Signer.
func New(name string, secrets []string, o Options) (Provider, error) {
	s, ok := lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownProvider, name, Names())
	}
	return s.New(secrets, o)
}

// Names returns the names of the registered providers, sorted.
func Names() []string {
	var names []string
	for _, s := range Registry() {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names
}

// ValidName reports whether name can name a provider: 1 to 32 bytes of
// [a-z0-9_-], the first a letter or digit. Such a name is a path segment
// needing no escaping, a NATS subject token, and fits the archive's
// VARCHAR(32).
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 32 || name[0] == '-' || name[0] == '_' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}
