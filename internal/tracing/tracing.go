package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Config configures Setup.
type Config struct {
	// Enabled turns tracing on; off, Setup returns a no-op provider.
	Enabled bool
	// ServiceName is the service.name resource attribute unless
	// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) names
	// one: "hookhub-hub" for the hub, the subscriber's name for a
	// subscriber service.
	ServiceName string
	// Logger receives export errors (the SDK's error handler is global, so
	// the last Setup that enables tracing in a process sets it). Nil leaves
	// the SDK's default, which logs with the log package.
	Logger *slog.Logger
	// Getenv reads the environment; default os.Getenv. Only the variables
	// Setup checks itself go through it: the SDK and the exporter read the
	// process environment.
	Getenv func(string) string
}

// Setup builds the tracer provider cfg asks for and returns it with the
// function that flushes and stops it (call it on shutdown; it is a no-op
// when tracing is off). With tracing off, nothing is started: no exporter,
// no goroutine.
func Setup(ctx context.Context, cfg Config) (trace.TracerProvider, func(context.Context) error, error) {
	off := func(context.Context) error { return nil }
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	env := func(name string) string { return strings.ToLower(strings.TrimSpace(getenv(name))) }
	if !cfg.Enabled || env("OTEL_SDK_DISABLED") == "true" {
		return noop.NewTracerProvider(), off, nil
	}
	switch exp := env("OTEL_TRACES_EXPORTER"); exp {
	case "", "otlp":
	case "none":
		return noop.NewTracerProvider(), off, nil
	default:
		return nil, nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: only otlp (OTLP over HTTP) or none is supported", exp)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		switch p := env(name); p {
		case "", "http/protobuf", "http/json":
		default:
			// The OTLP/HTTP exporter would quietly fall back to HTTP and
			// send to what is likely a gRPC port (4317).
			return nil, nil, fmt.Errorf("%s=%s: only http/protobuf or http/json is supported", name, p)
		}
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	tp := NewProvider(cfg.ServiceName, sdktrace.WithBatcher(exporter))
	if cfg.Logger != nil {
		log := cfg.Logger
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "error", err) }))
	}
	var once sync.Once
	var shutdownErr error
	return tp, func(ctx context.Context) error {
		once.Do(func() { shutdownErr = tp.Shutdown(ctx) })
		return shutdownErr
	}, nil
}

// NewProvider returns an SDK tracer provider with the resource Setup
// gives (serviceName unless the environment names the service) and opts
// (the span processors). The sampler comes from OTEL_TRACES_SAMPLER,
// default parentbased_always_on.
func NewProvider(serviceName string, opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithResource(Resource(serviceName))}, opts...)...)
}

// Resource is the SDK's default resource (telemetry.sdk.*, and what
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME say) with service.name
// defaulting to serviceName instead of unknown_service.
func Resource(serviceName string) *resource.Resource {
	res := resource.Default()
	if serviceName == "" {
		return res
	}
	// The environment's attributes win over the default name.
	withName, err := resource.Merge(res, resource.NewSchemaless(semconv.ServiceName(serviceName)))
	if err != nil {
		return res
	}
	if withEnv, err := resource.Merge(withName, resource.Environment()); err == nil {
		return withEnv
	}
	return withName
}

// Tracer returns tp's tracer for the instrumentation scope name, or nil
// when tp is nil or a no-op provider: the hub's components take a nil
// Tracer as "tracing off" and skip even the context work a no-op span
// would cost.
func Tracer(tp trace.TracerProvider, name string) trace.Tracer {
	if !Enabled(tp) {
		return nil
	}
	return tp.Tracer(name)
}

// Enabled reports whether tp records anything: false for nil and for the
// no-op providers.
func Enabled(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return false
	}
	return true
}

// TraceParent renders sc as a W3C traceparent header value, or "" when sc
// is not valid.
func TraceParent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c[traceparentHeader]
}

// WithTraceParent returns ctx carrying the remote span context the
// traceparent value describes, so that a span started from it continues
// that trace; ctx itself when the value is empty or invalid.
func WithTraceParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{traceparentHeader: traceparent})
}

const traceparentHeader = "traceparent"
