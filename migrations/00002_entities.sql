-- +goose Up
-- Entities: the business objects an event is about, as its
-- provider names them (hub.Entity), so that "every event about cus_123,
-- newest first" is an index lookup.
--
-- Additive, for rolling deploys (docs/migrations.md): a nullable column
-- without a default (a catalog change, no rewrite), a new table, and the
-- view with one column appended. Hubs of v0.1.0 keep ingesting on this
-- schema: their rows have no entities and are not indexed.
--
-- The archive row's entities, each "<kind>:<id>" (the kind has no ':'; split
-- at the first one); NULL when the event has none. Written once with the
-- row (DESIGN invariant 8).
ALTER TABLE webhook_events ADD COLUMN IF NOT EXISTS entities TEXT[];

-- The lookup: one row per entity of each archived first delivery
-- (duplicates are not indexed), written by the ingest statement with its
-- archive row. Found by id alone, newest first, with the archive's cursor
-- (created_at, archive id): its primary key is the index. Purged with the
-- archive rows it points to.
CREATE TABLE IF NOT EXISTS webhook_event_entities (
    entity_id TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    archive_id UUID NOT NULL,
    PRIMARY KEY (entity_id, created_at, archive_id)
);

-- The view as 00001 made it, with entities appended.
CREATE OR REPLACE VIEW webhook_event_status AS
SELECT a.id, a.provider, a.event_id, a.event_type, a.payload, a.signature,
       COALESCE(a.processing_status,
                CASE WHEN p.stream_seq IS NOT NULL THEN 'PROCESSED'
                     WHEN p.next_attempt_at IS NULL AND p.publish_error IS NOT NULL THEN 'FAILED'
                     ELSE 'PENDING' END)::VARCHAR(32) AS processing_status,
       COALESCE(a.error_message, p.publish_error) AS error_message,
       a.created_at, a.body, a.signed_at, a.occurred_at,
       COALESCE(p.publish_attempts, 0) AS publish_attempts,
       p.next_attempt_at,
       p.first_attempt_at,
       p.published_at,
       p.stream_seq,
       a.trace_parent,
       a.origin,
       a.entities
FROM webhook_events a
LEFT JOIN processed_webhook_events p ON p.id = a.id AND a.processing_status IS NULL;

-- +goose Down
-- The view as 00001 made it (a view cannot lose a column in place).
DROP VIEW IF EXISTS webhook_event_status;
CREATE VIEW webhook_event_status AS
SELECT a.id, a.provider, a.event_id, a.event_type, a.payload, a.signature,
       COALESCE(a.processing_status,
                CASE WHEN p.stream_seq IS NOT NULL THEN 'PROCESSED'
                     WHEN p.next_attempt_at IS NULL AND p.publish_error IS NOT NULL THEN 'FAILED'
                     ELSE 'PENDING' END)::VARCHAR(32) AS processing_status,
       COALESCE(a.error_message, p.publish_error) AS error_message,
       a.created_at, a.body, a.signed_at, a.occurred_at,
       COALESCE(p.publish_attempts, 0) AS publish_attempts,
       p.next_attempt_at,
       p.first_attempt_at,
       p.published_at,
       p.stream_seq,
       a.trace_parent,
       a.origin
FROM webhook_events a
LEFT JOIN processed_webhook_events p ON p.id = a.id AND a.processing_status IS NULL;
DROP TABLE IF EXISTS webhook_event_entities;
ALTER TABLE webhook_events DROP COLUMN IF EXISTS entities;
