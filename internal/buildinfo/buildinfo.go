// Package buildinfo holds the version a hookhub binary was built as: what
// `hub version` prints and what the hub's HTTP clients send in their
// User-Agent.
//
// A release build sets the version from its git tag (docs/releasing.md):
//
//	go build -ldflags "-X github.com/hookhub/hookhub/internal/buildinfo.Version=v0.1.0 \
//	    -X github.com/hookhub/hookhub/internal/buildinfo.Commit=$(git rev-parse HEAD)" ./hub/cmd/hub
//
// Without -ldflags, Read falls back on what the Go toolchain records in the
// binary: the main module's version (`go install ...@v0.1.0`) and the VCS
// revision (a build inside a git checkout).
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is set at build time with
// -ldflags "-X github.com/hookhub/hookhub/internal/buildinfo.Version=v0.1.0"
// (the release's git tag); "dev" otherwise. It is never assigned at run
// time. Read resolves the version a binary reports.
var Version = "dev"

// Commit is the git commit the binary was built from, set at build time
// with -ldflags "-X github.com/hookhub/hookhub/internal/buildinfo.Commit=..."
// where the Go toolchain cannot stamp it (a build without .git, such as
// the Docker image's); empty otherwise. It is never assigned at run time.
var Commit = ""

// Info is what a binary knows about its build.
type Info struct {
	// Version is the release (a git tag such as v0.1.0), or "dev".
	Version string `json:"version"`
	// Commit is the full git commit hash, empty when unknown.
	Commit string `json:"commit,omitempty"`
	// Modified reports a build from a working tree with uncommitted
	// changes (as the Go toolchain recorded it).
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"go"`
}

// Read returns the binary's build information: Version and Commit when set
// with -ldflags, else the main module's version and VCS revision recorded
// by the Go toolchain, else "dev" and no commit.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Version, Commit, bi)
}

// resolve is Read for given link-time values and toolchain build info (nil
// when the binary has none).
func resolve(version, commit string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Commit: commit, GoVersion: runtime.Version()}
	if bi == nil {
		return normal(info)
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	if (info.Version == "" || info.Version == "dev") && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	var revision string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	if info.Commit == "" {
		info.Commit = revision
	} else if revision != "" && revision != info.Commit {
		info.Modified = false // the stamp describes another tree than the one named
	}
	return normal(info)
}

// normal gives a version without a leading "v" one ("0.1.0" -> "v0.1.0",
// the form of the git tag) and an empty version "dev".
func normal(info Info) Info {
	switch {
	case info.Version == "":
		info.Version = "dev"
	case info.Version[0] >= '0' && info.Version[0] <= '9':
		info.Version = "v" + info.Version
	}
	return info
}

// ShortCommit is the commit's first 7 characters (git's short form), or
// the whole of a shorter one.
func (i Info) ShortCommit() string {
	if len(i.Commit) > 7 {
		return i.Commit[:7]
	}
	return i.Commit
}

// String is the one-line form `hub version` prints after the program's
// name: "v0.1.0 (commit abc1234, go1.26.8)"; "-dirty" follows a commit
// built with uncommitted changes, and a build without a known commit says
// only the Go version.
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	b.WriteString(" (")
	if i.Commit != "" {
		b.WriteString("commit ")
		b.WriteString(i.ShortCommit())
		if i.Modified {
			b.WriteString("-dirty")
		}
		b.WriteString(", ")
	}
	b.WriteString(i.GoVersion)
	b.WriteString(")")
	return b.String()
}

// UserAgent is the User-Agent of the hub's requests for purpose
// ("backfill"): hookhub/<version> (+<purpose>).
func UserAgent(purpose string) string {
	return "hookhub/" + Read().Version + " (+" + purpose + ")"
}
