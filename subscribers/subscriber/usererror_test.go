package subscriber_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Errors whose methods are broken, as a handler may return them.
type (
	// derefError's Error dereferences its receiver: returned as a typed
	// nil (a nil *derefError in an error), calling it panics.
	derefError struct{ msg string }
	// panicError's Error panics.
	panicError struct{}
	// unwrapPanicError's Unwrap panics (errors.Is and errors.As call it).
	unwrapPanicError struct{}
	// goexitError's Error calls runtime.Goexit.
	goexitError struct{}
	// doublePanic's Error panics with a value whose Error panics too:
	// fmt prints the first panic but re-panics on the second.
	doublePanic struct{}
)

func (e *derefError) Error() string    { return e.msg }
func (panicError) Error() string       { panic("Error method broke") }
func (unwrapPanicError) Error() string { return "unwrap me" }
func (unwrapPanicError) Unwrap() error { panic("Unwrap broke") }
func (goexitError) Error() string      { runtime.Goexit(); return "" }
func (doublePanic) Error() string      { panic(panicError{}) }
func (doublePanic) String() string     { panic(panicError{}) }
func typedNil() error                  { var e *derefError; return e }
func returns(err error) func() error   { return func() error { return err } }
func panics(v any) func() error        { return func() error { panic(v) } }
func permanentBroken() func() error    { return returns(subscriber.Permanent(panicError{})) }
func wrappedUnwrapPanic() func() error { return returns(fmt.Errorf("outer: %w", unwrapPanicError{})) }
func permanentTypedNil() func() error  { return returns(subscriber.Permanent(typedNil())) }
func errorsMainHandler(f func() error) subscriber.HandlerFunc {
	return func(context.Context, pgx.Tx, subscriber.Event) error { return f() }
}

// badErrorCases are the handlers of TestBrokenHandlerErrorsAreDeadLettered,
// one subject each; attempts is how many deliveries the dead letter counts
// (MaxDeliver, or 1 for a permanent error) and want a part of its text.
var badErrorCases = []struct {
	name     string
	fn       func() error
	attempts int
	want     string
}{
	{"typed nil whose Error dereferences it", returns(typedNil()), badErrMaxDeliver, "handler error: nil *subscriber_test.derefError returned as an error"},
	{"Error panics", returns(panicError{}), badErrMaxDeliver, "handler error: Error() of subscriber_test.panicError panicked: Error method broke"},
	{"Unwrap panics", returns(unwrapPanicError{}), badErrMaxDeliver, "handler error: unwrap me (examining the subscriber_test.unwrapPanicError with errors.Is/As panicked: Unwrap broke)"},
	{"wrapped Unwrap panics", wrappedUnwrapPanic(), badErrMaxDeliver, "handler error: outer: unwrap me (examining the *fmt.wrapError with errors.Is/As panicked: Unwrap broke)"},
	{"Error calls Goexit", returns(goexitError{}), badErrMaxDeliver, "handler error: Error() of subscriber_test.goexitError called runtime.Goexit"},
	{"permanent with a panicking Error", permanentBroken(), 1, "handler error: Error() of *subscriber.PermanentError panicked: Error method broke"},
	{"permanent typed nil", permanentTypedNil(), 1, "handler error: Error() of *subscriber.PermanentError panicked: runtime error"},
	{"panic with a value whose printing panics twice", panics(doublePanic{}), badErrMaxDeliver, "handler panic: a subscriber_test.doublePanic value whose printing panicked"},
}

const (
	badErrName       = "baderrors"
	badErrMaxDeliver = 3
	envBadErrors     = "HOOKHUB_BADERRORS"
)

func badErrorMessage(t *testing.T, i int) subtest.Message {
	m := event(t, fmt.Sprintf("evt_baderr_%d", i))
	m.EventType = fmt.Sprintf("baderr%d.created", i)
	return m
}

// badErrorsMain is a subscriber process (run by StartMain) whose handlers
// return the errors of badErrorCases. Before, the first of them killed the
// process: the library called Error() outside the recovered call (retry
// log line, dead-letter text), after the crash-loop count was settled, so
// it died again on every redelivery.
func badErrorsMain() {
	runChildSubscriber(subscriber.Config{
		Name: badErrName, Concurrency: 2, MaxDeliver: badErrMaxDeliver,
		Backoff: []time.Duration{50 * time.Millisecond}, AckWait: 2 * time.Second,
		RedriveInterval: 100 * time.Millisecond,
		// JSON: its handler calls an error's Error method itself, so a
		// handler error reaching the log would kill the process.
		Logger: slog.New(slog.NewJSONHandler(os.Stderr, nil)),
	}, func(sub *subscriber.Subscriber) error {
		for i, tc := range badErrorCases {
			subject, err := schema.Subject("paddle", fmt.Sprintf("baderr%d.created", i))
			if err != nil {
				return err
			}
			sub.Handle(subject, errorsMainHandler(tc.fn))
		}
		return nil
	})
}

// A handler error whose methods are broken
// (a typed nil whose Error dereferences it, an Error that panics or calls
// runtime.Goexit, an Unwrap that panics, a panic value that cannot be
// printed) is a failed attempt with a fixed text, dead-lettered within
// MaxDeliver (at once when permanent), and the process lives on. The
// subscriber runs in a child process, so on the old code, where the first
// such error killed it, this test fails instead of crashing the test
// binary.
func TestBrokenHandlerErrorsAreDeadLettered(t *testing.T) {
	env := subtest.NewParallel(t)
	for i := range badErrorCases {
		env.Publish(t, badErrorMessage(t, i))
	}
	p := hubtest.StartMain(t, []string{envBadErrors + "=1", envCrashDB + "=" + env.DBURL, envCrashNATS + "=" + env.NATS.URL()})
	deadLetters := func() []subscriber.DeadLetter {
		dls, err := subscriber.ListDeadLetters(context.Background(), env.Pool, badErrName)
		if err != nil {
			return nil // the process has not created the table yet
		}
		return dls
	}
	require.Eventually(t, func() bool { return !p.Running() || len(deadLetters()) == len(badErrorCases) }, subtest.Timeout, subtest.Tick)
	require.True(t, p.Running(), "the subscriber process died:\n%s", p.Output())
	env.WaitAllAcked(t, badErrName)

	byEvent := map[string]subscriber.DeadLetter{}
	for _, d := range deadLetters() {
		byEvent[d.EventID] = d
	}
	for i, tc := range badErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := byEvent[badErrorMessage(t, i).EventID]
			require.True(t, ok, "no dead letter")
			require.Equal(t, tc.attempts, d.Attempts)
			require.Contains(t, d.Error, tc.want)
			require.Equal(t, d.Error, subscriber.SanitizeText(d.Error, errorLen))
		})
	}
	require.Zero(t, env.Count(t, "SELECT count(*) FROM "+badErrName+".processed_messages"), "a typed nil is not a success")
	require.Zero(t, env.Count(t, "SELECT count(*) FROM "+badErrName+".handler_attempts"), "no call counted as a crash")

	// A redrive goes through the same path: each fails again, with the
	// same text, and the process lives on.
	n, err := subscriber.RequestRedriveAll(context.Background(), env.Pool, badErrName)
	require.NoError(t, err)
	require.EqualValues(t, len(badErrorCases), n)
	require.Eventually(t, func() bool {
		return !p.Running() || env.Count(t, "SELECT count(*) FROM "+badErrName+".dead_letters WHERE redrive_requested_at IS NULL AND redrive_error IS NOT NULL") == len(badErrorCases)
	}, subtest.Timeout, subtest.Tick)
	require.True(t, p.Running(), "the subscriber process died:\n%s", p.Output())
	for i, tc := range badErrorCases {
		d := byEvent[badErrorMessage(t, i).EventID]
		got, err := subscriber.GetDeadLetter(context.Background(), env.Pool, badErrName, d.ID)
		require.NoError(t, err)
		require.Contains(t, got.RedriveError, tc.want, tc.name)
		require.Nil(t, got.RedrivenAt, tc.name)
	}
	p.Terminate(t)
	require.Equal(t, 0, p.ExitCode(t), p.Output())
	require.False(t, strings.Contains(p.Output(), "panic: runtime error"), p.Output())
}
