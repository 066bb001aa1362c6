package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/internal/tracing"
	"github.com/hookhub/hookhub/schema"
)

// The relay path: a row committed with its delivery's traceparent and never
// published from memory (the hub crashed after the commit) is published by
// the claiming relay, whose publish span is the delivery span's child, and
// the message carries the publish span's context for the subscriber.
func TestRelayPublishCarriesTraceParent(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Minute)
	ctx := context.Background()
	delivery := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	id := uuid.Must(uuid.NewV7())
	_, err := b.store.Ingest(ctx, []hub.Delivery{{
		ArchiveID: id, Provider: "paddle", EventID: "evt_traced", EventType: "subscription.created",
		Body: []byte(`{"event_id":"evt_traced"}`), ReceivedAt: time.Now(), TraceParent: tracing.TraceParent(delivery),
	}})
	require.NoError(t, err)
	var archived string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT trace_parent FROM webhook_event_status WHERE id = $1`, id).Scan(&archived))
	require.Equal(t, tracing.TraceParent(delivery), archived)

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	r, err := relay.New(b.store, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute, Tracer: tp.Tracer("test")})
	require.NoError(t, err)
	require.NoError(t, r.Drain(ctx))

	spans := rec.Ended()
	require.Len(t, spans, 1)
	publish := spans[0]
	require.Equal(t, "publish paddle.subscription.created", publish.Name())
	require.Equal(t, trace.SpanKindProducer, publish.SpanKind())
	require.Equal(t, delivery.TraceID(), publish.SpanContext().TraceID())
	require.Equal(t, delivery.SpanID(), publish.Parent().SpanID())
	require.Equal(t, "Unset", publish.Status().Code.String())

	msg, err := b.stream.GetLastMsgForSubject(ctx, "paddle.subscription.created")
	require.NoError(t, err)
	require.Equal(t, tracing.TraceParent(publish.SpanContext()), msg.Header.Get(schema.HeaderTraceParent))
	require.Equal(t, "evt_traced", msg.Header.Get(schema.HeaderEventID))
}

// Without a Tracer, messages carry no trace headers, and a row without a
// traceparent archives NULL.
func TestRelayWithoutTracer(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Minute)
	ctx := context.Background()
	id := b.ingest(t, "evt_untraced")
	var archived *string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT trace_parent FROM webhook_event_status WHERE id = $1`, id).Scan(&archived))
	require.Nil(t, archived)
	r, err := relay.New(b.store, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	require.NoError(t, r.Drain(ctx))
	msg, err := b.stream.GetLastMsgForSubject(ctx, "paddle.subscription.created")
	require.NoError(t, err)
	require.Empty(t, msg.Header.Get(schema.HeaderTraceParent))
	require.Empty(t, msg.Header.Get(schema.HeaderTraceState))
}
