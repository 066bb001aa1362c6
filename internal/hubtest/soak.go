package hubtest

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// SoakEnv, set to 1, runs the soak tests (Soak) and the long form of the
// tests that have one (Scale).
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
	if soaking(t) {
		return
	}
	t.Skipf("a soak test: run it with %s=1 or -run %s", SoakEnv, t.Name())
}

// Scale returns how many times a test with a short and a long form repeats
// its probe (requests, rounds, events): long when HOOKHUB_SOAK is 1, short
// otherwise (also under -run, so that a test times the same alone as in
// the suite). The short form proves the same
// property on fewer tries, inside the default suite's time budget; the
// long form hunts the rare interleaving on purpose.
func Scale(t testing.TB, short, long int) int {
	t.Helper()
	if os.Getenv(SoakEnv) == "1" {
		t.Logf("long form: %d tries (short form %d)", long, short)
		return long
	}
	return short
}

// soaking reports whether HOOKHUB_SOAK is 1 or -run names t.
func soaking(t testing.TB) bool {
	if os.Getenv(SoakEnv) == "1" {
		return true
	}
	f := flag.Lookup("test.run")
	return f != nil && strings.Contains(f.Value.String(), t.Name())
}
