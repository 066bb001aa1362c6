-- +goose NO TRANSACTION
-- +goose Up
-- A stand-in for the first migration after v0.1.0, made by the rules of
-- docs/migrations.md (additive, no long lock, idempotent, with a down), for
-- TestRollingDeployAcrossNextMigration. Not one of the hub's migrations.
ALTER TABLE webhook_events ADD COLUMN IF NOT EXISTS next_probe TEXT;
ALTER TABLE processed_webhook_events ADD COLUMN IF NOT EXISTS next_probe INTEGER NOT NULL DEFAULT 0;
CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_webhook_events_next_probe
    ON webhook_events (created_at) WHERE next_probe IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS ix_webhook_events_next_probe;
ALTER TABLE processed_webhook_events DROP COLUMN IF EXISTS next_probe;
ALTER TABLE webhook_events DROP COLUMN IF EXISTS next_probe;
