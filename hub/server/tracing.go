package server

import (
	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/internal/tracing"
)

// The delivery span's own attributes.
const (
	attrProvider  = attribute.Key("hookhub.provider")
	attrEventID   = attribute.Key("hookhub.event_id")
	attrEventType = attribute.Key("hookhub.event_type")
	attrOutcome   = attribute.Key("hookhub.outcome") // hub_deliveries_total's outcome label
)

// headerCarrier reads a request's W3C trace headers (copied: fasthttp
// reuses its buffers once the handler returns, and the span outlives it).
type headerCarrier struct{ fiberHeader }

func (headerCarrier) Set(string, string) {}
func (headerCarrier) Keys() []string     { return nil }

// tracedWebhook is webhook inside a server span per delivery to a known
// provider, the child of the request's traceparent if it has one. The
// span ends once the answer is decided. Mounted instead of webhook only
// when the server has a Tracer, so that without one nothing of this runs.
func (s *Server) tracedWebhook(c *fiber.Ctx) error {
	p, ok := s.providers[c.Params("provider")]
	if !ok {
		return s.webhook(c)
	}
	ctx := propagation.TraceContext{}.Extract(c.UserContext(), headerCarrier{fiberHeader{c}})
	ctx, span := s.cfg.Tracer.Start(ctx, "webhook "+p.Name(),
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attrProvider.String(p.Name()),
			semconv.HTTPRequestMethodKey.String(c.Method()),
			semconv.HTTPRoute("/webhooks/:provider"),
		))
	defer span.End()
	c.SetUserContext(ctx)
	err := s.webhook(c)
	status := c.Response().StatusCode()
	if err != nil {
		// The error handler answers it.
		p := classify(err)
		status = p.status
		span.RecordError(err)
		if status >= 500 {
			span.SetStatus(codes.Error, p.message)
		}
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	return err
}

// traceEvent records the verified event on the delivery span.
func (s *Server) traceEvent(c *fiber.Ctx, eventID, eventType string) {
	if s.cfg.Tracer == nil {
		return
	}
	trace.SpanFromContext(c.UserContext()).SetAttributes(attrEventID.String(eventID), attrEventType.String(eventType))
}

// traceOutcome records what became of an accepted delivery.
func (s *Server) traceOutcome(c *fiber.Ctx, outcome string) {
	if s.cfg.Tracer == nil {
		return
	}
	trace.SpanFromContext(c.UserContext()).SetAttributes(attrOutcome.String(outcome))
}

// traceRefusal records a refused delivery: its outcome, if it counts as
// one, and the answer's message; a 5xx marks the span failed.
func (s *Server) traceRefusal(c *fiber.Ctx, p problem) {
	if s.cfg.Tracer == nil {
		return
	}
	span := trace.SpanFromContext(c.UserContext())
	if p.outcome != "" {
		span.SetAttributes(attrOutcome.String(p.outcome))
	}
	span.SetAttributes(attribute.String("hookhub.refusal", p.message))
	if p.status >= 500 {
		span.SetStatus(codes.Error, p.message)
	}
}

// traceParent is the traceparent of the delivery span, archived and
// published with the event; "" without tracing.
func (s *Server) traceParent(c *fiber.Ctx) string {
	if s.cfg.Tracer == nil {
		return ""
	}
	return tracing.TraceParent(trace.SpanContextFromContext(c.UserContext()))
}
