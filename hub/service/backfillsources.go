package service

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/hookhub/hookhub/hub/backfill"
)

// The backfill sources' configuration, derived from the backfill package's
// registry (backfill.Sources): each setting of a source is the variable
// HUB_<PROVIDER>_<KEY> (BackfillVar).

// ErrNoBackfillCredentials is returned for a provider whose API credentials
// are not configured.
var ErrNoBackfillCredentials = errors.New("no API credentials")

// BackfillVar is the variable holding the setting key of the backfill
// source of provider: HUB_<PROVIDER>_<KEY>, both upper-cased with '-' as
// '_' (HUB_STRIPE_API_KEY, HUB_GITHUB_HOOK).
func BackfillVar(provider, key string) string {
	up := func(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }
	return EnvPrefix + "_" + up(provider) + "_" + up(key)
}

// BackfillNames names the settings of provider's backfill source by their
// variables (BackfillVar), and backfill.SettingInterval by
// HUB_BACKFILL_INTERVAL: what the source's errors and descriptions say.
func BackfillNames(provider string) backfill.Names {
	names := backfill.Names{backfill.SettingInterval: EnvPrefix + "_BACKFILL_INTERVAL"}
	if src, ok := backfill.LookupSource(provider); ok {
		for _, s := range src.Settings {
			names[s.Key] = BackfillVar(provider, s.Key)
		}
	}
	return names
}

// BackfillSetting returns the setting key of provider's backfill source
// (its variable's value, BackfillVar), or the setting's default when
// unset or empty.
func (c *BackfillConfig) BackfillSetting(provider, key string) string {
	if v := c.BackfillSettings[BackfillVar(provider, key)]; v != "" {
		return v
	}
	if src, ok := backfill.LookupSource(provider); ok {
		for _, s := range src.Settings {
			if s.Key == key {
				return s.Default
			}
		}
	}
	return ""
}

// SetBackfillSetting sets the setting key of provider's backfill source,
// as its variable would. The settings are copied first: a copy of the
// Config keeps its own.
func (c *BackfillConfig) SetBackfillSetting(provider, key, value string) {
	settings := maps.Clone(c.BackfillSettings)
	if settings == nil {
		settings = map[string]string{}
	}
	settings[BackfillVar(provider, key)] = value
	c.BackfillSettings = settings
}

// sourceSettings returns the settings of src by key, as configured (an
// unset one is absent: the source applies its default).
func (c *BackfillConfig) sourceSettings(src backfill.SourceSpec) map[string]string {
	out := map[string]string{}
	for _, s := range src.Settings {
		if v, ok := c.BackfillSettings[BackfillVar(src.Provider, s.Key)]; ok {
			out[s.Key] = v
		}
	}
	return out
}

// BackfillSecrets are the backfill credentials (HUB_STRIPE_API_KEY,
// HUB_PADDLE_API_KEY, HUB_GITHUB_TOKEN: each source's credential settings)
// that the backfill's logger hides (redact.Handler) in whatever it logs.
func (c *BackfillConfig) BackfillSecrets() []string {
	var out []string
	for _, src := range backfill.Sources() {
		for _, s := range src.Settings {
			if s.Credential {
				out = append(out, strings.TrimSpace(c.BackfillSettings[BackfillVar(src.Provider, s.Key)]))
			}
		}
	}
	return out
}

// BackfillCredentialVars lists the variables that give each backfill
// source its credentials, in the registry's order: the required settings
// of a source joined by " with " (HUB_GITHUB_TOKEN with HUB_GITHUB_HOOK),
// the sources by ", ".
func BackfillCredentialVars() string {
	var out []string
	for _, src := range backfill.Sources() {
		out = append(out, strings.Join(requiredVars(src), " with "))
	}
	return strings.Join(out, ", ")
}

// backfillCredentialVarList returns the variables of every backfill
// source's credentials, in the registry's order.
func backfillCredentialVarList() []string {
	var out []string
	for _, src := range backfill.Sources() {
		for _, s := range src.Settings {
			if s.Credential {
				out = append(out, BackfillVar(src.Provider, s.Key))
			}
		}
	}
	return out
}

// requiredVars returns the variables of src's required settings.
func requiredVars(src backfill.SourceSpec) []string {
	var out []string
	for _, s := range src.Settings {
		if s.Required {
			out = append(out, BackfillVar(src.Provider, s.Key))
		}
	}
	return out
}

// BackfillSource builds the backfill source of provider name from the
// configuration, with client for its requests (nil: a default client). It
// fails naming the variable to set when the credentials are missing, or
// the provider's webhook secrets (the hub would not publish its events).
func (c *Config) BackfillSource(name string, client *http.Client) (backfill.Source, error) {
	src, ok := backfill.LookupSource(name)
	if !ok {
		return nil, fmt.Errorf("no backfill for provider %q (want %s)", name, strings.Join(backfill.Providers(), ", "))
	}
	settings := c.sourceSettings(src)
	if !src.Configured(settings) {
		return nil, fmt.Errorf("%w for %s: set %s", ErrNoBackfillCredentials, name, strings.Join(requiredVars(src), " and "))
	}
	if len(c.ProviderSecrets()[name]) == 0 {
		return nil, fmt.Errorf("%s is not configured (set %s): the hub would not publish its events", name, secretsVarOf(name, c))
	}
	return src.New(backfill.SourceOptions{Settings: settings, Names: BackfillNames(name), Client: client})
}

// BackfillSources builds the source of every provider with API
// credentials, sorted by name, each with a client of its own from
// newClient (nil: default clients), so that one provider's requests and
// rate limit never hold up another's.
func (c *Config) BackfillSources(newClient func() *http.Client) ([]backfill.Source, error) {
	var out []backfill.Source
	for _, name := range backfill.Providers() {
		var client *http.Client
		if newClient != nil {
			client = newClient()
		}
		src, err := c.BackfillSource(name, client)
		if errors.Is(err, ErrNoBackfillCredentials) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	return out, nil
}
