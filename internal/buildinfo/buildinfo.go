// Package buildinfo holds the version a hookhub binary was built as: what
// `hub version` prints and what the hub's HTTP clients send in their
// User-Agent.
package buildinfo

// Version is set at build time with
// -ldflags "-X github.com/hookhub/hookhub/internal/buildinfo.Version=...";
// "dev" otherwise. It is never assigned at run time.
var Version = "dev"

// UserAgent is the User-Agent of the hub's requests for purpose
// ("backfill"): hookhub/<version> (+<purpose>).
func UserAgent(purpose string) string {
	return "hookhub/" + Version + " (+" + purpose + ")"
}
