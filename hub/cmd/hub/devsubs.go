package main

import (
	"cmp"
	"context"
	"errors"
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
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/downgrade"
	"github.com/hookhub/hookhub/subscribers/email"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// runDevSubscribers runs the credits, email and downgrade subscribers in
// this process, as `hub dev` does, and the destinations of dests (nil:
// none), until ctx is done; the returned function waits for them to stop.
// Email goes to the log unless EMAIL_SMTP_ADDR names an SMTP server.
// reload re-reads the destinations file (SIGHUP).
func runDevSubscribers(ctx context.Context, dbURL, natsURL, stream string, dests *devDestinations, log *slog.Logger) (func(), error) {
	pcfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("subscribers: %w", err)
	}
	// Each subscriber's workers hold a connection while they handle an
	// event: room for all of them, and for the destinations'.
	pcfg.MaxConns = int32(3*subscriber.DefaultConcurrency + 4 + dests.connections())
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
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
	smtp := cmp.Or(os.Getenv("EMAIL_SMTP_ADDR"), email.LogAddr)
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
	if dests != nil {
		svc := destination.NewService(destination.Options{Pool: pool, JetStream: js, Stream: stream,
			Metrics: destination.NewMetrics(reg), Registerer: reg, Logger: log}, dests.load)
		wg.Go(func() {
			if err := svc.Run(ctx, dests.reload); err != nil {
				log.Error("destinations stopped", "error", err)
			}
		})
	}
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

// devDestinations are the destinations `hub dev` runs: those of a
// destinations file, re-read on SIGHUP.
type devDestinations struct {
	file   string
	first  []destination.Destination // as first loaded, until the service takes them
	names  []string                  // of the first load, for the banner
	conns  int                       // Postgres connections the first load's workers may hold
	reload chan struct{}
}

// defaultDestinationsFile is the destinations file `hub dev` and `hub
// destinations test` read: HUB_DESTINATIONS_FILE, else destinations.yaml.
func defaultDestinationsFile() string {
	return cmp.Or(os.Getenv("HUB_DESTINATIONS_FILE"), "destinations.yaml")
}

// loadDevDestinations loads file if it exists: nil and no error when it
// does not (no destinations), an error naming the destination and field
// when it is invalid.
func loadDevDestinations(file string) (*devDestinations, error) {
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	set, err := destination.Load(file, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	d := &devDestinations{file: file, first: set, reload: make(chan struct{}, 1)}
	for _, dst := range set {
		d.names = append(d.names, dst.Name)
		d.conns += dst.Concurrency + 1
	}
	return d, nil
}

func (d *devDestinations) load() ([]destination.Destination, error) {
	if d.first != nil {
		set := d.first
		d.first = nil // the next load (a reload) reads the file again
		return set, nil
	}
	return destination.Load(d.file, os.LookupEnv)
}

// connections is the Postgres connections the destinations' workers
// may hold at once.
func (d *devDestinations) connections() int {
	if d == nil {
		return 0
	}
	return d.conns
}
