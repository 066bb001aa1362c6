package server

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/gofiber/fiber/v2"
)

// errPanic is what a handler that panicked returns: classify answers it
// 500 "internal error", like any error it does not know.
var errPanic = errors.New("handler panicked")

// recoverPanics turns a panic in a handler (a bug, an input nobody thought
// of) into a 500 answer and an error log with the stack, so one request
// never takes the process, its ingest, relay and subscribers, down with it.
func (s *Server) recoverPanics(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.cfg.Logger.Error("request panicked", "method", c.Method(), "path", c.Path(),
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %v", errPanic, r)
		}
	}()
	return c.Next()
}
