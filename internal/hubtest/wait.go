package hubtest

import (
	"errors"
	"testing"
	"time"
)

// PollInterval is how often Eventually and Until check their condition.
const PollInterval = 20 * time.Millisecond

// errTimeout is Until's error when timeout passes first.
var errTimeout = errors.New("hubtest: condition not met before the deadline")

// Until calls cond at once and then every PollInterval until it returns
// true (nil) or timeout passes (an error). cond runs on the calling
// goroutine, so it may call t.Fatal. It is how a test waits for something
// to happen when nothing signals it: against a deadline, never a fixed
// sleep.
func Until(timeout time.Duration, cond func() bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			if cond() {
				return nil
			}
			return errTimeout
		case <-tick.C:
		}
	}
	return nil
}

// Eventually is Until for a test: past timeout it fails t, saying what it
// waited for.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := Until(timeout, cond); err != nil {
		t.Fatalf("timed out after %s waiting until %s", timeout, what)
	}
}
