package main

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookhub/hookhub/subscribers/credits"
	"github.com/hookhub/hookhub/subscribers/downgrade"
	"github.com/hookhub/hookhub/subscribers/email"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// runDevSubscribers runs the credits, email and downgrade subscribers in
// this process, as `hub dev` does, until ctx is done; the returned
// function waits for them to stop. Email goes to the log unless
// EMAIL_SMTP_ADDR names an SMTP server.
func runDevSubscribers(ctx context.Context, dbURL, natsURL, stream string, log *slog.Logger) (func(), error) {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("subscribers: %w", err)
	}
	nc, err := nats.Connect(natsURL, nats.Name("hookhub-dev-subscribers"), nats.MaxReconnects(-1))
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("subscribers: connect to NATS: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		pool.Close()
		return nil, err
	}
	smtp := os.Getenv("EMAIL_SMTP_ADDR")
	if smtp == "" {
		smtp = email.LogAddr
	}
	reg := prometheus.NewRegistry()
	subs := make([]*subscriber.Subscriber, 0, 3)
	for _, s := range []struct {
		name       string
		migrations fs.FS
		register   func(*subscriber.Subscriber) error
	}{
		{credits.Name, credits.Migrations, func(sub *subscriber.Subscriber) error { return credits.Register(sub, credits.Options{}) }},
		{email.Name, email.Migrations, func(sub *subscriber.Subscriber) error {
			return email.Register(sub, email.Options{Sender: email.NewSender(smtp, log.With("subscriber", email.Name)), Pool: pool,
				Logger: log, Registerer: reg})
		}},
		{downgrade.Name, downgrade.Migrations, downgrade.Register},
	} {
		sub, err := subscriber.New(subscriber.Config{Name: s.name, Pool: pool, JetStream: js, Stream: stream, Registerer: reg,
			Migrations: s.migrations, Logger: log})
		if err == nil {
			err = s.register(sub)
		}
		if err != nil {
			nc.Close()
			pool.Close()
			return nil, fmt.Errorf("subscriber %s: %w", s.name, err)
		}
		subs = append(subs, sub)
	}
	var wg sync.WaitGroup
	for _, sub := range subs {
		wg.Go(func() {
			if err := sub.Run(ctx); err != nil {
				log.Error("subscriber stopped", "subscriber", sub.Name(), "err", err)
			}
		})
	}
	return func() {
		wg.Wait()
		nc.Close()
		pool.Close()
	}, nil
}
