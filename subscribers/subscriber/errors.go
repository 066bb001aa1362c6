package subscriber

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrInvalidConfig wraps every error New returns for a bad Config.
	ErrInvalidConfig = errors.New("subscriber: invalid config")

	// ErrStale is returned by a handler to say the event is older than what
	// was already applied (see ApplyIfNewer). The library rolls back what
	// the handler wrote, records the event as processed with outcome
	// skipped_stale, acks it and counts it; it is not a failure.
	ErrStale = errors.New("subscriber: stale event")

	// ErrNoOccurredAt is returned by ApplyIfNewer for an event without a
	// provider time: it cannot be ordered. It is permanent.
	ErrNoOccurredAt = errors.New("subscriber: event has no occurred-at time")

	// ErrDecode wraps payload decoding errors of the Event helpers. Such
	// errors are permanent: the message is dead-lettered at once.
	ErrDecode = errors.New("subscriber: cannot decode payload")

	// ErrShutdownTimeout is returned by Run when in-flight messages did not
	// finish within ShutdownTimeout after its context was cancelled.
	ErrShutdownTimeout = errors.New("subscriber: shutdown timeout exceeded")

	// ErrUnknownSubscriber is returned by the dead-letter functions when the
	// subscriber's tables do not exist (it never ran, or the name is wrong).
	ErrUnknownSubscriber = errors.New("subscriber: unknown subscriber")

	// ErrNotInHandler is returned by ApplyIfNewer when its context is not a
	// handler's.
	ErrNotInHandler = errors.New("subscriber: not called from a handler")
)

// PermanentError marks a handler error that no retry can fix (a payload
// that can never be decoded, a value the service rejects). The message is
// dead-lettered at once instead of after MaxDeliver attempts; a redrive
// after a fix still processes it.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so the library dead-letters the message at once.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// Permanentf is Permanent(fmt.Errorf(format, args...)).
func Permanentf(format string, args ...any) error {
	return Permanent(fmt.Errorf(format, args...))
}

// IsPermanent reports whether err, or an error it wraps, is permanent. It
// calls err's Unwrap and As methods through the library's recovered call
// (ErrorsAs): an error whose methods panic is not permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return ErrorsAs(err, &p)
}

// MaxRetryAfter bounds the delay a RetryError asks for: a longer one (or
// a negative one, which becomes 0) is clamped, so that a handler's
// mistake cannot park a message for years.
const MaxRetryAfter = 24 * time.Hour

// RetryError asks for the message to be redelivered after After instead of
// Config.Backoff, and is never dead-lettered for MaxDeliver: the handler
// decides when to give up (by returning Permanent). A Permanent error
// wrapping a RetryError (or wrapped by one) is permanent. On a redrive it
// is a failed redrive like any other error.
type RetryError struct {
	Err   error
	After time.Duration
}

func (e *RetryError) Error() string {
	msg := "retry after " + e.After.String()
	if e.Err == nil {
		return msg
	}
	return msg + ": " + e.Err.Error()
}

func (e *RetryError) Unwrap() error { return e.Err }

// errRetryRequested is the reason of RetryAfter(d, nil).
var errRetryRequested = errors.New("the handler asked for a retry")

// RetryAfter wraps err so that the message is redelivered after after
// (clamped to [0, MaxRetryAfter]) whatever its delivery count: see
// RetryError. RetryAfter(d, nil) retries with a fixed reason text.
func RetryAfter(after time.Duration, err error) error {
	if err == nil {
		err = errRetryRequested
	}
	return &RetryError{Err: err, After: clampRetryAfter(after)}
}

func clampRetryAfter(d time.Duration) time.Duration {
	return min(max(d, 0), MaxRetryAfter)
}

// retryAfter reports the delay a handler's failure asked for with a
// RetryError (see inspectHandlerError), for the errors handleMessage
// settles.
func retryAfter(err error) (time.Duration, bool) {
	if he, ok := errors.AsType[*handlerError](err); ok && he.retry {
		return he.retryAfter, true
	}
	return 0, false
}

// isPermanent is IsPermanent for the errors handleMessage settles, which
// are the library's own: a handler's failure says so itself.
func isPermanent(err error) bool {
	if he, ok := errors.AsType[*handlerError](err); ok {
		return he.permanent
	}
	return IsPermanent(err)
}

// infraError marks a failure outside the handler (Postgres unreachable,
// the processed-row insert failing): it says nothing about the message, so
// it never counts towards dead-lettering.
type infraError struct{ err error }

func (e *infraError) Error() string { return e.err.Error() }
func (e *infraError) Unwrap() error { return e.err }

func infra(format string, err error) error {
	return &infraError{err: fmt.Errorf(format, err)}
}

func isInfra(err error) bool {
	var ie *infraError
	return errors.As(err, &ie)
}

// unsettledError says a message is dead-lettered without calling its
// handler because earlier calls for the event never returned.
type unsettledError struct {
	delivered  uint64 // this delivery's number
	unfinished int    // handler calls counted that never returned
}

func (e *unsettledError) Error() string {
	return fmt.Sprintf("delivered %d times without settling: at least %d handler calls for this event never returned, "+
		"the handler may crash the process (dead-lettered without calling it again)", e.delivered, e.unfinished)
}
