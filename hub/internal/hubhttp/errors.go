package hubhttp

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub"
)

// UnavailableMessage is the answer to an error wrapping
// hub.ErrUnavailable: its causes name hosts, users or databases, so they
// go to the log only.
const UnavailableMessage = "unavailable: the event was not stored, retry later"

// ErrorStatus is the HTTP status and message the hub answers for err: the
// one table the admin API, the console and, for what is not its own, the
// webhook listener share. It maps the codes of package hub
// (hub.ErrorCode), never another package's sentinels; the message of a
// coded error is its whole text (the operator reads why), that of an
// error without a code "internal error".
func ErrorStatus(err error) (status int, message string) {
	switch {
	case errors.Is(err, ErrOverloaded):
		return fiber.StatusServiceUnavailable, ErrOverloaded.Error()
	case errors.Is(err, ErrBodyRead):
		return fiber.StatusBadRequest, ErrBodyRead.Error()
	case errors.Is(err, ErrTooLarge):
		return fiber.StatusRequestEntityTooLarge, err.Error()
	}
	switch hub.ErrorCode(err) {
	case hub.ENOTFOUND:
		return fiber.StatusNotFound, err.Error()
	case hub.EINVALID:
		return fiber.StatusBadRequest, err.Error()
	case hub.EUNAUTHORIZED:
		return fiber.StatusUnauthorized, err.Error()
	case hub.ECONFLICT:
		return fiber.StatusConflict, err.Error()
	case hub.EBUSY:
		return fiber.StatusTooManyRequests, err.Error()
	case hub.EUNAVAILABLE:
		if errors.Is(err, hub.ErrUnavailable) {
			return fiber.StatusServiceUnavailable, UnavailableMessage
		}
		return fiber.StatusServiceUnavailable, err.Error()
	}
	if fe, ok := errors.AsType[*fiber.Error](err); ok {
		switch fe.Code {
		case fiber.StatusRequestEntityTooLarge:
			return fe.Code, ErrTooLarge.Error()
		case fiber.StatusNotFound:
			return fe.Code, "not found"
		case fiber.StatusMethodNotAllowed:
			return fe.Code, "method not allowed"
		}
		return fe.Code, fe.Message
	}
	return fiber.StatusInternalServerError, "internal error"
}

// retryAfterer is an error that says how long to wait before trying
// again (ops.BusyError: an operation refused by admission).
type retryAfterer interface{ RetryAfter() time.Duration }

// SetRetryAfter sets the Retry-After header of a 429 answer (status, from
// ErrorStatus) to err: how long err says to wait (in whole seconds, at
// least 1), else RetryAfterSeconds. Every face that answers a refused
// operation (the admin API, the console) calls it with the status it
// answers, so that each 429 tells when to try again.
func SetRetryAfter(c *fiber.Ctx, status int, err error) {
	if status != fiber.StatusTooManyRequests {
		return
	}
	secs := RetryAfterSeconds
	var ra retryAfterer
	if errors.As(err, &ra) {
		secs = max(1, int(math.Ceil(ra.RetryAfter().Seconds())))
	}
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(secs))
}

// ErrorBody is the JSON body of every error answer: {"error": "..."}.
type ErrorBody struct {
	Error string `json:"error"`
}

// errPanic is what a handler that panicked returns: ErrorStatus answers
// it 500 "internal error", like any error without a code.
var errPanic = errors.New("handler panicked")

// RecoverPanics returns a middleware that turns a panic in a handler (a
// bug, an input nobody thought of) into a 500 answer and an error log on
// log with the stack, so one request never takes the process, its ingest,
// relay and subscribers, down with it.
func RecoverPanics(log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) (err error) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("request panicked", "method", c.Method(), "path", c.Path(),
					"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = fmt.Errorf("%w: %v", errPanic, r)
			}
		}()
		return c.Next()
	}
}

// Refusal reports whether status answers a request the hub refused to act
// on (bad input, a bound, a conflict, no permission, too many), which the
// audit trail records for a signed-in caller; not a page or name that
// does not exist (404, 405), nor a caller without credentials (401).
func Refusal(status int) bool {
	switch status {
	case fiber.StatusUnauthorized, fiber.StatusNotFound, fiber.StatusMethodNotAllowed:
		return false
	}
	return status >= 400 && status < 500
}
