package service

// This file is a temporary shim, removed when the relay implements
// startstop ((*relay.Relay).Start/Stop/NATSUp and (*relay.Keeper).Start/
// Stop, branch i19-relay): it adapts today's relay API (RunFast, Run,
// Drain, Reconnected; Keeper.Check, Run, Wake) to startstop.Service, and
// holds the natsUp hand-off that (*relay.Relay).NATSUp replaces.

import (
	"context"
	"fmt"
	"time"

	"github.com/hookhub/hookhub/internal/startstop"
)

// keeperStartTimeout bounds the keeper's first stream check at start.
// Removed when the relay implements startstop.
const keeperStartTimeout = 3 * time.Second

// relayNATSUp tells the relay the NATS connection (re)opened; called on a
// nats.go goroutine, possibly before New has returned, hence the channel.
// Removed when the relay implements startstop (s.relay.NATSUp()).
func (s *Service) relayNATSUp() {
	select {
	case s.natsUp <- struct{}{}:
	default:
	}
}

// relayService runs the relay's fast pipelines, its claiming loop and its
// reconnect handling; Stop stops them and drains the relay within ctx.
// Removed when the relay implements startstop.
type relayService struct {
	startstop.Base
	s *Service
}

func (r *relayService) Start(ctx context.Context) error {
	runCtx, ok := r.StartInit(ctx)
	if !ok {
		return nil
	}
	for range r.s.cfg.RelayWorkers {
		r.Go(func() { _ = r.s.relay.RunFast(runCtx) })
	}
	r.Go(func() { _ = r.s.relay.Run(runCtx) })
	r.Go(func() { r.relayOnReconnect(runCtx) })
	return nil
}

// relayOnReconnect makes the outbox's backlog due whenever NATS comes
// back, so what piled up during an outage drains at once.
func (r *relayService) relayOnReconnect(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.s.natsUp:
			r.s.relay.Reconnected(ctx)
			r.s.keeper.Wake()
		}
	}
}

func (r *relayService) Stop(ctx context.Context) error {
	if !r.StopInit() {
		return nil
	}
	r.Wait()
	if err := r.s.relay.Drain(ctx); err != nil {
		return fmt.Errorf("drain incomplete; rows stay PENDING and are published after restart: %w", err)
	}
	return nil
}

// keeperService checks the stream once at start (bounded; when NATS is
// not reachable yet it warns and keeps trying in the background while the
// hub serves), then runs the keeper's loop. Removed when the relay
// implements startstop.
type keeperService struct {
	startstop.Base
	s *Service
}

func (k *keeperService) Start(ctx context.Context) error {
	runCtx, ok := k.StartInit(ctx)
	if !ok {
		return nil
	}
	checkCtx, cancel := context.WithTimeout(ctx, keeperStartTimeout)
	if err := k.s.keeper.Check(checkCtx); err != nil {
		k.s.log.Warn("stream not ready; retrying in the background", "stream", k.s.cfg.Stream, "err", err)
	}
	cancel()
	k.Go(func() { k.s.keeper.Run(runCtx) })
	return nil
}

func (k *keeperService) Stop(context.Context) error {
	k.StopWait()
	return nil
}
