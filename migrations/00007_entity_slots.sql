-- +goose NO TRANSACTION
-- +goose Up
-- The entity look-up from the archive row itself: one partial expression
-- index per entity slot (webhook_events.entities[1..8], hub.MaxEntities),
-- on the slot's id ("<kind>:<id>" after the first ':'), the archive's
-- cursor (created_at, id), and only for first deliveries (duplicates were
-- never indexed). A look-up merges the eight ordered scans (hub/store,
-- listCandidates). It replaces the rows of webhook_event_entities that
-- 00002 added: an entity costs one B-tree entry of the archive row instead
-- of a heap tuple and its primary-key entry (docs/performance.md,
-- "Entities").
--
-- Carry-over: every hub since 00002 writes an event's entities on its
-- archive row (the index table only repeats them), so building the indexes
-- indexes every event already archived and every one the hubs of the
-- previous release go on archiving during the rolling deploy. The table
-- stays: those hubs write and read it until they are replaced; purge
-- still deletes its rows with their archive rows; a later release drops
-- it.
--
-- No long lock: CREATE INDEX CONCURRENTLY takes no lock that blocks
-- ingest. Outside a transaction (NO TRANSACTION), each statement
-- idempotent: an interrupted run leaves an INVALID index, which the next
-- run drops (the first statement) and builds again.

-- +goose StatementBegin
DO $$
DECLARE ix regclass;
BEGIN
    FOR ix IN SELECT i.indexrelid::regclass FROM pg_index i
              WHERE NOT i.indisvalid AND i.indexrelid::regclass::text IN ('ix_webhook_events_entity_1', 'ix_webhook_events_entity_2', 'ix_webhook_events_entity_3', 'ix_webhook_events_entity_4', 'ix_webhook_events_entity_5', 'ix_webhook_events_entity_6', 'ix_webhook_events_entity_7', 'ix_webhook_events_entity_8')
    LOOP
        EXECUTE format('DROP INDEX %s', ix);
    END LOOP;
END
$$;
-- +goose StatementEnd

CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_webhook_events_entity_1 ON webhook_events
    ((substr(entities[1], strpos(entities[1], ':') + 1)), created_at, id)
    WHERE entities[1] IS NOT NULL AND processing_status IS DISTINCT FROM 'SKIPPED';

CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_webhook_events_entity_2 ON webhook_events
    ((substr(entities[2], strpos(entities[2], ':') + 1)), created_at, id)
    WHERE entities[2] IS NOT NULL AND processing_status IS DISTINCT FROM 'SKIPPED';

CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_webhook_events_entity_3 ON webhook_events
    ((substr(entities[3], strpos(entities[3], ':') + 1)), created_at, id)
    WHERE entities[3] IS NOT NULL AND processing_status IS DISTINCT FROM 'SKIPPED';

CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_webhook_events_entity_4 ON webhook_events
    ((substr(entities[4], strpos(entities[4], ':') + 1)), created_at, id)
    WHERE entities[4] IS NOT NULL AND processing_status IS DISTINCT FROM 'SKIPPED';

CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_webhook_events_entity_5 ON webhook_events
    ((substr(entities[5], strpos(entities[5], ':') + 1)), created_at, id)
    WHERE entities[5] IS NOT NULL AND processing_status IS DISTINCT FROM 'SKIPPED';

CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_webhook_events_entity_6 ON webhook_events
    ((substr(entities[6], strpos(entities[6], ':') + 1)), created_at, id)
    WHERE entities[6] IS NOT NULL AND processing_status IS DISTINCT FROM 'SKIPPED';

CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_webhook_events_entity_7 ON webhook_events
    ((substr(entities[7], strpos(entities[7], ':') + 1)), created_at, id)
    WHERE entities[7] IS NOT NULL AND processing_status IS DISTINCT FROM 'SKIPPED';

CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_webhook_events_entity_8 ON webhook_events
    ((substr(entities[8], strpos(entities[8], ':') + 1)), created_at, id)
    WHERE entities[8] IS NOT NULL AND processing_status IS DISTINCT FROM 'SKIPPED';

-- +goose Down
-- The index rows of the events archived since the Up (the hubs of this
-- release write none), so that the hubs of the previous release find every
-- event by entity again: a scan of the archive's first deliveries that
-- have entities, without a lock that blocks ingest. Then the indexes go.
INSERT INTO webhook_event_entities (entity_id, created_at, archive_id)
SELECT DISTINCT substr(e, strpos(e, ':') + 1), a.created_at, a.id
FROM webhook_events a CROSS JOIN unnest(a.entities) AS e
WHERE a.entities IS NOT NULL AND a.processing_status IS DISTINCT FROM 'SKIPPED'
ON CONFLICT DO NOTHING;
DROP INDEX CONCURRENTLY IF EXISTS ix_webhook_events_entity_1;
DROP INDEX CONCURRENTLY IF EXISTS ix_webhook_events_entity_2;
DROP INDEX CONCURRENTLY IF EXISTS ix_webhook_events_entity_3;
DROP INDEX CONCURRENTLY IF EXISTS ix_webhook_events_entity_4;
DROP INDEX CONCURRENTLY IF EXISTS ix_webhook_events_entity_5;
DROP INDEX CONCURRENTLY IF EXISTS ix_webhook_events_entity_6;
DROP INDEX CONCURRENTLY IF EXISTS ix_webhook_events_entity_7;
DROP INDEX CONCURRENTLY IF EXISTS ix_webhook_events_entity_8;
