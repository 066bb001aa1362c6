package server

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubhttp"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/provider"
)

// Errors the handler returns for requests it refuses before verification.
var (
	errUnknownProvider = errors.New("unknown provider")
	errMethod          = errors.New("method not allowed")
	errEncoding        = errors.New("content encoding not supported: send the body uncompressed")
)

// problem is an HTTP answer for an error: status, the body's message and
// the delivery outcome it counts as.
type problem struct {
	status  int
	message string
	outcome string
}

// classify maps an error to the webhook listener's answer and the
// delivery outcome it counts as. It is the only place that does so: the
// refusals of the webhook contract (provider verification, the request's
// method and encoding) here, everything else by the hub's one table
// (hubhttp.ErrorStatus, by error code). Messages never carry more than the
// sentinel's text for authentication failures.
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
	}
	status, message := hubhttp.ErrorStatus(err)
	return problem{status, message, outcome(err, status)}
}

// outcome is the delivery outcome of an error the hub's table answered.
func outcome(err error, status int) string {
	switch {
	case errors.Is(err, hubhttp.ErrOverloaded):
		return metrics.OutcomeOverloaded
	case errors.Is(err, hubhttp.ErrBodyRead):
		return metrics.OutcomeBadRequest
	case status == fiber.StatusRequestEntityTooLarge:
		return metrics.OutcomeTooLarge
	case hub.ErrorCode(err) == hub.EUNAVAILABLE && errors.Is(err, hub.ErrUnavailable):
		return metrics.OutcomeUnavailable
	}
	return ""
}
