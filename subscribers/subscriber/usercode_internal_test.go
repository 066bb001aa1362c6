package subscriber

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
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
