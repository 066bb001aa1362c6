package hub_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// importRule forbids packages under from (and their tests) to import
// packages under any of to: paths relative to the module root, each naming
// itself and everything below it.
type importRule struct {
	from string
	to   []string
	why  string
}

// importRules are the directions imports must not run in: the module's
// shared infrastructure serves the hub and the subscribers alike, and the
// subscriber side, the contract's other end, builds and tests without the
// hub.
var importRules = []importRule{
	{"internal", []string{"hub", "migrations"}, "internal/ is shared by the hub and the subscribers: what is the hub's own lives under hub/"},
	{"subscribers", []string{"hub"}, "the subscriber side depends on the contract (schema), never on the hub"},
	{"schema", []string{"hub", "subscribers"}, "the contract depends on neither of its ends"},
}

// importAllowed are imports the rules forbid that are let through for now,
// as "from -> to".
var importAllowed = map[string]bool{}

// under reports whether path is dir or below it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// importViolations returns, for each package (relative path) and what it
// and its tests import (module paths relative to the root; others are
// left out by the caller), each import a rule forbids.
func importViolations(imports map[string][]string) []string {
	var out []string
	for pkg, deps := range imports {
		for _, r := range importRules {
			if !under(pkg, r.from) {
				continue
			}
			for _, dep := range deps {
				for _, to := range r.to {
					if under(dep, to) && !importAllowed[pkg+" -> "+dep] {
						out = append(out, pkg+" imports "+dep+": "+r.why)
					}
				}
			}
		}
	}
	return out
}

// moduleImports lists every package of the module with what it, its
// internal tests and its external tests import from the module.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	require.NoError(t, err, "the go command lists the module's imports")
	cmd := exec.Command(goCmd, "list", "-f",
		`{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list ./...")
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, _ := rel(fields[0])
		imports[pkg] = []string{}
		for _, f := range fields[1:] {
			if dep, ok := rel(f); ok && dep != pkg {
				imports[pkg] = append(imports[pkg], dep)
			}
		}
	}
	return imports
}

// Imports run one way: internal/ imports nothing of hub/ or migrations,
// the subscriber side (its tests and test scaffolding included) nothing of
// hub/, and the contract (schema) neither end.
func TestImportsRunOneWay(t *testing.T) {
	imports := moduleImports(t)
	require.Contains(t, imports, "internal/hubtest", "go list found the module's packages")
	if v := importViolations(imports); len(v) > 0 {
		slices.Sort(v)
		t.Fatalf("imports against the rules:\n%s", strings.Join(v, "\n"))
	}
}

// Each rule catches what it forbids, in code and in tests, and lets the
// allowed directions through.
func TestImportRulesCatchViolations(t *testing.T) {
	for _, tc := range []struct {
		pkg, dep string
		caught   bool
	}{
		{"internal/hubhttp", "hub", true},
		{"internal/tracing", "hub/service/testhub", true},
		{"internal/pgurl", "migrations", true},
		{"internal/hubtest", "migrations", true},
		{"subscribers/internal/subtest", "hub/provider/samples", true},
		{"subscribers/destination/internal/receivertest", "hub/provider", true},
		{"subscribers/destination", "hub/ops", true},
		{"subscribers", "hub", true},
		{"schema", "subscribers/subscriber", true},
		{"subscribers/destination", "internal/hubtest", false},
		{"subscribers/subscriber", "schema", false},
		{"hub/ops", "subscribers/subscriber", false},
		{"hub/server", "internal/hubhttp", false},
		{"hubx", "hub", false},
		{"internal/hubtestx", "migrations", true},
	} {
		got := importViolations(map[string][]string{tc.pkg: {tc.dep}})
		require.Equal(t, tc.caught, len(got) == 1, "%s -> %s: %v", tc.pkg, tc.dep, got)
	}
}
