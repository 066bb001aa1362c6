-- +goose Up
-- Append-only credit ledger: one row per grant. There is deliberately no
-- unique constraint on event_id: exactly-once comes from the subscriber
-- library (credits.processed_messages in the same transaction), and a test
-- counting rows per event proves it.
CREATE TABLE credits.ledger (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer_id     TEXT NOT NULL,
    amount          BIGINT NOT NULL,
    event_id        TEXT NOT NULL,
    subscription_id TEXT,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
CREATE INDEX ix_ledger_customer_id ON credits.ledger (customer_id);
CREATE INDEX ix_ledger_event_id ON credits.ledger (event_id);

-- The balance of every customer with at least one ledger entry.
CREATE VIEW credits.balances AS
SELECT customer_id,
       SUM(amount)::BIGINT AS balance,
       COUNT(*)::BIGINT    AS entries,
       MAX(created_at)     AS updated_at
FROM credits.ledger
GROUP BY customer_id;

-- +goose Down
DROP VIEW credits.balances;
DROP TABLE credits.ledger;
