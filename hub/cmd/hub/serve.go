package main

import (
	"context"
	"io"

	"github.com/hookhub/hookhub/hub/service"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newEnvFlags("serve", `Usage: hub serve

Runs the hub until SIGTERM or SIGINT, then shuts down gracefully: /readyz
fails first, new connections are refused, in-flight requests finish and
the outbox relay drains, within HUB_SHUTDOWN_TIMEOUT.

It refuses to start when migrations are pending (run `+"`hub migrate up`"+`),
or when no provider has a secret. With HUB_NATS_URL empty it starts an
embedded JetStream server whose store is under HUB_DATA_DIR.

Environment:
`, stdout)
	if err := parseNoArgs(fs, args, "serve takes no arguments"); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	svc, err := service.New(ctx, cfg, service.Deps{Logger: log})
	if err != nil {
		return err
	}
	return svc.Run(ctx)
}
