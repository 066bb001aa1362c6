package tracing_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/hookhub/hookhub/internal/tracing"
)

// Off, Setup builds nothing: a no-op provider, no goroutine, and Tracer
// returns nil so the hub skips even the context work.
func TestSetupOff(t *testing.T) {
	before := runtime.NumGoroutine()
	tp, shutdown, err := tracing.Setup(context.Background(), tracing.Config{ServiceName: "hookhub-hub"})
	require.NoError(t, err)
	require.IsType(t, noop.TracerProvider{}, tp)
	require.False(t, tracing.Enabled(tp))
	require.Nil(t, tracing.Tracer(tp, "x"))
	require.Nil(t, tracing.Tracer(nil, "x"))
	require.LessOrEqual(t, runtime.NumGoroutine(), before, "no goroutine started") // earlier tests' may still be ending
	require.NoError(t, shutdown(context.Background()))
}

// The standard switches turn an enabled configuration off again.
func TestSetupStandardOffSwitches(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"sdk disabled":  {"OTEL_SDK_DISABLED": "true"},
		"exporter none": {"OTEL_TRACES_EXPORTER": "none"},
	} {
		t.Run(name, func(t *testing.T) {
			tp, _, err := tracing.Setup(context.Background(), tracing.Config{Enabled: true, Getenv: mapEnv(env)})
			require.NoError(t, err)
			require.False(t, tracing.Enabled(tp))
		})
	}
}

// What the OTLP/HTTP exporter cannot do is refused, not quietly changed.
func TestSetupRefusesUnsupportedExporters(t *testing.T) {
	for _, env := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
	} {
		_, _, err := tracing.Setup(context.Background(), tracing.Config{Enabled: true, Getenv: mapEnv(env)})
		require.Error(t, err)
		for name := range env {
			require.Contains(t, err.Error(), name)
		}
	}
}

// Enabled, spans reach an OTLP/HTTP collector at the standard endpoint
// variable, with the default service name; shutdown flushes them.
func TestSetupExportsOverOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []*collector.ExportTraceServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != "/v1/traces" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var req collector.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, &req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")

	tp, shutdown, err := tracing.Setup(context.Background(), tracing.Config{Enabled: true, ServiceName: "hookhub-hub"})
	require.NoError(t, err)
	require.True(t, tracing.Enabled(tp))
	_, span := tracing.Tracer(tp, "test").Start(context.Background(), "webhook paddle")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, shutdown(ctx))
	require.NoError(t, shutdown(ctx), "a second shutdown is harmless")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 1)
	rs := got[0].GetResourceSpans()
	require.Len(t, rs, 1)
	attrs := map[string]string{}
	for _, kv := range rs[0].GetResource().GetAttributes() {
		attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	require.Equal(t, "hookhub-hub", attrs["service.name"])
	require.Equal(t, "test", attrs["deployment.environment.name"])
	require.Equal(t, "webhook paddle", rs[0].GetScopeSpans()[0].GetSpans()[0].GetName())
}

// OTEL_SERVICE_NAME, and service.name in OTEL_RESOURCE_ATTRIBUTES, win
// over the default name.
func TestResourceServiceName(t *testing.T) {
	name := func() string {
		v, _ := tracing.Resource("credits").Set().Value(attribute.Key("service.name"))
		return v.AsString()
	}
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	require.Equal(t, "credits", name())
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attributes")
	require.Equal(t, "from-attributes", name())
	t.Setenv("OTEL_SERVICE_NAME", "credits-eu")
	require.Equal(t, "credits-eu", name())
}

func TestTraceParentRoundTrip(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	tp := tracing.TraceParent(sc)
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tp)
	back := trace.SpanContextFromContext(tracing.WithTraceParent(context.Background(), tp))
	require.True(t, back.IsRemote())
	require.Equal(t, sc.TraceID(), back.TraceID())
	require.Equal(t, sc.SpanID(), back.SpanID())
	require.True(t, back.IsSampled())

	require.Empty(t, tracing.TraceParent(trace.SpanContext{}))
	ctx := context.Background()
	require.Equal(t, ctx, tracing.WithTraceParent(ctx, ""))
	require.False(t, trace.SpanContextFromContext(tracing.WithTraceParent(ctx, "garbage")).IsValid())
}

func mapEnv(env map[string]string) func(string) string {
	return func(name string) string { return env[name] }
}
