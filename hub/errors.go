package hub

import (
	"errors"
	"fmt"
)

// Error codes: what kind of failure an error is, whichever package
// returned it. The operator's interfaces (the admin API, the console, the
// command line) turn a code into their answer, so they depend on these
// codes, not on each package's sentinels.
const (
	ENOTFOUND     = "not_found"    // nothing matched: no such event, subscriber or dead letter
	EINVALID      = "invalid"      // the request is malformed or out of bounds
	EUNAVAILABLE  = "unavailable"  // a dependency (database, stream) cannot serve it now
	EUNAUTHORIZED = "unauthorized" // the caller is not allowed to
	ECONFLICT     = "conflict"     // the request conflicts with the current state
	EBUSY         = "busy"         // too many such requests at once: retry later
	EINTERNAL     = "internal"     // anything else: a bug or an unexpected failure
)

// Error is an error with a code (ENOTFOUND...). Sentinels that callers
// branch on are *Error values: errors.Is still matches them through
// fmt.Errorf's %w, and ErrorCode finds their code.
type Error struct {
	Code    string
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with code and a formatted message. It wraps
// nothing: %w is not supported (use fmt.Errorf around a sentinel).
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode is the code of the first *Error in err's chain, EINTERNAL
// when there is none, "" for a nil err.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage is the message of the first *Error in err's chain (without
// what wraps it), "internal error" when there is none, "" for a nil err.
func ErrorMessage(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Message
	}
	return "internal error"
}
