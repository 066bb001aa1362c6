-- +goose NO TRANSACTION
-- +goose Up
-- The events list's filters by type, and by provider and type (`hub events
-- list --type`, /admin/events, the console's Events page), page newest
-- first. Without an index holding event_type, Postgres walks the archive
-- from the newest row and filters: fast while matches are common, a read of
-- the whole archive when none match (a typo, a provider that does not send
-- that type): 190 ms on a million rows, ten times that on ten million.
--
-- The index serves a type alone and a provider with a type in created_at
-- order, so a page costs the rows it shows. The planner only chooses it
-- when it knows which (provider, type) pairs are rare or absent: provider
-- and type are far from independent (each provider has its own types),
-- which the extended statistics tell it (most common pairs, kept by
-- ANALYZE). BenchmarkEventsPage (hub/console) on 1,000,000 rows: a pair
-- that matches nothing 191 ms -> 0.8 ms; every other filter stays 0.5-3.5 ms.
--
-- Cost: one more B-tree entry per archived delivery (the archive is
-- append-only, so only inserts pay it).
--
-- Without a transaction: built CONCURRENTLY, so ingest goes on while it is
-- built on a large archive. Idempotent, so an interrupted run is run again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_webhook_events_type_provider_created_at
    ON webhook_events (event_type, provider, created_at, id);

CREATE STATISTICS IF NOT EXISTS st_webhook_events_provider_type (mcv)
    ON provider, event_type FROM webhook_events;

ANALYZE webhook_events;

-- +goose Down
DROP STATISTICS IF EXISTS st_webhook_events_provider_type;
DROP INDEX CONCURRENTLY IF EXISTS ix_webhook_events_type_provider_created_at;
