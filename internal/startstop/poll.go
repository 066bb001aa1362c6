package startstop

import (
	"context"
	"sync"
	"time"
)

// Poll is the loop of a background component working through a queue kept
// in the database: it calls one until it reports no more work or fails
// (failed is given the error, and the rest waits for the next round), then
// waits for the next tick of interval and calls after, if not nil; until
// stop is done. One is not called again once stop is done; a call in
// progress finishes on whatever context one itself uses.
func Poll(stop context.Context, interval time.Duration, one func() (more bool, err error), failed func(error), after func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for stop.Err() == nil {
			more, err := one()
			if err != nil {
				failed(err)
				break
			}
			if !more {
				break
			}
		}
		select {
		case <-stop.Done():
			return
		case <-t.C:
		}
		if after != nil {
			after()
		}
	}
}

// Every calls tick every interval, in a goroutine of its own, until the
// returned stop is called; stop waits for a tick in progress to return.
func Every(interval time.Duration, tick func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				tick()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
