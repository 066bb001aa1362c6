package hubtest

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
)

// Standalone is a testing.TB for code that runs outside a test but needs
// this package's components: a runnable Example (which has no
// *testing.T) or a TestMain. Cleanup functions run at Close, last first;
// a fatal failure panics, which fails the Example or the test binary.
// Methods it does not define (Setenv, Skip, ...) panic.
type Standalone struct {
	testing.TB // nil: only the methods below may be called

	name     string
	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

// NewStandalone returns a Standalone named name (for messages).
func NewStandalone(name string) *Standalone { return &Standalone{name: name} }

// Close runs the cleanup functions, last registered first.
func (s *Standalone) Close() {
	s.mu.Lock()
	fs := slices.Clone(s.cleanups)
	s.cleanups = nil
	s.mu.Unlock()
	for _, f := range slices.Backward(fs) {
		f()
	}
}

// Name is the name given to NewStandalone.
func (s *Standalone) Name() string { return s.name }

// Helper does nothing.
func (s *Standalone) Helper() {}

// Cleanup registers f to run at Close.
func (s *Standalone) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

// TempDir creates a directory removed at Close.
func (s *Standalone) TempDir() string {
	dir, err := os.MkdirTemp("", "hubtest-")
	if err != nil {
		s.Fatalf("hubtest: temp dir: %v", err)
	}
	s.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// Log writes to stderr.
func (s *Standalone) Log(args ...any) {
	fmt.Fprintln(os.Stderr, append([]any{s.name + ":"}, args...)...)
}

// Logf writes to stderr.
func (s *Standalone) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, s.name+": "+format+"\n", args...)
}

// Error logs and marks the failure.
func (s *Standalone) Error(args ...any) {
	s.Log(args...)
	s.Fail()
}

// Errorf logs and marks the failure.
func (s *Standalone) Errorf(format string, args ...any) {
	s.Logf(format, args...)
	s.Fail()
}

// Fail marks the failure.
func (s *Standalone) Fail() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = true
}

// Failed reports whether a failure was marked.
func (s *Standalone) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// FailNow marks the failure and panics.
func (s *Standalone) FailNow() {
	s.Fail()
	panic(s.name + ": failed")
}

// Fatal logs, marks the failure and panics.
func (s *Standalone) Fatal(args ...any) {
	s.Log(args...)
	s.FailNow()
}

// Fatalf logs, marks the failure and panics.
func (s *Standalone) Fatalf(format string, args ...any) {
	s.Logf(format, args...)
	s.FailNow()
}
