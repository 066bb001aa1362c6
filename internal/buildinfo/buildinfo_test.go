package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	const rev = "abc1234def5678abc1234def5678abc1234def56"
	stamped := func(version string, modified bool) *debug.BuildInfo {
		m := "false"
		if modified {
			m = "true"
		}
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/hookhub/hookhub", Version: version},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: m}}}
	}
	for _, c := range []struct {
		name, version, commit string
		bi                    *debug.BuildInfo
		want                  string
	}{
		{"ldflags", "v0.1.0", rev, stamped("(devel)", false), "v0.1.0 (commit abc1234, go1.26.8)"},
		{"ldflags without v", "0.1.0", "", nil, "v0.1.0 ("},
		{"ldflags commit elsewhere", "v0.1.0", "0123456789", stamped("(devel)", true), "v0.1.0 (commit 0123456, go1.26.8)"},
		{"go install at a tag", "dev", "", stamped("v0.1.0", false), "v0.1.0 (commit abc1234, go1.26.8)"},
		{"checkout with changes", "dev", "", stamped("(devel)", true), "dev (commit abc1234-dirty, go1.26.8)"},
		{"nothing known", "dev", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "dev (go1.26.8)"},
		{"empty version", "", "", nil, "dev ("},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := resolve(c.version, c.commit, c.bi).String()
			require.True(t, strings.HasPrefix(got, c.want), got)
		})
	}
}

func TestReadInTests(t *testing.T) {
	t.Parallel()
	info := Read()
	require.NotEmpty(t, info.Version)
	require.NotEmpty(t, info.GoVersion)
	require.Equal(t, "hookhub/"+info.Version+" (+backfill)", UserAgent("backfill"))
}
