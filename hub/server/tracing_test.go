package server_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/server"
	"github.com/hookhub/hookhub/internal/tracing"
)

const (
	traceTestSecret = "pdl_ntfset_01test0000000000000000000000_TestSecretForHookhubTests00"
	incomingTrace   = "4bf92f3577b34da6a3ce929d0e0e4736"
	incomingSpan    = "00f067aa0ba902b7"
)

type tracedServer struct {
	srv       *server.Server
	recorder  *tracetest.SpanRecorder
	sender    provider.Signer
	committed chan hub.Delivery
}

func newTracedServer(t *testing.T) *tracedServer {
	t.Helper()
	p, err := provider.New("paddle", []string{traceTestSecret}, provider.Options{Tolerance: time.Hour})
	require.NoError(t, err)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := prometheus.NewRegistry()
	ts := &tracedServer{recorder: rec, sender: p.(provider.Signer), committed: make(chan hub.Delivery, 10)}
	ts.srv, err = server.New(server.Config{
		Providers: []provider.Provider{p},
		Ingester:  memoryIngester{},
		Ready:     func(context.Context) error { return nil },
		Metrics:   metrics.New(reg),
		Relay:     hub.EnqueueFunc(func(d hub.Delivery) { ts.committed <- d }),
		Tracer:    tracing.Tracer(tp, "test"),
	})
	require.NoError(t, err)
	return ts
}

func (ts *tracedServer) post(t *testing.T, eventID string, sign bool, traceparent string) *http.Response {
	t.Helper()
	now := time.Now()
	body, err := samples.Body(ts.sender.Name(), eventID, "subscription.created", nil, now)
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, "/webhooks/paddle", bytes.NewReader(body))
	if sign {
		hdr, _, err := ts.sender.Sign(eventID, "", body, now)
		require.NoError(t, err)
		req.Header = hdr
	}
	if traceparent != "" {
		req.Header.Set("Traceparent", traceparent)
	}
	resp, err := ts.srv.App().Test(req, -1)
	require.NoError(t, err)
	return resp
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// A delivery's server span continues the caller's trace, records what
// became of the delivery, and its traceparent is what the hub archives
// and publishes.
func TestDeliverySpan(t *testing.T) {
	ts := newTracedServer(t)
	resp := ts.post(t, "evt_traced", true, "00-"+incomingTrace+"-"+incomingSpan+"-01")
	require.Equal(t, http.StatusOK, resp.StatusCode)

	spans := ts.recorder.Ended()
	require.Len(t, spans, 1)
	span := spans[0]
	require.Equal(t, "webhook paddle", span.Name())
	require.Equal(t, trace.SpanKindServer, span.SpanKind())
	require.Equal(t, incomingTrace, span.SpanContext().TraceID().String())
	require.Equal(t, incomingSpan, span.Parent().SpanID().String())
	require.True(t, span.Parent().IsRemote())
	a := attrs(span)
	require.Equal(t, "paddle", a["hookhub.provider"].AsString())
	require.Equal(t, "evt_traced", a["hookhub.event_id"].AsString())
	require.Equal(t, "subscription.created", a["hookhub.event_type"].AsString())
	require.Equal(t, metrics.OutcomeAccepted, a["hookhub.outcome"].AsString())
	require.EqualValues(t, http.StatusOK, a["http.response.status_code"].AsInt64())

	d := <-ts.committed
	require.Equal(t, tracing.TraceParent(span.SpanContext()), d.TraceParent)
	require.Contains(t, d.TraceParent, incomingTrace)
}

// Without a traceparent the delivery starts a trace; a refused delivery is
// traced too, with its outcome and answer.
func TestDeliverySpanWithoutParentAndRefused(t *testing.T) {
	ts := newTracedServer(t)
	require.Equal(t, http.StatusOK, ts.post(t, "evt_root", true, "").StatusCode)
	require.Equal(t, http.StatusUnauthorized, ts.post(t, "evt_unsigned", false, "").StatusCode)
	require.Equal(t, http.StatusNotFound, func() int {
		resp, err := ts.srv.App().Test(httptest.NewRequest(http.MethodPost, "/webhooks/nope", nil), -1)
		require.NoError(t, err)
		return resp.StatusCode
	}(), "an unknown provider is not a delivery: no span")

	spans := ts.recorder.Ended()
	require.Len(t, spans, 2)
	require.False(t, spans[0].Parent().IsValid())
	d := <-ts.committed
	require.Equal(t, tracing.TraceParent(spans[0].SpanContext()), d.TraceParent)

	refused := attrs(spans[1])
	require.Equal(t, metrics.OutcomeInvalidSignature, refused["hookhub.outcome"].AsString())
	require.EqualValues(t, http.StatusUnauthorized, refused["http.response.status_code"].AsInt64())
	require.Equal(t, provider.ErrInvalidSignature.Error(), refused["hookhub.refusal"].AsString())
	_, hasEvent := refused["hookhub.event_id"]
	require.False(t, hasEvent, "an unverified body names no event")
}

// BenchmarkRequestPathTraced is BenchmarkRequestPath's paddle case with
// tracing on (every span sampled and recorded, none exported): the cost
// of a span per delivery. Compare with BenchmarkRequestPath/paddle, which
// runs with tracing off.
func BenchmarkRequestPathTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discardProcessor{}))
	benchmarkWebhook(b, tracing.Tracer(tp, "bench"), "paddle", traceTestSecret, "subscription.created",
		map[string]string{"traceparent": "00-" + incomingTrace + "-" + incomingSpan + "-01"})
}

// discardProcessor records spans and drops them when they end.
type discardProcessor struct{}

func (discardProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discardProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discardProcessor) Shutdown(context.Context) error                  { return nil }
func (discardProcessor) ForceFlush(context.Context) error                { return nil }
