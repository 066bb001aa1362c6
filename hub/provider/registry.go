package provider

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrUnknownProvider is returned by New for a name no provider registers.
var ErrUnknownProvider = errors.New("unknown provider")

// factory builds a provider from its secrets and timestamp tolerance.
type factory func(secrets []string, tolerance time.Duration) (Provider, error)

// providers registers every built-in provider: one line each.
var providers = map[string]factory{
	"paddle": adapt(NewPaddle),
	"clerk":  adapt(NewClerk),
}

// adapt turns a typed constructor into a factory, so that a failing
// constructor yields a nil Provider rather than a typed nil.
func adapt[P Provider](newP func([]string, time.Duration) (P, error)) factory {
	return func(secrets []string, tolerance time.Duration) (Provider, error) {
		p, err := newP(secrets, tolerance)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}

// New returns the provider registered as name, configured with secrets
// (every one is accepted; the first signs) and a timestamp tolerance (0
// means the provider's default). An unregistered name yields an error
// wrapping ErrUnknownProvider. Every built-in provider also implements
// Sender.
func New(name string, secrets []string, tolerance time.Duration) (Provider, error) {
	f, ok := providers[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownProvider, name, Names())
	}
	return f(secrets, tolerance)
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
