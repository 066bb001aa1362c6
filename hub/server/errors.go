package server

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Errors the handler returns for requests it refuses before verification.
var (
	errUnknownProvider = errors.New("unknown provider")
	errMethod          = errors.New("method not allowed")
	errEncoding        = errors.New("content encoding not supported: send the body uncompressed")
	errTooLarge        = errors.New("body too large")
)

// problem is an HTTP answer for an error: status, the body's message and
// the delivery outcome it counts as.
type problem struct {
	status  int
	message string
	outcome string
}

// classify maps an error to its HTTP answer. It is the only place that
// does so. Messages never carry more than the sentinel's text for
// authentication failures.
func classify(err error) problem {
	switch {
	case errors.Is(err, provider.ErrTimestamp):
		return problem{fiber.StatusUnauthorized, provider.ErrTimestamp.Error(), metrics.OutcomeStaleTimestamp}
	case errors.Is(err, provider.ErrInvalidSignature):
		return problem{fiber.StatusUnauthorized, provider.ErrInvalidSignature.Error(), metrics.OutcomeInvalidSignature}
	case errors.Is(err, provider.ErrPayload):
		return problem{fiber.StatusBadRequest, err.Error(), metrics.OutcomeBadRequest}
	case errors.Is(err, errUnknownProvider):
		return problem{fiber.StatusNotFound, err.Error(), ""}
	case errors.Is(err, errMethod):
		return problem{fiber.StatusMethodNotAllowed, err.Error(), ""}
	case errors.Is(err, errEncoding):
		return problem{fiber.StatusUnsupportedMediaType, err.Error(), metrics.OutcomeBadRequest}
	case errors.Is(err, errOverloaded):
		return problem{fiber.StatusServiceUnavailable, errOverloaded.Error(), metrics.OutcomeOverloaded}
	case errors.Is(err, errBodyRead):
		return problem{fiber.StatusBadRequest, errBodyRead.Error(), metrics.OutcomeBadRequest}
	case errors.Is(err, errTooLarge):
		return problem{fiber.StatusRequestEntityTooLarge, err.Error(), metrics.OutcomeTooLarge}
	case errors.Is(err, ops.ErrNotFound), errors.Is(err, ops.ErrUnknownSubscriber), errors.Is(err, subscriber.ErrUnknownSubscriber):
		return problem{fiber.StatusNotFound, err.Error(), ""}
	case errors.Is(err, ops.ErrInvalid), errors.Is(err, ops.ErrBadTime):
		return problem{fiber.StatusBadRequest, err.Error(), ""}
	case errors.Is(err, ops.ErrNoStream), errors.Is(err, ops.ErrIncompleteRead), errors.Is(err, ops.ErrStreamMisconfigured):
		return problem{fiber.StatusServiceUnavailable, err.Error(), ""}
	case errors.Is(err, ops.ErrBusy):
		return problem{fiber.StatusTooManyRequests, err.Error(), ""}
	case errors.Is(err, hub.ErrUnavailable):
		return problem{fiber.StatusServiceUnavailable, "unavailable: the event was not stored, retry later", metrics.OutcomeUnavailable}
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case fiber.StatusRequestEntityTooLarge:
			return problem{fe.Code, errTooLarge.Error(), metrics.OutcomeTooLarge}
		case fiber.StatusNotFound:
			return problem{fe.Code, "not found", ""}
		case fiber.StatusMethodNotAllowed:
			return problem{fe.Code, errMethod.Error(), ""}
		}
		return problem{fe.Code, fe.Message, ""}
	}
	return problem{fiber.StatusInternalServerError, "internal error", ""}
}

// ErrorStatus is the HTTP status and message the hub answers for err (an
// error of hub/ops or of the server), for other HTTP interfaces of the
// hub such as the console: the same mapping as the admin API's.
func ErrorStatus(err error) (status int, message string) {
	p := classify(err)
	return p.status, p.message
}

type errorBody struct {
	Error string `json:"error"`
}
