package subscriber

import (
	"context"
	"fmt"
	"reflect"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Code the library does not own (a handler, the methods of the error it
// returns: Error, Unwrap, Is, As; a panic value's String or Error; a
// Sender) is called only through run, the one place that contains what it
// may do: panic, dereference a nil receiver, call runtime.Goexit, or (for
// the methods, which take no context) never return. Whatever it does, the
// worker goes on and the message is settled. Values the library got from
// such code (an error) are turned into text once, through run, and only
// that text is logged, stored and traced: the logger, the dead letter and
// the span never call back into user code.

// methodTimeout bounds the wait for an error's methods and a panic
// value's text: they take no context, and one that blocks must not hold a
// worker (or a shutdown) forever. The call goes on alone; its result is
// dropped.
const methodTimeout = 5 * time.Second

// maxAbandoned bounds the calls run gave up waiting for that are still
// running (an Error method blocked for ever, on every delivery of every
// message): past it, run does not start another such call and answers a
// fault at once, so that blocked calls cannot pile up goroutines without
// end. It is process-wide, as the goroutines are.
const maxAbandoned = 100

// abandoned counts the calls run stopped waiting for that have not
// returned yet (process-wide: see maxAbandoned).
var abandoned atomic.Int64

// fault is how a call through run ended when it did not return.
type fault struct {
	value   any    // the panic value (panicked)
	stack   []byte // the panicking goroutine's stack (panicked)
	goexit  bool   // it called runtime.Goexit
	timeout bool   // it did not return within the wait
	refused bool   // not called: maxAbandoned earlier calls never returned
}

// describe says what happened, for an error text; the panic value is
// printed through panicText.
func (f *fault) describe() string {
	if f.timeout || f.goexit || f.refused {
		return f.plain()
	}
	return "panicked: " + panicText(f.value)
}

// err is the fault as the library's own error: a *PanicError, or an
// error saying what (e.g. "handler") called runtime.Goexit or did not
// return.
func (f *fault) err(what string) error {
	switch {
	case f.timeout, f.goexit, f.refused:
		return fmt.Errorf("%s %s", what, f.plain())
	default:
		return &PanicError{what: what, value: panicText(f.value), stack: f.stack}
	}
}

// PanicError is a panic recovered from code the library called (a
// handler, a background task, a function given to SafeCall): the panic
// value printed, sanitized and bounded, and the panicking goroutine's
// stack.
type PanicError struct {
	what  string // "handler", "background task", ...
	value string
	stack []byte
}

// Bounds on what a panic leaves in errors and logs.
const (
	maxPanicValueLen = 4 << 10
	maxStackLen      = 32 << 10
)

func (e *PanicError) Error() string { return e.what + " panic: " + e.value }

// Value is the panic value as text: sanitized, at most 4 KiB.
func (e *PanicError) Value() string { return e.value }

// Stack is the panicking goroutine's stack as logged: sanitized, at most
// 32 KiB.
func (e *PanicError) Stack() string { return SanitizeText(string(e.stack), maxStackLen) }

// run calls fn on a goroutine of its own and waits for it, at most wait
// when wait > 0. It returns fn's result, or a fault when fn panicked,
// called runtime.Goexit or did not return in time (fn then goes on alone,
// its result dropped, counted in abandoned until it returns). With wait >
// 0 and maxAbandoned calls abandoned already, fn is not called: the fault
// says so.
func run[T any](wait time.Duration, fn func() T) (T, *fault) {
	return runUntil(context.Background(), wait, fn)
}

// runUntil is run that also stops waiting when ctx is done (the fault
// then says it did not return in time).
func runUntil[T any](ctx context.Context, wait time.Duration, fn func() T) (T, *fault) {
	type result struct {
		v T
		f *fault
	}
	var zero T
	if wait > 0 && abandoned.Load() >= maxAbandoned {
		return zero, &fault{refused: true}
	}
	// state: 0 running, 1 returned (or failed), 2 abandoned by the wait.
	var state atomic.Int32
	done := make(chan result, 1)
	go func() {
		returned := false
		defer func() {
			if !state.CompareAndSwap(0, 1) {
				abandoned.Add(-1)
			}
		}()
		defer func() {
			if returned {
				return
			}
			// Nothing here may call user code: the panic value is kept
			// as it is and printed later, by run again (panicText).
			if v := recover(); v != nil {
				done <- result{f: &fault{value: v, stack: debug.Stack()}}
				return
			}
			done <- result{f: &fault{goexit: true}}
		}()
		v := fn()
		returned = true
		done <- result{v: v}
	}()
	if wait <= 0 && ctx.Done() == nil {
		r := <-done
		return r.v, r.f
	}
	var expired <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		expired = t.C
	}
	select {
	case r := <-done:
		return r.v, r.f
	case <-expired:
	case <-ctx.Done():
	}
	if !state.CompareAndSwap(0, 2) {
		r := <-done // it has just ended
		return r.v, r.f
	}
	abandoned.Add(1)
	return zero, &fault{timeout: true}
}

// panicText is a panic value as text: sanitized and bounded. Printing it
// may call its String or Error method, so it runs through run; if that
// fails too, the text names the value's type only (no recursion).
func panicText(v any) string {
	s, f := run(methodTimeout, func() string { return fmt.Sprint(v) })
	if f != nil {
		s = fmt.Sprintf("a %T value whose printing %s", v, f.plain())
	}
	return SanitizeText(s, maxPanicValueLen)
}

// stuck reports whether f is a call that did not return in time, or was
// not made because too many had not (a nil f: no).
func (f *fault) stuck() bool { return f != nil && (f.timeout || f.refused) }

// plain is describe without printing a panic value.
func (f *fault) plain() string {
	switch {
	case f.timeout:
		return fmt.Sprintf("did not return within %s", methodTimeout)
	case f.goexit:
		return "called runtime.Goexit instead of returning"
	case f.refused:
		return fmt.Sprintf("was not called: %d earlier calls into the handler's errors or panic values have not returned", maxAbandoned)
	default:
		return fmt.Sprintf("panicked (with a %T)", f.value)
	}
}

// SafeCall calls fn, code the caller does not own (a Sender, a plug-in),
// on a goroutine of its own and returns its error. A panic in fn becomes a
// *PanicError, and a runtime.Goexit an error saying so, both the
// library's own, with texts ("<what> panic: <value>", sanitized and
// bounded) safe to log and store; tell them apart with a type assertion.
// The error fn returns is passed through as it is: read it with ErrorText
// and ErrorsAs, never with its own methods.
func SafeCall(what string, fn func() error) error {
	err, f := run(0, fn)
	if f != nil {
		return f.err(what)
	}
	return err
}

// ErrorText returns err's text, sanitized and at most maxBytes long
// (SanitizeText), calling its Error method through the library's
// recovered call. A nil error gives "". An error whose dynamic value is a
// nil pointer (a typed nil: a func returning a nil *MyErr as error) is not
// asked for its text: it gives "nil *MyErr returned as an error". An
// Error method that panics, calls runtime.Goexit or does not return within
// 5 s gives a fixed text saying so ("Error() of *MyErr panicked: ...").
// The result never calls back into err.
func ErrorText(err error, maxBytes int) string {
	text, _ := errorText(err, maxBytes)
	return text
}

// errorText is ErrorText; own says the text is err's own (not a fixed
// text about a typed nil or a failed Error method).
func errorText(err error, maxBytes int) (text string, own bool) {
	if err == nil {
		return "", true
	}
	if isTypedNil(err) {
		return fmt.Sprintf("nil %T returned as an error", err), false
	}
	s, f := run(methodTimeout, func() string { return err.Error() })
	if f != nil {
		return SanitizeText(fmt.Sprintf("Error() of %T %s", err, f.describe()), maxBytes), false
	}
	return SanitizeText(s, maxBytes), true
}

// ErrorsAs is errors.As(err, target) through the library's recovered
// call: errors.As calls the Unwrap and As methods of err's chain, which
// may panic. It reports false when one did (or did not return within
// 5 s), and for a typed nil err (see ErrorText).
func ErrorsAs(err error, target any) bool {
	ok, _ := errorsAs(err, target)
	return ok
}

func errorsAs(err error, target any) (bool, *fault) {
	if err == nil || isTypedNil(err) {
		return false, nil
	}
	ok, f := run(methodTimeout, func() bool { return chainAs(err, target) })
	return ok && f == nil, f
}

// errorsIs is errors.Is through run (see ErrorsAs).
func errorsIs(err, target error) (bool, *fault) {
	if err == nil || isTypedNil(err) {
		return false, nil
	}
	ok, f := run(methodTimeout, func() bool { return chainIs(err, target) })
	return ok && f == nil, f
}

// maxChainErrors bounds the errors of a chain chainIs and chainAs look
// at: an Unwrap that returns its receiver (or a list holding it) makes a
// chain without end, which errors.Is and errors.As walk for ever, on a
// goroutine that the timeout abandons but that keeps a core busy.
const maxChainErrors = 100

// walkChain calls visit on err and the errors it wraps (Unwrap() error and
// Unwrap() []error), depth first, in the order errors.Is and errors.As
// visit them, at most maxChainErrors errors; it stops and reports true when
// visit does.
func walkChain(err error, visit func(error) bool) bool {
	stack := []error{err}
	for n := 0; len(stack) > 0 && n < maxChainErrors; n++ {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if visit(e) {
			return true
		}
		switch x := e.(type) {
		case interface{ Unwrap() error }:
			if u := x.Unwrap(); u != nil {
				stack = append(stack, u)
			}
		case interface{ Unwrap() []error }:
			us := x.Unwrap()
			us = us[:min(len(us), maxChainErrors)]
			for i := len(us) - 1; i >= 0; i-- {
				if us[i] != nil {
					stack = append(stack, us[i])
				}
			}
		}
	}
	return false
}

// chainIs is errors.Is over at most maxChainErrors errors (walkChain).
func chainIs(err, target error) bool {
	comparable := target == nil || reflect.TypeOf(target).Comparable()
	return walkChain(err, func(e error) bool {
		if comparable && e == target {
			return true
		}
		x, ok := e.(interface{ Is(error) bool })
		return ok && x.Is(target)
	})
}

// chainAs is errors.As over at most maxChainErrors errors (walkChain);
// target is a non-nil pointer to an interface or to a type implementing
// error, as errors.As requires (it panics otherwise).
func chainAs(err error, target any) bool {
	val := reflect.ValueOf(target)
	if target == nil || val.Kind() != reflect.Pointer || val.IsNil() {
		panic("subscriber: ErrorsAs target must be a non-nil pointer")
	}
	typ := val.Type().Elem()
	if typ.Kind() != reflect.Interface && !typ.Implements(reflect.TypeFor[error]()) {
		panic("subscriber: ErrorsAs target must point to an interface or a type implementing error")
	}
	return walkChain(err, func(e error) bool {
		if reflect.TypeOf(e).AssignableTo(typ) {
			val.Elem().Set(reflect.ValueOf(e))
			return true
		}
		x, ok := e.(interface{ As(any) bool })
		return ok && x.As(target)
	})
}

// isTypedNil reports whether err is a non-nil interface holding a nil
// pointer, map, slice, channel or func. It calls no method of err.
func isTypedNil(err error) bool {
	v := reflect.ValueOf(err)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}

// handlerError is a handler's failed attempt as the library keeps it: the
// handler's error read once, through run (inspectHandlerError), and then
// dropped. Its text is what the retry log line, the dead letter and the
// span show; nothing calls the handler's error again.
type handlerError struct {
	text      string
	permanent bool
	// retry says the error wraps a *RetryError, whose After (clamped) is
	// retryAfter.
	retry      bool
	retryAfter time.Duration
}

func (e *handlerError) Error() string { return e.text }

// inspectHandlerError reads what the library needs from a handler's
// non-nil error, calling its methods only through run: whether it says
// the event is stale (errors.Is ErrStale), and otherwise the failure as a
// *handlerError (permanent when it wraps a *PermanentError, retried
// after its own delay when it wraps a *RetryError, whose After is read
// then, once). A
// *PanicError, and every other error the library made itself (callHandler)
// are returned as they are. A typed nil, or an error whose
// methods panic, is a failed attempt with a fixed text ("handler error:
// ..."), retried and dead-lettered within MaxDeliver like any other.
func inspectHandlerError(herr error) (stale bool, err error) {
	if _, ok := herr.(libraryError); ok {
		return false, herr
	}
	stale, fs := errorsIs(herr, ErrStale)
	if stale {
		return true, nil
	}
	// Methods that did not return (or were not called) are not called
	// again for this error: each such call holds the worker for
	// methodTimeout and leaves a goroutine behind.
	if fs.stuck() {
		return false, &handlerError{text: fmt.Sprintf("handler error: a %T whose errors.Is %s", herr, fs.plain())}
	}
	var pe *PermanentError
	permanent, fp := errorsAs(herr, &pe)
	if fp.stuck() {
		return false, &handlerError{text: fmt.Sprintf("handler error: a %T whose errors.As %s", herr, fp.plain())}
	}
	// The RetryError's delay is read on the goroutine that found it: a
	// target shared with a call that may be abandoned could change later.
	type retryInfo struct {
		ok    bool
		after time.Duration
	}
	var ri retryInfo
	var fr *fault
	if !isTypedNil(herr) {
		ri, fr = run(methodTimeout, func() retryInfo {
			var re *RetryError
			if chainAs(herr, &re) && re != nil {
				return retryInfo{ok: true, after: clampRetryAfter(re.After)}
			}
			return retryInfo{}
		})
		if fr.stuck() {
			return false, &handlerError{text: fmt.Sprintf("handler error: a %T whose errors.As %s", herr, fr.plain())}
		}
		if fr != nil {
			ri = retryInfo{}
		}
	}
	text, own := errorText(herr, maxErrorLen)
	if fp == nil {
		fp = fr
	}
	switch {
	case !own: // a typed nil, or its Error method failed
		text = "handler error: " + text
	case fs != nil || fp != nil:
		f := fs
		if f == nil {
			f = fp
		}
		text = fmt.Sprintf("handler error: %s (examining the %T with errors.Is/As %s)", text, herr, f.describe())
	}
	return false, &handlerError{text: SanitizeText(text, maxErrorLen), permanent: permanent, retry: ri.ok, retryAfter: ri.after}
}

// libraryError is an error from callHandler itself (the handler did not
// return): its methods are the library's.
type libraryError struct{ error }

func (e libraryError) Unwrap() error { return e.error }

// textError is an error whose text was read once through ErrorText; it
// still unwraps to the original for callers that look further.
type textError struct {
	text string
	err  error
}

func (e *textError) Error() string { return e.text }
func (e *textError) Unwrap() error { return e.err }
