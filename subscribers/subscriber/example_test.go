package subscriber_test

import (
	"context"
	"fmt"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// A complete subscriber: it greets every new Clerk user once, however
// often the event is delivered. Its table lives in its own schema,
// "welcome", created by its migration.
//
// In production the pool and the JetStream client come from
// pgxpool.New(ctx, databaseURL) and jetstream.New(nats.Connect(natsURL)),
// and Run returns after SIGTERM (signal.NotifyContext) once in-flight
// messages are acked; here a throwaway database and JetStream server hold
// the hub's stream, and the example stops once the messages are handled.
func Example() {
	env := newExampleEnv()
	defer env.close()

	sub, err := subscriber.New(subscriber.Config{Name: "welcome", Pool: env.Pool, JetStream: env.JS, Migrations: fstest.MapFS{
		"00001_greetings.sql": {Data: []byte("-- +goose Up\nCREATE TABLE welcome.greetings (user_id TEXT, email TEXT, event_id TEXT);\n")},
	}})
	if err != nil {
		panic(err)
	}
	sub.Handle("clerk.user.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		user, err := ev.ClerkUser()
		if err != nil {
			return err // undecodable: dead-lettered at once
		}
		_, err = tx.Exec(ctx, "INSERT INTO welcome.greetings VALUES ($1, $2, $3)", user.ID, user.PrimaryEmail(), ev.EventID)
		return err
	})

	// The hub publishes a new user, and an operator re-publishes it twice.
	m := env.clerkUserCreated("msg_2welcome", "user_ada", "ada@example.com", time.Now())
	env.Publish(env.tb, m)
	env.Republish(env.tb, m, 2)
	env.run(sub, 3)

	var user, email string
	if err := env.Pool.QueryRow(context.Background(), "SELECT user_id, email FROM welcome.greetings").Scan(&user, &email); err != nil {
		panic(err)
	}
	s := sub.Stats()
	fmt.Printf("greeted %s <%s>\n", user, email)
	fmt.Printf("processed %d, skipped as duplicates %d\n", s.Processed, s.SkippedDuplicate)
	// Output:
	// greeted user_ada <ada@example.com>
	// processed 1, skipped as duplicates 2
}

// A handler that keeps the latest state of each subscription, ignoring
// events older than the one it applied last: here the cancellation
// arrives before the older creation, which is skipped.
func ExampleApplyIfNewer() {
	env := newExampleEnv()
	defer env.close()

	sub, err := subscriber.New(subscriber.Config{Name: "billing", Pool: env.Pool, JetStream: env.JS, Concurrency: 1, Migrations: fstest.MapFS{
		"00001_subscriptions.sql": {Data: []byte("-- +goose Up\nCREATE TABLE billing.subscriptions (id TEXT PRIMARY KEY, status TEXT NOT NULL);\n")},
	}})
	if err != nil {
		panic(err)
	}
	handler := func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		pe, s, err := ev.PaddleSubscription()
		if err != nil {
			return err
		}
		ok, err := subscriber.ApplyIfNewer(ctx, tx, "paddle.subscription", s.ID, pe.OccurredAt)
		if err != nil {
			return err
		}
		if !ok {
			return subscriber.ErrStale // acked and counted as skipped_stale
		}
		_, err = tx.Exec(ctx, `INSERT INTO billing.subscriptions (id, status) VALUES ($1, $2)
			ON CONFLICT (id) DO UPDATE SET status = excluded.status`, s.ID, s.Status)
		return err
	}
	sub.Handle("paddle.subscription.>", handler)

	created := time.Now().Add(-time.Hour)
	env.Publish(env.tb, env.paddleSubscription("evt_2", schema.PaddleSubscriptionCanceled, created.Add(time.Minute), "sub_1"))
	env.Publish(env.tb, env.paddleSubscription("evt_1", schema.PaddleSubscriptionCreated, created, "sub_1"))
	env.run(sub, 2)

	var status string
	if err := env.Pool.QueryRow(context.Background(), "SELECT status FROM billing.subscriptions WHERE id = 'sub_1'").Scan(&status); err != nil {
		panic(err)
	}
	fmt.Println("sub_1:", status)
	fmt.Println("skipped as stale:", sub.Stats().SkippedStale)
	// Output:
	// sub_1: canceled
	// skipped as stale: 1
}
