package schema

import (
	"maps"
	"slices"

	"github.com/nats-io/nats.go"
)

// The W3C Trace Context headers. When the hub traces (HUB_OTEL_ENABLED), a
// message carries the traceparent of the hub's publish span, whose parent
// is the span of the delivery that brought the event in; a subscriber that
// traces continues that trace. Absent when the hub does not trace.
const (
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate" // only when the hub's span has one
)

// HeaderCarrier adapts NATS message headers to OpenTelemetry's
// propagation.TextMapCarrier, for injecting and extracting span context:
//
//	propagation.TraceContext{}.Inject(ctx, schema.HeaderCarrier(msg.Header))
//	ctx = propagation.TraceContext{}.Extract(ctx, schema.HeaderCarrier(msg.Headers()))
//
// NATS header names are case-sensitive; the W3C names are lower case.
// Set needs a non-nil header (nats.Header{}).
type HeaderCarrier nats.Header

// Get returns the first value of key, or "".
func (c HeaderCarrier) Get(key string) string { return nats.Header(c).Get(key) }

// Set replaces the values of key with value.
func (c HeaderCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }

// Keys returns the header names, sorted.
func (c HeaderCarrier) Keys() []string {
	return slices.Sorted(maps.Keys(c))
}
