package chaos

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// nodeEnv, set to 1, makes the test binary a NATS node (RunNode): the
// tests' clusters run the test binary itself as their nodes' executable.
const nodeEnv = "HOOKHUB_CHAOS_NODE"

func TestMain(m *testing.M) {
	if os.Getenv(nodeEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		err := RunNode(ctx, os.Args[1:], os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
