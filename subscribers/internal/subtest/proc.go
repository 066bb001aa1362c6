package subtest

import (
	"testing"

	"github.com/hookhub/hookhub/internal/hubtest"
)

// ServiceEnv returns the variables that point a service (prefix, e.g.
// "CREDITS") at env, with an ephemeral HTTP port and text logs.
func (e *Env) ServiceEnv(prefix string) []string {
	return []string{
		prefix + "_DATABASE_URL=" + e.DBURL,
		prefix + "_NATS_URL=" + e.NATS.URL(),
		prefix + "_STREAM=" + Stream,
		prefix + "_HTTP_ADDR=127.0.0.1:0",
		prefix + "_LOG_FORMAT=text",
		prefix + "_LOG_LEVEL=info",
	}
}

// StartService starts the service command under test (hubtest.StartMain)
// on e, with ServiceEnv(prefix) and the extra variables.
func (e *Env) StartService(t testing.TB, prefix string, extra ...string) *hubtest.Proc {
	t.Helper()
	return hubtest.StartMain(t, append(e.ServiceEnv(prefix), extra...))
}
