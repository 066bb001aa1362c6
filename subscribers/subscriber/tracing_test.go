package subscriber_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Each message gets a consumer span that continues the trace of its W3C
// headers (or starts one when it has none), whose context the handler
// gets, and that records what became of the message: processed, retried,
// dead-lettered.
func TestProcessSpans(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "traced"
	rec := tracetest.NewSpanRecorder()
	sub := newSub(t, env, name, func(c *subscriber.Config) {
		c.MaxDeliver = 2
		c.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	})
	inHandler := make(chan trace.SpanContext, 10)
	sub.Handle("paddle.subscription.created", func(ctx context.Context, _ pgx.Tx, ev subscriber.Event) error {
		inHandler <- trace.SpanContextFromContext(ctx)
		if ev.EventID == "evt_bad" {
			return errors.New("cannot handle it")
		}
		return nil
	})
	subtest.Start(t, sub)

	// A message from a hub that traces: its publish span is the parent.
	publish := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	m := event(t, "evt_traced")
	h := nats.Header{}
	for k, v := range metadataHeader(t, m) {
		h[k] = v
	}
	h.Set(schema.HeaderTraceParent, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	env.PublishRaw(t, &nats.Msg{Subject: "paddle.subscription.created", Data: m.Body, Header: h})
	// One from a hub that does not, and one whose handler fails.
	env.Publish(t, event(t, "evt_untraced"))
	env.Publish(t, event(t, "evt_bad"))

	eventually(t, func() bool { return len(rec.Ended()) == 4 }, "process spans") // evt_bad: two attempts
	byEvent := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		require.Equal(t, "process paddle.subscription.created", s.Name())
		require.Equal(t, trace.SpanKindConsumer, s.SpanKind())
		a := map[string]string{}
		for _, kv := range s.Attributes() {
			a[string(kv.Key)] = kv.Value.Emit()
		}
		require.Equal(t, name, a["hookhub.subscriber"])
		require.Equal(t, name, a["messaging.consumer.group.name"])
		byEvent[a["hookhub.event_id"]+" "+a["hookhub.outcome"]] = append(byEvent[a["hookhub.event_id"]+" "+a["hookhub.outcome"]], s)
	}
	traced := byEvent["evt_traced processed"]
	require.Len(t, traced, 1)
	require.Equal(t, publish.TraceID(), traced[0].SpanContext().TraceID())
	require.Equal(t, publish.SpanID(), traced[0].Parent().SpanID())
	require.True(t, traced[0].Parent().IsRemote())

	untraced := byEvent["evt_untraced processed"]
	require.Len(t, untraced, 1)
	require.False(t, untraced[0].Parent().IsValid(), "no headers: a new trace")

	require.Len(t, byEvent["evt_bad retry"], 1)
	require.Len(t, byEvent["evt_bad dead_letter"], 1)
	for _, s := range append(byEvent["evt_bad retry"], byEvent["evt_bad dead_letter"]...) {
		require.Equal(t, codes.Error, s.Status().Code)
		require.Equal(t, "cannot handle it", s.Status().Description)
	}

	// Every handler call ran inside its message's span.
	close(inHandler)
	var ctxs []trace.SpanContext
	for sc := range inHandler {
		ctxs = append(ctxs, sc)
	}
	var spanCtxs []trace.SpanContext
	for _, s := range rec.Ended() {
		spanCtxs = append(spanCtxs, s.SpanContext())
	}
	require.ElementsMatch(t, spanCtxs, ctxs)
}

// Nil or a no-op provider: no tracer at all, and a handler's context
// carries no span.
func TestProcessWithoutTracing(t *testing.T) {
	env := subtest.NewParallel(t)
	env.Publish(t, event(t, "evt_plain")) // each subscriber's consumer delivers it
	for _, tp := range []trace.TracerProvider{nil, noop.NewTracerProvider()} {
		name := "untraced_nil"
		if tp != nil {
			name = "untraced_noop"
		}
		sub := newSub(t, env, name, func(c *subscriber.Config) { c.TracerProvider = tp })
		got := make(chan trace.SpanContext, 1)
		sub.Handle("paddle.subscription.created", func(ctx context.Context, _ pgx.Tx, _ subscriber.Event) error {
			got <- trace.SpanContextFromContext(ctx)
			return nil
		})
		subtest.Start(t, sub)
		require.False(t, (<-got).IsValid())
	}
}

func metadataHeader(t *testing.T, m subtest.Message) nats.Header {
	t.Helper()
	return schema.Metadata{
		MsgID: schema.MsgID(m.Provider, m.EventID), EventID: m.EventID, Provider: m.Provider,
		EventType: m.EventType, ArchiveID: "00000000-0000-0000-0000-000000000001", ReceivedAt: m.ReceivedAt,
	}.Header()
}
