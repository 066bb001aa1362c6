-- +goose Up
-- The plan of every Paddle subscription, from subscription.created and
-- subscription.updated; subscription.canceled sets it to 'free'. The
-- subscriber's ordering helper (downgrade.entity_versions, keyed by
-- subscription) keeps a late, older event from flipping it back;
-- last_occurred_at shows the provider time of the event applied last.
CREATE TABLE downgrade.accounts (
    subscription_id  TEXT PRIMARY KEY,
    customer_id      TEXT NOT NULL,
    plan             TEXT NOT NULL,
    status           TEXT NOT NULL,
    last_occurred_at TIMESTAMPTZ NOT NULL,
    last_event_id    TEXT NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
CREATE INDEX ix_accounts_customer_id ON downgrade.accounts (customer_id);

-- One row per downgrade to 'free'. No unique constraint on event_id:
-- exactly-once comes from the subscriber library, and a test counting rows
-- per event proves it.
CREATE TABLE downgrade.plan_changes (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subscription_id TEXT NOT NULL,
    customer_id     TEXT NOT NULL,
    from_plan       TEXT NOT NULL,
    to_plan         TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
CREATE INDEX ix_plan_changes_subscription_id ON downgrade.plan_changes (subscription_id);
CREATE INDEX ix_plan_changes_event_id ON downgrade.plan_changes (event_id);

-- +goose Down
DROP TABLE downgrade.plan_changes;
DROP TABLE downgrade.accounts;
