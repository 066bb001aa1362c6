// Package poll runs the loops that work through a queue kept in the
// database: take one item at a time until none is left, then wait for the
// next tick.
package poll

import (
	"context"
	"time"
)

// Loop calls one until it reports no more work or fails (failed is given
// the error, and the rest waits for the next round), then waits for the
// next tick of interval and calls after, if not nil; until stop is done.
// One is not called again once stop is done; a call in progress finishes
// on whatever context one itself uses.
func Loop(stop context.Context, interval time.Duration, one func() (more bool, err error), failed func(error), after func()) {
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
