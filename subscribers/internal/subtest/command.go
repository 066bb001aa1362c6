package subtest

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
)

// CommandMain is the TestMain of a service command's tests. In the child
// process a test starts (hubtest.StartMain) it runs main; in the test
// process it clears the developer's <prefix>_* variables, which must not
// configure the processes the tests start (each test passes its own), and
// runs the tests.
func CommandMain(m *testing.M, main func(), prefix string) {
	hubtest.RunMainIfChild(main)
	hubtest.ClearEnv(prefix + "_")
	os.Exit(m.Run())
}

// Usage is one run of a command that exits at once: its arguments and
// variables, the exit code it must give and texts its output must hold.
// (An alias of a struct literal type, so that tables list it unkeyed.)
type Usage = struct {
	Name     string
	Args     []string
	Env      []string
	WantCode int
	Want     []string
}

// RunUsage runs each case as a parallel subtest of a parallel test.
func RunUsage(t *testing.T, cases []Usage) {
	t.Helper()
	t.Parallel()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			p := hubtest.StartMain(t, c.Env, c.Args...)
			require.Equal(t, c.WantCode, p.ExitCode(t), p.Output())
			for _, w := range c.Want {
				require.Contains(t, p.Output(), w)
			}
		})
	}
}
