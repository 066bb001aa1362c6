// Package tracing sets up OpenTelemetry tracing for the hub and the
// subscriber services. It is off by default: Setup then returns a no-op
// provider, and the hub and the subscriber library start no span at all
// (Tracer returns nil for it), so a disabled hub pays nothing per request.
//
// Enabled (HUB_OTEL_ENABLED=true for the hub, <NAME>_OTEL_ENABLED=true for a
// subscriber service), spans are batched and sent with OTLP over HTTP
// (protobuf, or JSON with OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json). The
// standard variables tune it: OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS,
// _TIMEOUT, _COMPRESSION, _CERTIFICATE, ... (read by the exporter),
// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (read by the SDK),
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none turn tracing off again. A standard variable alone
// never turns tracing on: a cluster-wide OTEL_EXPORTER_OTLP_ENDPOINT meant
// for other programs does not make the hub export.
//
// Context crosses processes as W3C Trace Context (traceparent, tracestate):
// in the HTTP headers of an incoming delivery, and in the NATS headers of
// the message the hub publishes (schema.HeaderCarrier). The propagator is
// always propagation.TraceContext; OTEL_PROPAGATORS is not read, since the
// message headers are part of the hub's contract with its subscribers.
//
// The package depends on nothing of the hub, so the subscriber services
// use it too.
package tracing
