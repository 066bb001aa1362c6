package backfill_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/backfill"
)

// Every registered source is built from its settings alone, names them
// as the caller says in its errors, and has a credential.
func TestSourceRegistry(t *testing.T) {
	require.True(t, slices.IsSorted(backfill.Providers()))
	for _, spec := range backfill.Sources() {
		t.Run(spec.Provider, func(t *testing.T) {
			settings, names := map[string]string{}, backfill.Names{}
			credentials := 0
			for _, s := range spec.Settings {
				names[s.Key] = "THE_" + s.Key
				require.NotEmpty(t, s.Desc, s.Key)
				if s.Credential {
					credentials++
				}
				switch s.Key {
				case backfill.SettingHook:
					settings[s.Key] = "orgs/o/hooks/1"
				case backfill.SettingAPIURL:
				default:
					settings[s.Key] = "secret_value"
				}
			}
			require.Positive(t, credentials)
			require.True(t, spec.Configured(settings))
			src, err := spec.New(backfill.SourceOptions{Settings: settings, Names: names})
			require.NoError(t, err)
			require.Equal(t, spec.Provider, src.Provider())

			settings[backfill.SettingAPIURL] = "http://api.example.com"
			_, err = spec.New(backfill.SourceOptions{Settings: settings, Names: names})
			require.ErrorContains(t, err, "THE_"+backfill.SettingAPIURL)
		})
	}
	spec, ok := backfill.LookupSource("github")
	require.True(t, ok)
	require.Equal(t, "GitHub token that can read the webhook's deliveries (HOOK), for backfill; never logged",
		spec.Settings[0].Describe(backfill.Names{backfill.SettingHook: "HOOK"}))
	_, ok = backfill.LookupSource("clerk")
	require.False(t, ok)
}
