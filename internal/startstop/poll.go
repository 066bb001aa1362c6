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

// Every calls tick every interval, on a goroutine of its own (a timer's),
// until the returned stop is called; stop waits for a tick in progress to
// return. Until the first tick it costs a timer and no goroutine: it is
// started and stopped around each message a subscriber handles.
func Every(interval time.Duration, tick func()) (stop func()) {
	var mu sync.Mutex // held by a tick, so stop waits for it
	stopped := false
	mu.Lock()
	defer mu.Unlock()
	var t *time.Timer
	t = time.AfterFunc(interval, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		tick()
		t.Reset(interval)
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}
