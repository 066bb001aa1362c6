package subscriber

import (
	"errors"
	"fmt"
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

// isPermanent is IsPermanent for the errors handleMessage settles, which
// are the library's own: a handler's failure says so itself.
func isPermanent(err error) bool {
	var he *handlerError
	if errors.As(err, &he) {
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
