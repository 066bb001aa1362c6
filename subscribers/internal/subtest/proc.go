package subtest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const execMainEnv = "HOOKHUB_SUBTEST_EXEC_MAIN"

// RunMainIfChild runs main, and exits, when the test binary was started by
// StartMain: call it first in TestMain. This runs a command's real main in
// a real process without building it separately.
func RunMainIfChild(main func()) {
	if os.Getenv(execMainEnv) == "1" {
		main()
		os.Exit(0)
	}
}

// Proc is a command's main running in a child process.
type Proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

// StartMain starts the test binary as the command (see RunMainIfChild)
// with args and the extra environment variables env; it is killed if
// still running when t ends.
func StartMain(t testing.TB, env []string, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), execMainEnv+"=1"), env...)
	p := &Proc{cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("process output:\n%s", p.Output())
		}
	})
	return p
}

// Output is what the process wrote to stdout and stderr so far.
func (p *Proc) Output() string { return p.out.String() }

// WaitOutput waits until the output contains s.
func (p *Proc) WaitOutput(t testing.TB, s string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(p.Output(), s) }, Timeout, Tick, "waiting for %q in the output", s)
}

// Running reports whether the process has not exited.
func (p *Proc) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Terminate sends SIGTERM.
func (p *Proc) Terminate(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
}

// ExitCode waits for the process to exit and returns its exit code.
func (p *Proc) ExitCode(t testing.TB) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(Timeout):
		t.Fatalf("process did not exit; output:\n%s", p.Output())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, p.err)
	return 0
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

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
