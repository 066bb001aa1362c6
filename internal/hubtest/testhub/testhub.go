// Package testhub starts a whole hub (hub/service) in-process for a test,
// against real Postgres and JetStream (internal/hubtest's Pool and
// JetStream): the one way a test runs a hub. It is apart from hubtest so that the packages the hub
// is built from can still use hubtest in their own tests.
package testhub

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub/service"
)

// Bounds of the waits: generous, the machine may be loaded.
const (
	// StreamTimeout bounds how long WaitStream waits.
	StreamTimeout = 20 * time.Second
	// StopTimeout bounds how long Stop waits for a graceful shutdown.
	StopTimeout = 30 * time.Second
)

// Hub is a hub running in-process until the test ends or Stop.
type Hub struct {
	t testing.TB
	// Service is the running hub.
	Service *service.Service
	// URL is the webhook listener's base URL, http://host:port.
	URL string
	// AdminURL is the admin listener's base URL; empty without
	// HUB_ADMIN_ADDR.
	AdminURL string
	cancel   context.CancelFunc
	done     chan error
}

// Config is the hub's configuration as `hub serve` loads it (defaults and
// HUB_* variables), pointed at dbURL and natsURL, with its webhook
// listener on a free port of 127.0.0.1.
func Config(t testing.TB, dbURL, natsURL string) service.Config {
	t.Helper()
	cfg, err := service.LoadConfig()
	if err != nil {
		t.Fatalf("testhub: %v", err)
	}
	cfg.DatabaseURL, cfg.NATSURL, cfg.HTTPAddr = dbURL, natsURL, "127.0.0.1:0"
	return cfg
}

// Start runs a hub with cfg and deps until the test ends, when it is
// stopped gracefully and Run must return nil. It returns once the hub
// listens; see WaitStream.
func Start(t testing.TB, cfg service.Config, deps service.Deps) *Hub {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := service.New(ctx, cfg, deps)
	if err != nil {
		cancel()
		t.Fatalf("testhub: start the hub: %v", err)
	}
	h := &Hub{t: t, Service: svc, URL: "http://" + svc.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	if a := svc.AdminAddr(); a != nil {
		h.AdminURL = "http://" + a.String()
	}
	go func() { h.done <- svc.Run(ctx) }()
	t.Cleanup(h.Stop)
	return h
}

// WaitStream waits until the hub has created its stream, seen through js.
func (h *Hub) WaitStream(js jetstream.JetStream, stream string) {
	h.t.Helper()
	deadline := time.Now().Add(StreamTimeout)
	for {
		_, err := js.Stream(context.Background(), stream)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("testhub: the hub did not create its stream %s: %v", stream, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop shuts the hub down gracefully and fails the test if Run returns an
// error or takes longer than StopTimeout. Stopping a stopped hub does
// nothing.
func (h *Hub) Stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Fatalf("testhub: the hub stopped with an error: %v", err)
		}
	case <-time.After(StopTimeout):
		h.t.Fatalf("testhub: the hub did not stop within %v", StopTimeout)
	}
}
