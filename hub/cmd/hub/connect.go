package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/store"
)

// openDatabase opens a pool on the hub's database (HUB_DATABASE_URL) without
// connecting yet: a malformed URL is an error naming the variable.
func openDatabase(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("HUB_DATABASE_URL: %w", err)
	}
	return pool, nil
}

// opsEnv is what an operator command connects to.
type opsEnv struct {
	ops  *ops.Ops
	pool *pgxpool.Pool
	nc   *nats.Conn
}

func (e *opsEnv) Close() {
	if e.nc != nil {
		e.nc.Close()
	}
	e.pool.Close()
}

// connectOps connects to the hub's database and, when needNATS, to NATS
// (HUB_NATS_URL must then be set: an operator command never starts an
// embedded server).
func connectOps(ctx context.Context, needNATS bool) (*opsEnv, service.Config, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, cfg, err
	}
	pool, err := openDatabase(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, cfg, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, cfg, fmt.Errorf("connect to the hub's database (HUB_DATABASE_URL): %w", err)
	}
	env := &opsEnv{pool: pool}
	var js jetstream.JetStream
	if cfg.NATSURL != "" {
		nc, err := nats.Connect(cfg.NATSURL, nats.Name("hookhub-operator"), nats.Timeout(5*time.Second))
		if err != nil && needNATS {
			pool.Close()
			return nil, cfg, fmt.Errorf("connect to NATS (HUB_NATS_URL=%s): %w", cfg.NATSURL, err)
		}
		if err == nil {
			env.nc = nc
			js, err = jetstream.New(nc, jetstream.WithPublishAsyncTimeout(30*time.Second))
			if err != nil {
				env.Close()
				return nil, cfg, err
			}
		}
	} else if needNATS {
		pool.Close()
		return nil, cfg, errors.New("set HUB_NATS_URL to the NATS server the hub uses (for `hub dev`, the URL it printed)")
	}
	st := store.New(pool)
	oc := ops.Config{Archive: st, Subscribers: pool, JetStream: js, Stream: cfg.Stream}
	if js != nil {
		// Republished copies are built by the hub's own publisher, as the
		// originals were. This relay only republishes: it never claims.
		rl, err := relay.New(st, js, relay.Config{Stream: cfg.Stream, DuplicateWindow: cfg.DuplicateWindow})
		if err != nil {
			env.Close()
			return nil, cfg, err
		}
		oc.Republisher = rl
	}
	env.ops = ops.New(oc)
	return env, cfg, nil
}
