package main

import (
	"os"
	"testing"

	"github.com/hookhub/hookhub/internal/hubtest"
)

// TestMain clears the developer's HUB_* variables (and the subscribers'
// that hub dev reads): the commands the tests run, in-process or as a
// child process, see only what a test sets with t.Setenv.
func TestMain(m *testing.M) {
	hubtest.ClearEnv("EMAIL_", "CREDITS_", "DOWNGRADE_")
	os.Exit(m.Run())
}
