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
	// PublicURL is the hub's public base URL (HUB_PUBLIC_URL), e.g.
	// "https://hub.example.com". Twilio signs the URL it calls, so it
	// requires one; see TwilioConfig.
	PublicURL string
	// TwilioTypes, when not empty, are the only event types Twilio
	// deliveries may name (HUB_TWILIO_TYPES); see TwilioConfig.Types.
	TwilioTypes []string
}

// factory builds a provider from its secrets and options.
type factory func(secrets []string, o Options) (Provider, error)

// providers registers every built-in provider: one line each.
var providers = map[string]factory{
	"paddle":             adapt(NewPaddle),
	"clerk":              adapt(NewClerk),
	"stripe":             adapt(NewStripe),
	"github":             untimed(NewGitHub),
	"shopify":            untimed(NewShopify),
	StandardWebhooksName: adapt(newDefaultStandardWebhooks),
	"twilio":             newTwilioFactory,
}

// provide turns a typed constructor's result into a Provider, so that a
// failing constructor yields a nil Provider rather than a typed nil.
func provide[P Provider](p P, err error) (Provider, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}

// adapt turns a constructor taking secrets and a tolerance into a factory.
func adapt[P Provider](newP func([]string, time.Duration) (P, error)) factory {
	return func(secrets []string, o Options) (Provider, error) { return provide(newP(secrets, o.Tolerance)) }
}

// untimed turns a constructor taking only secrets (a scheme without a
// signed timestamp) into a factory.
func untimed[P Provider](newP func([]string) (P, error)) factory {
	return func(secrets []string, _ Options) (Provider, error) { return provide(newP(secrets)) }
}

// New returns the provider registered as name, configured with secrets
// (every one is accepted; the first signs) and a timestamp tolerance (0
// means the provider's default; schemes without a signed timestamp ignore
// it). It is NewWithOptions without a public URL, so it cannot build
// Twilio. An unregistered name yields an error wrapping
// ErrUnknownProvider. Every built-in provider also implements Sender.
func New(name string, secrets []string, tolerance time.Duration) (Provider, error) {
	return NewWithOptions(name, secrets, Options{Tolerance: tolerance})
}

// NewWithOptions returns the provider registered as name, configured with
// secrets (every one is accepted; the first signs) and o. An unregistered
// name yields an error wrapping ErrUnknownProvider.
func NewWithOptions(name string, secrets []string, o Options) (Provider, error) {
	f, ok := providers[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownProvider, name, Names())
	}
	return f(secrets, o)
}

// NewStandard returns a Standard Webhooks provider mounted as name, an
// operator's choice (HUB_STANDARD_PROVIDERS=resend,acme builds "resend"
// and "acme"). It fails when name is not a valid provider name or is the
// name of another built-in provider, and otherwise as NewStandardWebhooks.
func NewStandard(name string, secrets []string, tolerance time.Duration) (Provider, error) {
	if _, builtin := providers[name]; builtin && name != StandardWebhooksName {
		return nil, fmt.Errorf("standard webhooks: %q is the name of a built-in provider", name)
	}
	return provide(NewStandardWebhooks(name, secrets, tolerance))
}

// Names returns the names of the registered providers, sorted.
func Names() []string {
	names := make([]string, 0, len(providers))
	for name := range providers {
		names = append(names, name)
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
