package schema_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/schema"
)

var _ propagation.TextMapCarrier = schema.HeaderCarrier(nil)

// Span context injected into message headers comes back out of them, under
// the lower-case W3C names, next to the hub's own headers.
func TestHeaderCarrierRoundTrip(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
	})
	ts, err := trace.ParseTraceState("vendor=value")
	require.NoError(t, err)
	sc = sc.WithTraceState(ts)
	h := nats.Header{}
	h.Set(schema.HeaderEventID, "evt_1")
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), schema.HeaderCarrier(h))
	require.Equal(t, "00-0102030405060708090a0b0c0d0e0f10-0102030405060708-01", h.Get(schema.HeaderTraceParent))
	require.Equal(t, "vendor=value", h.Get(schema.HeaderTraceState))
	require.Equal(t, []string{schema.HeaderEventID, schema.HeaderTraceParent, schema.HeaderTraceState}, schema.HeaderCarrier(h).Keys())

	got := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), schema.HeaderCarrier(h)))
	require.Equal(t, sc.TraceID(), got.TraceID())
	require.Equal(t, sc.SpanID(), got.SpanID())
	require.Equal(t, "vendor=value", got.TraceState().String())

	// A message without them (a hub that does not trace) yields nothing.
	none := propagation.TraceContext{}.Extract(context.Background(), schema.HeaderCarrier(nats.Header{}))
	require.False(t, trace.SpanContextFromContext(none).IsValid())
}
