package subscriber

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookhub/hookhub/internal/hubtest"
)

type nilDeref struct{ s string }

func (e *nilDeref) Error() string { return e.s }

type panicky struct{}

func (panicky) Error() string { panic(panicky{}) } // printing the panic value panics again

type goexiter struct{}

func (goexiter) Error() string { runtime.Goexit(); return "" }

// ErrorText never lets an error's Error method reach the caller: a typed
// nil, a panic (even one whose value cannot be printed) and
// runtime.Goexit become fixed texts.
func TestErrorText(t *testing.T) {
	var typedNil *nilDeref
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"plain", errors.New("boom \x00"), "boom \uFFFD"},
		{"typed nil", typedNil, "nil *subscriber.nilDeref returned as an error"},
		{"wrapped typed nil", fmt.Errorf("w: %w", typedNil), "w: <nil>"},
		{"panics twice", panicky{}, "Error() of subscriber.panicky panicked: a subscriber.panicky value whose printing panicked (with a subscriber.panicky)"},
		{"goexit", goexiter{}, "Error() of subscriber.goexiter called runtime.Goexit instead of returning"},
		{"permanent typed nil", Permanent(typedNil), "Error() of *subscriber.PermanentError panicked: runtime error: invalid memory address or nil pointer dereference"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ErrorText(tc.err, 1000); got != tc.want {
				t.Fatalf("ErrorText = %q, want %q", got, tc.want)
			}
		})
	}
	if got := ErrorText(errors.New(strings.Repeat("x", 200)), 100); len(got) > 100 {
		t.Fatalf("not bounded: %d bytes", len(got))
	}
}

// A call that does not return within its wait is given up: the caller
// goes on with a fault saying so.
func TestRunTimeout(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	_, f := run(10*time.Millisecond, func() string { <-block; return "late" })
	if f == nil || !f.timeout {
		t.Fatalf("fault = %+v, want a timeout", f)
	}
	if got := f.plain(); !strings.Contains(got, "did not return within") {
		t.Fatalf("plain = %q", got)
	}
}

// SafeCall turns a panic into a *PanicError and a Goexit into an error;
// ErrorsAs survives a panicking Unwrap.
func TestSafeCallAndErrorsAs(t *testing.T) {
	err := SafeCall("sender", func() error { panic("bad \x00") })
	pe, ok := err.(*PanicError)
	if !ok || pe.Error() != "sender panic: bad \uFFFD" || !strings.Contains(pe.Stack(), "goroutine") {
		t.Fatalf("SafeCall panic = %#v", err)
	}
	if err := SafeCall("sender", func() error { runtime.Goexit(); return nil }); err == nil || err.Error() != "sender called runtime.Goexit instead of returning" {
		t.Fatalf("SafeCall goexit = %v", err)
	}
	var target *PermanentError
	if ErrorsAs(badUnwrap{}, &target) {
		t.Fatal("ErrorsAs through a panicking Unwrap")
	}
	if !IsPermanent(fmt.Errorf("x: %w", Permanent(errors.New("y")))) {
		t.Fatal("IsPermanent")
	}
}

type badUnwrap struct{}

func (badUnwrap) Error() string { return "bad unwrap" }
func (badUnwrap) Unwrap() error { panic("no") }

// selfWrap's Unwrap returns itself (or, with many, a list of itself): a
// chain that never ends. calls counts the Unwrap calls.
type selfWrap struct{ calls *atomic.Int64 }

func (e *selfWrap) Error() string { return "self" }

func (e *selfWrap) Unwrap() error { e.calls.Add(1); return e }

type selfWrapMany struct{ calls *atomic.Int64 }

func (e *selfWrapMany) Error() string { return "self" }
func (e *selfWrapMany) Unwrap() []error {
	e.calls.Add(1)
	return []error{e, e}
}

// An error chain that loops (an Unwrap returning its receiver) is walked a
// bounded number of steps by errors.Is/As in the library: it answers
// false at once, without a fault, and leaves no goroutine unwrapping
// forever (errors.Is would loop for ever, burning a core per message).
func TestErrorChainCycleBounded(t *testing.T) {
	for _, mk := range []func(c *atomic.Int64) error{
		func(c *atomic.Int64) error { return &selfWrap{calls: c} },
		func(c *atomic.Int64) error { return &selfWrapMany{calls: c} },
		func(c *atomic.Int64) error { return fmt.Errorf("outer: %w", &selfWrap{calls: c}) },
	} {
		var calls atomic.Int64
		err := mk(&calls)
		t0 := time.Now()
		stale, f := errorsIs(err, ErrStale)
		if stale || f != nil {
			t.Fatalf("errorsIs = %v, %v; want false without a fault", stale, f)
		}
		var pe *PermanentError
		if ok, f := errorsAs(err, &pe); ok || f != nil {
			t.Fatalf("errorsAs = %v, %v; want false without a fault", ok, f)
		}
		if d := time.Since(t0); d >= methodTimeout {
			t.Fatalf("took %s: the walk was cut by the timeout, not bounded", d)
		}
		n := calls.Load()
		time.Sleep(50 * time.Millisecond)
		if calls.Load() != n || n > 2*maxChainErrors {
			t.Fatalf("Unwrap called %d times, then %d: the walk goes on", n, calls.Load())
		}
		stale, herr := inspectHandlerError(err)
		if stale || !strings.Contains(herr.Error(), "self") {
			t.Fatalf("inspectHandlerError = %v, %v", stale, herr)
		}
	}
}

// Calls that never return (an Error method blocked for ever) are bounded:
// past maxAbandoned of them still running, run does not start another
// and says so at once; once they return, calls are made again.
func TestRunAbandonedBounded(t *testing.T) {
	block := make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(block)
		}
	}()
	var calls atomic.Int64
	blocked := func() string { calls.Add(1); <-block; return "late" }
	base := abandoned.Load() // other tests' calls still running
	for abandoned.Load() < maxAbandoned {
		if _, f := run(time.Millisecond, blocked); f == nil || !f.timeout {
			t.Fatalf("fault = %+v, want a timeout", f)
		}
	}
	_, f := run(time.Hour, blocked)
	if f == nil || !f.refused || !strings.Contains(f.plain(), "was not called") {
		t.Fatalf("fault = %+v, want refused", f)
	}
	if n := calls.Load(); n > maxAbandoned {
		t.Fatalf("%d calls started, want at most %d", n, maxAbandoned)
	}
	if got := ErrorText(blockingErr{block}, 100); !strings.Contains(got, "was not called") {
		t.Fatalf("ErrorText = %q", got)
	}
	close(block)
	released = true
	hubtest.Eventually(t, 10*time.Second, "the abandoned calls return", func() bool { return abandoned.Load() <= base })
	if v, f := run(time.Hour, func() string { return "ok" }); f != nil || v != "ok" {
		t.Fatalf("run = %q, %+v after the calls returned", v, f)
	}
}

type blockingErr struct{ block chan struct{} }

func (e blockingErr) Error() string { <-e.block; return "late" }

// isBlocks' Is never returns, and its Error counts its calls.
type isBlocks struct {
	block chan struct{}
	calls *atomic.Int64
}

func (e isBlocks) Error() string        { e.calls.Add(1); return "x" }
func (e isBlocks) Is(target error) bool { <-e.block; return false }

// A handler error whose errors.Is never returns is not asked anything
// more (its As, its Error): one wait, one goroutine, a fixed text.
func TestInspectHandlerErrorStopsAtFirstStuckMethod(t *testing.T) {
	// Parallel: it waits methodTimeout; its abandoned call ends with it,
	// and TestRunAbandonedBounded (not parallel) has run before.
	t.Parallel()
	block := make(chan struct{})
	defer close(block)
	var calls atomic.Int64
	stale, err := inspectHandlerError(isBlocks{block: block, calls: &calls})
	if stale || !strings.Contains(err.Error(), "errors.Is did not return within") {
		t.Fatalf("inspectHandlerError = %v, %v", stale, err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("Error called %d times after Is did not return", n)
	}
}

// runUntil stops waiting when its context is done, as run does past its
// wait: a call that returns, panics or calls runtime.Goexit first is
// answered as run answers it; one still running is abandoned (counted
// until it returns).
func TestRunUntilContext(t *testing.T) {
	cases := []struct {
		name        string
		fn          func(release <-chan struct{}) int
		cancelFirst bool
		want        int
		fault       func(*fault) bool
	}{
		{"returns", func(<-chan struct{}) int { return 7 }, false, 7, func(f *fault) bool { return f == nil }},
		{"panics", func(<-chan struct{}) int { panic("boom") }, false, 0, func(f *fault) bool { return f != nil && f.value == "boom" }},
		{"goexit", func(<-chan struct{}) int { runtime.Goexit(); return 0 }, false, 0, func(f *fault) bool { return f != nil && f.goexit }},
		{"blocks past the context", func(release <-chan struct{}) int { <-release; return 1 }, true, 0, func(f *fault) bool { return f != nil && f.timeout }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := abandoned.Load()
			release := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelFirst {
				time.AfterFunc(10*time.Millisecond, cancel)
			}
			v, f := runUntil(ctx, 0, func() int { return tc.fn(release) })
			close(release)
			if v != tc.want || !tc.fault(f) {
				t.Fatalf("got %d, %+v", v, f)
			}
			deadline := time.Now().Add(5 * time.Second)
			for abandoned.Load() != before {
				if time.Now().After(deadline) {
					t.Fatalf("abandoned stays %d, want %d once the call returned", abandoned.Load(), before)
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}
