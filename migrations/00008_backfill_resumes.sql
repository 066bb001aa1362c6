-- +goose Up
-- How many times later runs continued a provider's unfinished backfill: a
-- periodic run continues one a bounded number of times, then starts over on
-- the current window (a page the API keeps failing must not wedge the
-- provider's backfill forever). ADD COLUMN with a constant default rewrites
-- nothing; a hub of the previous version never names it.
ALTER TABLE backfill_checkpoints ADD COLUMN IF NOT EXISTS resumes INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE backfill_checkpoints DROP COLUMN IF EXISTS resumes;
