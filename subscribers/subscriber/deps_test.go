package subscriber_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBinariesDoNotEmbedHubSQL checks that no subscriber binary (main
// package under subscribers/), nor this library, depends on the hub's migrations package: subscribers migrate
// with internal/migrate, which embeds nothing, so their binaries do not
// carry the hub's SQL.
func TestBinariesDoNotEmbedHubSQL(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(goBin, "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`,
		"github.com/hookhub/hookhub/subscribers/...").CombinedOutput()
	require.NoError(t, err, "%s", out)
	binaries := strings.Fields(string(out))
	require.Contains(t, binaries, "github.com/hookhub/hookhub/subscribers/credits/cmd/credits")
	out, err = exec.Command(goBin, append([]string{"list", "-deps", "github.com/hookhub/hookhub/subscribers/subscriber"}, binaries...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/hookhub/hookhub/internal/migrate", "the list is the binaries' dependencies")
	require.NotContains(t, deps, "github.com/hookhub/hookhub/migrations")
}
