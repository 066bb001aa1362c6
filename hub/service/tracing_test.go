package service_test

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/internal/tracing"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

const e2eSecret = "pdl_ntfset_01tracetest000000000000000000_TraceTestSecret0000000000"

// The acceptance test of tracing: a trace started by the caller of an
// incoming webhook is visible end to end, through the subscriber's
// handler. The hub and the subscriber run in-process against real Postgres
// and JetStream, each with its own tracer provider and recorder, as two
// processes would; only the W3C headers join them. The delivery span
// (webhook) is the caller's child, the publish span the delivery's, the
// subscriber's process span the publish's, and the handler runs inside it.
func TestTraceEndToEnd(t *testing.T) {
	hubSpans := tracetest.NewSpanRecorder()
	hubTP := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(hubSpans))
	hub := testhub.New(t, service.Deps{TracerProvider: hubTP}, func(c *service.Config) { c.SetSecrets("paddle", e2eSecret) })
	pool, js, cfg := hub.Pool(), hub.JetStream(), hub.Config

	subSpans := tracetest.NewSpanRecorder()
	sub, err := subscriber.New(subscriber.Config{
		Name: "traced", Pool: pool, JetStream: js, Stream: cfg.Stream, Logger: slog.New(slog.DiscardHandler),
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(subSpans)),
	})
	require.NoError(t, err)
	handled := make(chan trace.SpanContext, 1)
	sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		// The handler's context is the process span's: its own work (here
		// a query) can be traced as part of the same trace.
		if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
			return err
		}
		handled <- trace.SpanContextFromContext(ctx)
		return nil
	})
	subCtx, stopSub := context.WithCancel(context.Background())
	subDone := make(chan error, 1)
	go func() { subDone <- sub.Run(subCtx) }()
	t.Cleanup(func() {
		stopSub()
		require.NoError(t, <-subDone)
	})

	// The provider's request carries a traceparent (as a caller behind a
	// traced gateway would).
	var caller trace.SpanContextConfig
	_, _ = rand.Read(caller.TraceID[:])
	_, _ = rand.Read(caller.SpanID[:])
	caller.TraceFlags = trace.FlagsSampled
	callerSC := trace.NewSpanContext(caller)
	postTraced(t, hub.URL, "evt_trace_e2e", tracing.TraceParent(callerSC))

	var inHandler trace.SpanContext
	select {
	case inHandler = <-handled:
	case <-time.After(30 * time.Second):
		t.Fatal("the subscriber's handler did not run within 30s")
	}
	var process sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		for _, s := range subSpans.Ended() {
			if s.Name() == "process paddle.subscription.created" {
				process = s
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "no process span")
	webhook := endedSpan(t, hubSpans, "webhook paddle")
	publish := endedSpan(t, hubSpans, "publish paddle.subscription.created")

	traceID := callerSC.TraceID()
	for _, s := range []sdktrace.ReadOnlySpan{webhook, publish, process} {
		require.Equal(t, traceID, s.SpanContext().TraceID(), "span %q is not in the caller's trace", s.Name())
		require.True(t, s.SpanContext().IsSampled())
	}
	require.Equal(t, callerSC.SpanID(), webhook.Parent().SpanID(), "webhook is the caller's child")
	require.Equal(t, webhook.SpanContext().SpanID(), publish.Parent().SpanID(), "publish is the webhook's child")
	require.Equal(t, publish.SpanContext().SpanID(), process.Parent().SpanID(), "process is the publish's child")
	require.True(t, process.Parent().IsRemote(), "process continues a trace from another process")
	require.Equal(t, process.SpanContext(), inHandler, "the handler runs in the process span")

	require.Equal(t, trace.SpanKindServer, webhook.SpanKind())
	require.Equal(t, trace.SpanKindProducer, publish.SpanKind())
	require.Equal(t, trace.SpanKindConsumer, process.SpanKind())
	wa := attrs(webhook)
	require.Equal(t, "paddle", wa["hookhub.provider"])
	require.Equal(t, "evt_trace_e2e", wa["hookhub.event_id"])
	require.Equal(t, "subscription.created", wa["hookhub.event_type"])
	require.Equal(t, "accepted", wa["hookhub.outcome"])
	require.Equal(t, "200", wa["http.response.status_code"])
	pa := attrs(process)
	require.Equal(t, "traced", pa["hookhub.subscriber"])
	require.Equal(t, "evt_trace_e2e", pa["hookhub.event_id"])
	require.Equal(t, "processed", pa["hookhub.outcome"])
	require.Equal(t, "nats", pa["messaging.system"])

	// The archive row keeps the delivery span's traceparent, for the relay
	// path and for forensics.
	var archived string
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT trace_parent FROM webhook_event_status WHERE provider = 'paddle' AND event_id = 'evt_trace_e2e'`).Scan(&archived))
	require.Equal(t, tracing.TraceParent(webhook.SpanContext()), archived)

	// And the message carries the publish span's.
	st, err := js.Stream(context.Background(), cfg.Stream)
	require.NoError(t, err)
	msg, err := st.GetLastMsgForSubject(context.Background(), "paddle.subscription.created")
	require.NoError(t, err)
	require.Equal(t, tracing.TraceParent(publish.SpanContext()), msg.Header.Get(schema.HeaderTraceParent))
}

func postTraced(t *testing.T, base, eventID, traceparent string) {
	t.Helper()
	req := signedPost(t, mustSender(t, "paddle", e2eSecret), base, eventID)
	req.Header.Set(schema.HeaderTraceParent, traceparent)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
}

func endedSpan(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		for _, s := range rec.Ended() {
			if s.Name() == name {
				found = s
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "no ended span %q", name)
	return found
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}
