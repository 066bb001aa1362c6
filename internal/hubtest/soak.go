package hubtest

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// SoakEnv, set to 1, runs the soak tests (Soak).
const SoakEnv = "HOOKHUB_SOAK"

// Soak skips the calling soak test (a load held for a while, a flood of
// connections, a memory ceiling measured on a process, a benchmark run end
// to end on the built binaries) unless HOOKHUB_SOAK
// is 1 or -run names the test, and in -short mode: the default run stays
// fast and does not depend on an idle machine. Run them on purpose, alone
// on the machine.
func Soak(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("a soak test (-short)")
	}
	if os.Getenv(SoakEnv) == "1" {
		return
	}
	if f := flag.Lookup("test.run"); f != nil && strings.Contains(f.Value.String(), t.Name()) {
		return
	}
	t.Skipf("a soak test: run it with %s=1 or -run %s", SoakEnv, t.Name())
}
