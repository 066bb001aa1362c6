package subscriber_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// A complete subscriber: it greets every new Clerk user once, however
// often the event is delivered. Its table lives in its own schema,
// "welcome", created by its migration.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pool, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:5432/hub?sslmode=disable")
	if err != nil {
		log.Fatal(err)
	}
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	sub, err := subscriber.New(subscriber.Config{Name: "welcome", Pool: pool, JetStream: js, Migrations: fstest.MapFS{
		"00001_greetings.sql": {Data: []byte("-- +goose Up\nCREATE TABLE welcome.greetings (user_id TEXT, email TEXT, event_id TEXT);\n")},
	}})
	if err != nil {
		log.Fatal(err)
	}
	sub.Handle("clerk.user.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		user, err := ev.ClerkUser()
		if err != nil {
			return err // undecodable: dead-lettered at once
		}
		_, err = tx.Exec(ctx, "INSERT INTO welcome.greetings VALUES ($1, $2, $3)", user.ID, user.PrimaryEmail(), ev.EventID)
		return err
	})
	if err := sub.Run(ctx); err != nil { // returns nil after SIGTERM, once in-flight messages are acked
		log.Fatal(err)
	}
}

// A handler that keeps the latest state of each subscription, ignoring
// events older than the one it applied last.
func ExampleApplyIfNewer() {
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
		_, err = tx.Exec(ctx, "UPDATE billing.subscriptions SET status = $2 WHERE id = $1", s.ID, s.Status)
		return err
	}
	_ = handler
}
