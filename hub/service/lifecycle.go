package service

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/hookhub/hookhub/internal/startstop"
)

// listener serves an HTTP app on a listener New opened, as a
// startstop.Service: Start serves, Stop shuts the app down (in-flight
// requests finish within ctx) and closes the listener, also when it never
// served.
type listener struct {
	startstop.Base
	ln       net.Listener
	serve    func(net.Listener) error
	shutdown func(context.Context) error
	// failed is told, wrapped with what, when serve returns before Stop.
	failed chan<- error
	what   string
}

// Start serves on the listener in a goroutine.
func (l *listener) Start(ctx context.Context) error {
	runCtx, ok := l.StartInit(ctx)
	if !ok {
		return nil
	}
	l.Go(func() {
		err := l.serve(l.ln)
		if runCtx.Err() != nil {
			return // Stop's shutdown ended it
		}
		if err == nil {
			err = errors.New("stopped serving")
		}
		select {
		case l.failed <- fmt.Errorf("%s: %w", l.what, err):
		case <-runCtx.Done():
		}
	})
	return nil
}

// Stop shuts the app down, closes the listener (which also ends a serve
// that had not yet begun when shutdown ran) and waits for serve to return.
func (l *listener) Stop(ctx context.Context) error {
	var err error
	running := l.StopInit()
	if running {
		err = l.shutdown(ctx)
	}
	if cerr := l.ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
		err = errors.Join(err, cerr)
	}
	if running {
		l.Wait()
	}
	return err
}

// resource is something New opened (a pool, a connection, a server) as a
// startstop.Service: Start does nothing, Stop closes it once, whether or
// not it was started, so that a New that fails half-way and a Run both
// close what was opened.
type resource struct {
	once  sync.Once
	close func(context.Context) error
}

// closing returns a resource closed by close.
func closing(close func(context.Context) error) *resource { return &resource{close: close} }

// Start does nothing: the resource is open since New.
func (r *resource) Start(context.Context) error { return nil }

// Stop closes the resource the first time it is called.
func (r *resource) Stop(ctx context.Context) error {
	var err error
	r.once.Do(func() { err = r.close(ctx) })
	return err
}
