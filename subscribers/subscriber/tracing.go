package subscriber

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hookhub/hookhub/schema"
)

// TracerName is the instrumentation scope of the library's spans.
const TracerName = "github.com/hookhub/hookhub/subscribers/subscriber"

// Outcomes of a process span (hookhub.outcome) besides the outcome
// names of a settled message: the attempt failed and the message is
// redelivered later, or it was dead-lettered.
const (
	spanOutcomeRetry      = "retry"
	spanOutcomeDeadLetter = "dead_letter"
)

// tracerFrom returns tp's tracer, or nil when tp records nothing (nil or
// a no-op provider): then handleMessage starts no span at all.
func tracerFrom(tp trace.TracerProvider) trace.Tracer {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return nil
	}
	return tp.Tracer(TracerName)
}

// processSpan is the consumer span of one message; nil when tracing is
// off, and every method is a no-op then.
type processSpan struct{ span trace.Span }

// startProcess starts the span of one message, continuing the trace its
// W3C headers carry (the hub's publish span is its parent), and returns
// the context the handler gets.
func (s *Subscriber) startProcess(ctx context.Context, msg jetstream.Msg, subject string, meta *jetstream.MsgMetadata) (context.Context, *processSpan) {
	if s.tracer == nil {
		return ctx, nil
	}
	h := msg.Headers()
	ctx = propagation.TraceContext{}.Extract(ctx, schema.HeaderCarrier(h))
	ctx, span := s.tracer.Start(ctx, "process "+subject,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			semconv.MessagingSystemKey.String("nats"),
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingDestinationName(SanitizeText(msg.Subject(), 0)),
			semconv.MessagingConsumerGroupName(s.cfg.Name),
			attribute.String("hookhub.subscriber", s.cfg.Name),
			attribute.String("hookhub.provider", SanitizeText(h.Get(schema.HeaderProvider), maxKeyLen)),
			attribute.String("hookhub.event_id", SanitizeText(h.Get(schema.HeaderEventID), maxKeyLen)),
			attribute.String("hookhub.event_type", SanitizeText(h.Get(schema.HeaderEventType), maxKeyLen)),
			attribute.Int64("hookhub.stream_seq", int64(meta.Sequence.Stream)),
			attribute.Int64("hookhub.delivery_attempt", int64(meta.NumDelivered)),
		))
	return ctx, &processSpan{span}
}

// end records what became of the message and ends the span.
func (p *processSpan) end(outcome string, err error) {
	if p == nil {
		return
	}
	p.span.SetAttributes(attribute.String("hookhub.outcome", outcome))
	if err != nil {
		// OTLP carries strings as protobuf strings, which must be valid
		// UTF-8: an error holding anything else would fail the whole
		// export batch.
		text := errText(err)
		p.span.AddEvent(semconv.ExceptionEventName, trace.WithAttributes(
			semconv.ExceptionType(fmt.Sprintf("%T", err)),
			semconv.ExceptionMessage(text),
		))
		p.span.SetStatus(codes.Error, text)
	}
	p.span.End()
}
