// Package credits is the credits subscriber: it grants credits to a
// customer when their Paddle subscription is created, by appending a row to
// the credits.ledger table, and serves balances.
//
// The amount is data.custom_data.credits when the event carries it, else
// the configured default grant (CREDITS_DEFAULT_GRANT, 100). The ledger has
// no unique constraint on the event: the subscriber library records each
// event in credits.processed_messages in the same transaction as its ledger
// row, so redeliveries, re-publications and replays add nothing.
package credits

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/internal/migrate"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Name is the subscriber's name: its consumer and its schema.
const Name = "credits"

// DefaultGrant is the amount granted when the event names none.
const DefaultGrant = 100

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrations are the credits schema's migrations, for Config.Migrations.
var Migrations = migrate.Dir(migrationsFS, "migrations")

// Options configure the handlers.
type Options struct {
	// DefaultGrant is the amount granted when the event's custom_data has
	// no credits. Zero means DefaultGrant.
	DefaultGrant int64
}

// Subject is the subject credits consumes.
const Subject = "paddle." + schema.PaddleSubscriptionCreated

// Register registers the credits handlers on sub, which must be named Name
// and have Migrations.
func Register(sub *subscriber.Subscriber, opts Options) error {
	if sub.Name() != Name {
		return fmt.Errorf("credits: the subscriber must be named %q (its tables live in that schema), got %q", Name, sub.Name())
	}
	opts.DefaultGrant = cmp.Or(opts.DefaultGrant, DefaultGrant)
	if opts.DefaultGrant < 0 {
		return fmt.Errorf("credits: negative default grant %d", opts.DefaultGrant)
	}
	sub.Handle(Subject, func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		return grant(ctx, tx, ev, opts.DefaultGrant)
	})
	return nil
}

func grant(ctx context.Context, tx pgx.Tx, ev subscriber.Event, defaultGrant int64) error {
	_, s, err := ev.PaddleSubscription()
	if err != nil {
		return err
	}
	// Ids are written as they are or not at all: one Postgres cannot
	// store (a NUL byte) makes the event permanent, not a retried failure.
	if err := subscriber.CheckStorable("data.id", s.ID); err != nil {
		return err
	}
	if s.CustomerID == "" {
		return subscriber.Permanentf("subscription %q has no customer_id", s.ID)
	}
	if err := subscriber.CheckStorable("data.customer_id", s.CustomerID); err != nil {
		return err
	}
	amount := defaultGrant
	if s.CustomData.Credits != nil {
		amount = *s.CustomData.Credits
	}
	if amount < 0 {
		return subscriber.Permanentf("subscription %q grants negative credits (%d)", s.ID, amount)
	}
	_, err = tx.Exec(ctx, `INSERT INTO credits.ledger (customer_id, amount, event_id, subscription_id) VALUES ($1, $2, $3, NULLIF($4, ''))`,
		s.CustomerID, amount, ev.EventID, s.ID)
	return err
}

// Balance is a customer's credit balance.
type Balance struct {
	CustomerID string `json:"customer_id"`
	Balance    int64  `json:"balance"`
	Entries    int64  `json:"entries"` // ledger rows
}

// GetBalance returns a customer's balance; a customer without ledger
// entries has a zero balance.
func GetBalance(ctx context.Context, db subscriber.DB, customerID string) (Balance, error) {
	b := Balance{CustomerID: customerID}
	err := db.QueryRow(ctx, `SELECT balance, entries FROM credits.balances WHERE customer_id = $1`, customerID).Scan(&b.Balance, &b.Entries)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return b, fmt.Errorf("balance of %s: %w", customerID, err)
	}
	return b, nil
}

// Routes adds GET /balances/{customer_id} to mux: the customer's balance as
// JSON ({"customer_id", "balance", "entries"}).
func Routes(mux *http.ServeMux, db subscriber.DB) {
	mux.HandleFunc("GET /balances/{customer_id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		b, err := GetBalance(r.Context(), db, r.PathValue("customer_id"))
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "cannot read the balance"})
			return
		}
		_ = json.NewEncoder(w).Encode(b)
	})
}
