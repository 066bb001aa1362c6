package hubtest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ProcTimeout bounds the waits on a child process: generous, the machine
// may be loaded.
const ProcTimeout = 60 * time.Second

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

// Proc is a program running in a child process for one test: the one way
// tests run a child process, whether the test binary as a command's main
// (StartMain) or a binary built by Build (StartBinary).
type Proc struct {
	cmd  *exec.Cmd
	out  *SyncBuffer
	done chan struct{}
	err  error
}

// StartMain starts the test binary as the command (see RunMainIfChild)
// with args and the extra environment variables env; it is killed if
// still running when t ends.
func StartMain(t testing.TB, env []string, args ...string) *Proc {
	t.Helper()
	return StartBinary(t, os.Args[0], append([]string{execMainEnv + "=1"}, env...), args...)
}

// StartBinary starts bin with args, the test's environment and the extra
// variables env (the last value of a variable wins); it is killed if still
// running when t ends, and its output is logged if t failed.
func StartBinary(t testing.TB, bin string, env []string, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	p := &Proc{cmd: cmd, out: &SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("hubtest: start %s: %v", bin, err)
	}
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

// builds holds one go build per package and test binary; buildDirs the
// directories they were built in.
var builds, buildDirs sync.Map // package path → func() (string, error); dir → true

// RemoveBuilds removes every binary Build made. Call it from TestMain once
// the tests ran: a binary is shared by every test of the test binary, so
// no test may remove it.
func RemoveBuilds() {
	builds.Range(func(_, f any) bool {
		_, _ = f.(func() (string, error))() // a build BuildEarly started ends first
		return true
	})
	buildDirs.Range(func(dir, _ any) bool {
		_ = os.RemoveAll(dir.(string))
		return true
	})
}

// Build compiles the main package pkg (a path as `go build` takes it,
// relative to the test's directory) once per test binary run, and returns
// the binary's path: for a process whose memory or speed the test
// measures, which the test binary (StartMain, built with the test's flags
// such as -race) would distort.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	bin, err := buildOnce(pkg)()
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	return bin
}

// BuildEarly starts, in the background, the build Build(pkg) will wait
// for, when the test binary runs every test of its package (no -run, no
// -short), as CI does: the build then overlaps the tests that run before
// the first that needs the binary. Call it from TestMain, with
// RemoveBuilds after m.Run; Build reports a failed build.
func BuildEarly(pkg string) {
	if !flag.Parsed() {
		flag.Parse()
	}
	if testing.Short() || flag.Lookup("test.run").Value.String() != "" {
		return
	}
	go func() { _, _ = buildOnce(pkg)() }()
}

// buildOnce returns pkg's build, made once per test binary run.
func buildOnce(pkg string) func() (string, error) {
	f, _ := builds.LoadOrStore(pkg, sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "hookhub-bin-")
		if err != nil {
			return "", err
		}
		buildDirs.Store(dir, true)
		abs, err := filepath.Abs(pkg)
		if err != nil {
			return "", err
		}
		bin := filepath.Join(dir, filepath.Base(abs))
		out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
		return bin, nil
	}))
	return f.(func() (string, error))
}

// Output is what the process wrote to stdout and stderr so far.
func (p *Proc) Output() string { return p.out.String() }

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// WaitOutput waits until the output contains s.
func (p *Proc) WaitOutput(t testing.TB, s string) {
	t.Helper()
	deadline := time.Now().Add(ProcTimeout)
	for !strings.Contains(p.Output(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %q in the output; output:\n%s", s, p.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
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

// Signal sends sig to the process.
func (p *Proc) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("hubtest: signal %v: %v", sig, err)
	}
}

// Terminate sends SIGTERM.
func (p *Proc) Terminate(t testing.TB) {
	t.Helper()
	p.Signal(t, syscall.SIGTERM)
}

// ExitCode waits for the process to exit and returns its exit code (-1
// when a signal killed it).
func (p *Proc) ExitCode(t testing.TB) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(ProcTimeout):
		t.Fatalf("process did not exit; output:\n%s", p.Output())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("hubtest: wait: %v", p.err)
	}
	return 0
}
