package relay

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/internal/tracing"
	"github.com/hookhub/hookhub/schema"
)

// startPublish starts the producer span of one message, a child of the
// delivery's span (row.TraceParent; a new trace when the row has none), and
// writes its context into the message headers, so the subscriber's span is
// the publish span's child. Only called with a Tracer.
func (r *Relay) startPublish(ctx context.Context, row hub.OutboxRow, msg *nats.Msg) trace.Span {
	ctx = tracing.WithTraceParent(ctx, row.TraceParent)
	ctx, span := r.cfg.Tracer.Start(ctx, "publish "+msg.Subject,
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			semconv.MessagingSystemKey.String("nats"),
			semconv.MessagingOperationTypeSend,
			semconv.MessagingDestinationName(msg.Subject),
			attribute.String("hookhub.provider", row.Provider),
			attribute.String("hookhub.event_id", row.EventID),
			attribute.String("hookhub.event_type", row.EventType),
			attribute.String("hookhub.archive_id", row.ArchiveID.String()),
			attribute.Int("hookhub.publish_attempt", row.Attempts+1),
		))
	propagation.TraceContext{}.Inject(ctx, schema.HeaderCarrier(msg.Header))
	return span
}

// endPublishSpans ends the spans publish started, with the batch's
// results: a span ends when its whole batch is settled.
func endPublishSpans(spans []trace.Span, results []hub.PublishResult) {
	for i, span := range spans {
		if span == nil {
			continue
		}
		if res := results[i]; res.Seq > 0 {
			span.SetAttributes(attribute.Int64("hookhub.stream_seq", int64(res.Seq)))
		} else {
			span.SetStatus(codes.Error, res.Err)
		}
		span.End()
	}
}
