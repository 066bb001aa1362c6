package backfill

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
)

// The keys of the sources' settings (Setting.Key).
const (
	SettingAPIKey = "api_key"
	SettingAPIURL = "api_url"
	SettingToken  = "token"
	SettingHook   = "hook"
	// SettingInterval is no source's setting: it names, in descriptions,
	// the caller's setting that runs backfills periodically.
	SettingInterval = "interval"
)

// Setting is one value a source is configured from: its credentials, its
// API's base URL, what to list. The package never reads settings itself:
// the caller reads each from its own configuration (hub/service derives
// an environment variable from the source's provider and the key) and
// names it so in errors (SourceOptions.Names).
type Setting struct {
	// Key names the setting within its source (SettingAPIKey, ...).
	Key string
	// Default is what an empty setting means ("" for none).
	Default string
	// Desc says what the setting holds, for the configuration's help; it
	// names a setting as {key}, which Describe replaces with its name.
	Desc string
	// Credential marks the credentials: the source is configured when
	// every one is set (not blank), and they are never logged (the caller
	// hides them in what it logs and prints).
	Credential bool
	// Required marks a setting the source cannot do without: setting some
	// of a source's required settings but not all is a mistake.
	Required bool
	// Why, for a required setting, is what it is for, said when it is
	// missing ("" says nothing more).
	Why string
	// URL marks an API base URL, checked with CheckAPIURL.
	URL bool
}

// Describe returns s.Desc with each {key} replaced by the setting's name
// in names (left as is when names has none).
func (s Setting) Describe(names Names) string {
	var pairs []string
	for key, name := range names {
		pairs = append(pairs, "{"+key+"}", name)
	}
	return strings.NewReplacer(pairs...).Replace(s.Desc)
}

// SourceSpec is a registered source: the provider it lists, its settings
// and how to build it.
type SourceSpec struct {
	// Provider is the hub's provider name (Source.Provider).
	Provider string
	// Settings are what configures the source, in the configuration's
	// help order.
	Settings []Setting
	// New builds the source from o.
	New func(o SourceOptions) (Source, error)
}

// SourceOptions is what a source is built from.
type SourceOptions struct {
	// Settings holds each setting's value by key; an absent or empty one
	// takes its default.
	Settings map[string]string
	// Names names the settings in errors (see Names).
	Names Names
	// Client sends the requests (default: a client with a 30 s timeout).
	Client *http.Client
}

// Names names a source's settings in its errors, by key: the caller's
// names for them (hub/service: the variables it read them from). A setting
// without a name is named by its key.
type Names map[string]string

// of returns the name of the setting key.
func (n Names) of(key string) string {
	return cmp.Or(n[key], key)
}

// Sources returns every registered source, one line each, in the order of
// the configuration's help. Adding a source is adding its line: the hub
// derives its variables, their help and the command's --provider from it.
func Sources() []SourceSpec {
	return []SourceSpec{
		{"stripe", []Setting{
			{Key: SettingAPIKey, Credential: true, Required: true,
				Desc: "Stripe secret or restricted key (read access to events) for backfill (hub backfill, {interval}); never logged"},
			{Key: SettingAPIURL, URL: true, Default: StripeDefaultBaseURL, Desc: "Stripe API base URL for backfill"},
		}, func(o SourceOptions) (Source, error) {
			return NewStripe(StripeConfig{BaseURL: o.Settings[SettingAPIURL], Key: o.Settings[SettingAPIKey], Client: o.Client, Names: o.Names})
		}},
		{"paddle", []Setting{
			{Key: SettingAPIKey, Credential: true, Required: true, Desc: "Paddle API key (event.read permission) for backfill; never logged"},
			{Key: SettingAPIURL, URL: true, Default: PaddleDefaultBaseURL,
				Desc: "Paddle API base URL for backfill (sandbox: https://sandbox-api.paddle.com)"},
		}, func(o SourceOptions) (Source, error) {
			return NewPaddle(PaddleConfig{BaseURL: o.Settings[SettingAPIURL], Key: o.Settings[SettingAPIKey], Client: o.Client, Names: o.Names})
		}},
		{"github", []Setting{
			{Key: SettingToken, Credential: true, Required: true,
				Desc: "GitHub token that can read the webhook's deliveries ({hook}), for backfill; never logged"},
			{Key: SettingHook, Required: true, Why: "the webhook whose deliveries to backfill (repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID)",
				Desc: "The GitHub webhook to backfill: repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID"},
			{Key: SettingAPIURL, URL: true, Default: GitHubDefaultBaseURL, Desc: "GitHub API base URL for backfill"},
		}, func(o SourceOptions) (Source, error) {
			return NewGitHub(GitHubConfig{BaseURL: o.Settings[SettingAPIURL], Token: o.Settings[SettingToken], Hook: o.Settings[SettingHook],
				Client: o.Client, Names: o.Names})
		}},
	}
}

// LookupSource returns the source registered for provider.
func LookupSource(provider string) (SourceSpec, bool) {
	i := slices.IndexFunc(Sources(), func(s SourceSpec) bool { return s.Provider == provider })
	if i < 0 {
		return SourceSpec{}, false
	}
	return Sources()[i], true
}

// Providers returns the providers a source is registered for, sorted.
func Providers() []string {
	var out []string
	for _, s := range Sources() {
		out = append(out, s.Provider)
	}
	slices.Sort(out)
	return out
}

// Configured reports whether settings (by key) hold every credential of
// the source.
func (s SourceSpec) Configured(settings map[string]string) bool {
	return !slices.ContainsFunc(s.Settings, func(set Setting) bool {
		return set.Credential && strings.TrimSpace(settings[set.Key]) == ""
	})
}
