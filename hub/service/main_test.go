package service_test

import (
	"os"
	"testing"

	"github.com/hookhub/hookhub/internal/hubtest"
)

// TestMain clears the developer's HUB_* variables: the tests that load the
// configuration (LoadConfig, envconfig) set what they need with t.Setenv.
func TestMain(m *testing.M) {
	hubtest.ClearEnv()
	os.Exit(m.Run())
}
