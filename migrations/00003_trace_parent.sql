-- +goose Up
-- The W3C traceparent of the hub's span for the delivery, when the hub
-- traces (HUB_OTEL_ENABLED): the relay publishes it with the message, so a
-- subscriber continues the delivery's trace even when the relay publishes
-- long after the request (a crash, a NATS outage). NULL without tracing.
-- Nullable without a default: adding it rewrites nothing, and a hub of the
-- previous version keeps working against it during a rolling deploy.
ALTER TABLE webhook_events ADD COLUMN trace_parent TEXT;

-- +goose Down
ALTER TABLE webhook_events DROP COLUMN trace_parent;
