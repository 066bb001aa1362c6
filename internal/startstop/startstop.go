package startstop

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Service is a component with a lifecycle.
type Service interface {
	// Start starts the component. The context bounds start-up only: the
	// component runs until Stop, not until ctx ends. Starting a started
	// component does nothing and returns nil.
	Start(ctx context.Context) error
	// Stop stops the component and waits until its goroutines returned;
	// ctx bounds the graceful part. Idempotent; safe when never started.
	Stop(ctx context.Context) error
}

// Base implements the bookkeeping of Service for a component that embeds
// it: one run context cancelled by Stop, and the goroutines Stop waits
// for.
type Base struct {
	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// StartInit marks the component started and returns the context its
// background work runs under (not cancelled by the caller's ctx, cancelled
// by Stop), or ok false when it was already started.
func (b *Base) StartInit(ctx context.Context) (runCtx context.Context, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		return nil, false
	}
	b.started = true
	runCtx, b.cancel = context.WithCancel(context.WithoutCancel(ctx))
	return runCtx, true
}

// Go runs f on a goroutine that StopWait waits for.
func (b *Base) Go(f func()) { b.wg.Go(f) }

// StopInit cancels the run context and reports whether the component was
// running (false when never started or already stopped): the caller then
// does its graceful part and calls Wait.
func (b *Base) StopInit() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.started || b.cancel == nil {
		return false
	}
	b.cancel()
	b.cancel = nil
	return true
}

// Wait waits for the goroutines started with Go.
func (b *Base) Wait() { b.wg.Wait() }

// StopWait is StopInit then Wait: the whole Stop of a component with no
// graceful part.
func (b *Base) StopWait() {
	if b.StopInit() {
		b.Wait()
	}
}

// Func adapts a pair of functions to Service; either may be nil. Stop
// calls stop once, and only after a successful Start.
func Func(start func(context.Context) error, stop func(context.Context) error) Service {
	return &funcService{start: start, stop: stop}
}

type funcService struct {
	mu             sync.Mutex
	started, ended bool
	start, stop    func(context.Context) error
}

func (f *funcService) Start(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return nil
	}
	if f.start != nil {
		if err := f.start(ctx); err != nil {
			return err
		}
	}
	f.started = true
	return nil
}

func (f *funcService) Stop(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.started || f.ended {
		return nil
	}
	f.ended = true
	if f.stop != nil {
		return f.stop(ctx)
	}
	return nil
}

// Named is a Service with the name its errors carry.
type Named struct {
	Name    string
	Service Service
}

// Group starts services in order and stops them in reverse order.
type Group struct {
	mu       sync.Mutex
	services []Named
	started  int // how many of services have started
}

// NewGroup returns a Group of services, in start order.
func NewGroup(services ...Named) *Group { return &Group{services: services} }

// Start starts each service in order. When one fails, those already
// started are stopped in reverse order (within ctx) and the error names
// the one that failed.
func (g *Group) Start(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.started < len(g.services) {
		s := g.services[g.started]
		if err := s.Service.Start(ctx); err != nil {
			err = fmt.Errorf("start %s: %w", s.Name, err)
			return errors.Join(err, g.stopLocked(ctx))
		}
		g.started++
	}
	return nil
}

// Stop stops the started services in reverse order, each given ctx, and
// joins their errors, each named. Idempotent.
func (g *Group) Stop(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stopLocked(ctx)
}

func (g *Group) stopLocked(ctx context.Context) error {
	var errs []error
	for g.started > 0 {
		g.started--
		s := g.services[g.started]
		if err := s.Service.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", s.Name, err))
		}
	}
	return errors.Join(errs...)
}
