// Package downgrade is the downgrade subscriber: it keeps the plan of every
// Paddle subscription in downgrade.accounts and downgrades it to "free"
// when the subscription is canceled, recording the change in
// downgrade.plan_changes.
//
//   - paddle.subscription.created and paddle.subscription.updated set the
//     plan from data.custom_data.plan ("paid" when absent) and the status;
//     an update whose status is "canceled" downgrades like a cancellation.
//   - paddle.subscription.canceled sets the plan to "free" and, if it was
//     not free already, appends a plan_changes row (from_plan, to_plan,
//     event_id).
//
// Every event goes through subscriber.ApplyIfNewer keyed by the
// subscription id, with the provider's occurred_at: an event older than
// (or as old as) the last one applied to the subscription is recorded as
// skipped_stale and changes nothing, so a late subscription.updated never
// re-activates a canceled subscription and a late subscription.canceled
// never downgrades a newer state.
package downgrade

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/internal/migrate"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Name is the subscriber's name: its consumer and its schema.
const Name = "downgrade"

// Subjects the downgrade subscriber consumes.
const (
	SubjectCreated  = "paddle." + schema.PaddleSubscriptionCreated
	SubjectUpdated  = "paddle." + schema.PaddleSubscriptionUpdated
	SubjectCanceled = "paddle." + schema.PaddleSubscriptionCanceled
)

// Plans.
const (
	PlanFree    = "free"
	PlanDefault = "paid" // when custom_data has no plan
)

// EntityKind is the ordering helper's kind for subscriptions.
const EntityKind = "paddle.subscription"

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrations are the downgrade schema's migrations, for Config.Migrations.
var Migrations = migrate.Dir(migrationsFS, "migrations")

// Register registers the downgrade handlers on sub, which must be named
// Name and have Migrations.
func Register(sub *subscriber.Subscriber) error {
	if sub.Name() != Name {
		return fmt.Errorf("downgrade: the subscriber must be named %q (its tables live in that schema), got %q", Name, sub.Name())
	}
	sub.Handle(SubjectCreated, apply)
	sub.Handle(SubjectUpdated, apply)
	sub.Handle(SubjectCanceled, apply)
	return nil
}

func apply(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
	pe, s, err := ev.PaddleSubscription()
	if err != nil {
		return err
	}
	if s.ID == "" || s.CustomerID == "" {
		return subscriber.Permanentf("subscription event without id or customer_id (id %q, customer %q)", s.ID, s.CustomerID)
	}
	// Values are stored as they are or not at all: one Postgres cannot
	// store (a NUL byte) makes the event permanent, not a retried failure.
	for _, f := range []struct{ name, value string }{
		{"data.id", s.ID}, {"data.customer_id", s.CustomerID}, {"data.status", s.Status}, {"data.custom_data.plan", s.CustomData.Plan},
	} {
		if err := subscriber.CheckStorable(f.name, f.value); err != nil {
			return err
		}
	}
	at := pe.OccurredAt
	if at.IsZero() {
		at = ev.OccurredAt // the hub's Hub-Occurred-At, from the same field
	}
	ok, err := subscriber.ApplyIfNewer(ctx, tx, EntityKind, s.ID, at)
	if err != nil {
		return err
	}
	if !ok {
		return subscriber.ErrStale
	}

	plan := cmp.Or(s.CustomData.Plan, PlanDefault)
	canceled := ev.EventType == schema.PaddleSubscriptionCanceled || s.Status == "canceled"
	if canceled {
		plan = PlanFree
	}
	status := s.Status
	if status == "" && canceled {
		status = "canceled"
	}

	var fromPlan string
	err = tx.QueryRow(ctx, `SELECT plan FROM downgrade.accounts WHERE subscription_id = $1 FOR UPDATE`, s.ID).Scan(&fromPlan)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// Canceled before we saw it created: it was on the plan the event
		// names, or the default.
		fromPlan = s.CustomData.Plan
		if fromPlan == "" || fromPlan == PlanFree {
			fromPlan = PlanDefault
		}
	case err != nil:
		return err
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO downgrade.accounts (subscription_id, customer_id, plan, status, last_occurred_at, last_event_id, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, NOW())
		ON CONFLICT (subscription_id) DO UPDATE SET
			customer_id = excluded.customer_id, plan = excluded.plan, status = excluded.status,
			last_occurred_at = excluded.last_occurred_at, last_event_id = excluded.last_event_id, updated_at = NOW()`,
		s.ID, s.CustomerID, plan, status, at.UTC(), ev.EventID); err != nil {
		return err
	}
	if canceled && fromPlan != PlanFree {
		if _, err := tx.Exec(ctx, `
			INSERT INTO downgrade.plan_changes (subscription_id, customer_id, from_plan, to_plan, event_id)
			VALUES ($1, $2, $3, $4, $5)`, s.ID, s.CustomerID, fromPlan, PlanFree, ev.EventID); err != nil {
			return err
		}
	}
	return nil
}

// Account is one subscription's current plan.
type Account struct {
	SubscriptionID string    `json:"subscription_id"`
	CustomerID     string    `json:"customer_id"`
	Plan           string    `json:"plan"`
	Status         string    `json:"status"`
	LastOccurredAt time.Time `json:"last_occurred_at"`
	LastEventID    string    `json:"last_event_id"`
}

// GetAccount returns a subscription's account, or pgx.ErrNoRows.
func GetAccount(ctx context.Context, db subscriber.DB, subscriptionID string) (Account, error) {
	var a Account
	err := db.QueryRow(ctx, `SELECT subscription_id, customer_id, plan, status, last_occurred_at, last_event_id
		FROM downgrade.accounts WHERE subscription_id = $1`, subscriptionID).
		Scan(&a.SubscriptionID, &a.CustomerID, &a.Plan, &a.Status, &a.LastOccurredAt, &a.LastEventID)
	return a, err
}

// Routes adds GET /accounts/{subscription_id} to mux: the account as JSON,
// 404 when unknown.
func Routes(mux *http.ServeMux, db subscriber.DB) {
	mux.HandleFunc("GET /accounts/{subscription_id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		a, err := GetAccount(r.Context(), db, r.PathValue("subscription_id"))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "no such subscription"})
		case err != nil:
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "cannot read the account"})
		default:
			_ = json.NewEncoder(w).Encode(a)
		}
	})
}
