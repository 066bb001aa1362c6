package destination

import (
	"context"
	"sync"
	"time"
)

// Defaults of a CircuitConfig.
const (
	DefaultCircuitThreshold   = 5
	DefaultCircuitCooldown    = 5 * time.Second
	DefaultCircuitMaxCooldown = 5 * time.Minute
	probeMargin               = 5 * time.Second
)

// CircuitState is the state of a Circuit.
type CircuitState int

const (
	// CircuitClosed lets every attempt through.
	CircuitClosed CircuitState = iota
	// CircuitOpen holds every attempt until its cooldown ends.
	CircuitOpen
	// CircuitProbing lets one attempt, the probe, through and holds the
	// others until it is reported.
	CircuitProbing
)

func (s CircuitState) String() string {
	switch s {
	case CircuitClosed:
		return "closed"
	case CircuitOpen:
		return "open"
	case CircuitProbing:
		return "probing"
	}
	return "unknown"
}

// CircuitConfig configures a Circuit. Zero fields take defaults.
type CircuitConfig struct {
	// Threshold is how many consecutive failures open the circuit.
	// Default DefaultCircuitThreshold.
	Threshold int
	// Cooldown is how long the circuit stays open before a probe; it
	// doubles after each failed probe, up to MaxCooldown. Defaults
	// DefaultCircuitCooldown, DefaultCircuitMaxCooldown.
	Cooldown, MaxCooldown time.Duration
	// ProbeTimeout frees a probe slot that was admitted but never
	// reported (the message was a duplicate, the worker stopped): the
	// next caller becomes the probe. Default DefaultTimeout + 5s; give it
	// the destination's attempt timeout + 5s.
	ProbeTimeout time.Duration
}

// Circuit is a circuit breaker in front of one destination: after
// Threshold consecutive failed attempts it opens and holds every worker
// (Admit) for a cooldown, then lets a single probe through; the probe's
// success closes it, its failure reopens it for twice the cooldown. It
// keeps a dead endpoint from being hammered by every worker and every
// message, while each message's own retry schedule (Policy) goes on. Safe
// for concurrent use.
type Circuit struct {
	cfg CircuitConfig

	mu        sync.Mutex
	state     CircuitState
	failures  int
	cooldown  time.Duration // of the current or next opening
	openUntil time.Time     // open: when the next probe may go
	probeEnd  time.Time     // probing: when the probe slot is freed
	changed   chan struct{} // closed and replaced on every change
}

// NewCircuit returns a closed Circuit.
func NewCircuit(c CircuitConfig) *Circuit {
	c.Threshold = positiveOr(c.Threshold, DefaultCircuitThreshold)
	c.Cooldown = positiveOr(c.Cooldown, DefaultCircuitCooldown)
	c.MaxCooldown = max(positiveOr(c.MaxCooldown, DefaultCircuitMaxCooldown), c.Cooldown)
	c.ProbeTimeout = positiveOr(c.ProbeTimeout, DefaultTimeout+probeMargin)
	return &Circuit{cfg: c, cooldown: c.Cooldown, changed: make(chan struct{})}
}

// positiveOr returns v, or def when v is not positive.
func positiveOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Admit returns nil when an attempt may go: at once while the circuit is
// closed; while it is open, it waits for the cooldown's end and then lets
// exactly one caller through as the probe, the others waiting on until the
// probe is reported (or its slot freed after ProbeTimeout). It returns
// ctx.Err() when ctx ends first.
func (c *Circuit) Admit(ctx context.Context) error {
	for {
		c.mu.Lock()
		var wait time.Duration
		switch c.state {
		case CircuitClosed:
			c.mu.Unlock()
			return nil
		case CircuitOpen:
			now := time.Now()
			if !now.Before(c.openUntil) {
				c.state = CircuitProbing
				c.probeEnd = now.Add(c.cfg.ProbeTimeout)
				c.notify()
				c.mu.Unlock()
				return nil
			}
			wait = c.openUntil.Sub(now)
		case CircuitProbing:
			now := time.Now()
			if !now.Before(c.probeEnd) { // the probe was never reported: this caller probes
				c.probeEnd = now.Add(c.cfg.ProbeTimeout)
				c.notify()
				c.mu.Unlock()
				return nil
			}
			wait = c.probeEnd.Sub(now)
		}
		changed := c.changed
		c.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-time.After(wait):
		}
	}
}

// Report records the outcome of one attempt, the probe's or any other's.
// A success closes the circuit and resets the count of failures. A failure
// counts; the Threshold-th in a row opens the circuit for Cooldown; a
// failure while probing (the probe's, as far as the circuit can tell)
// reopens it for twice the last cooldown, at most MaxCooldown. A failure
// reported while open (an attempt admitted before the opening) changes
// nothing.
func (c *Circuit) Report(ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		c.failures = 0
		c.cooldown = c.cfg.Cooldown
		if c.state != CircuitClosed {
			c.state = CircuitClosed
			c.notify()
		}
		return
	}
	switch c.state {
	case CircuitClosed:
		c.failures++
		if c.failures >= c.cfg.Threshold {
			c.open(c.cfg.Cooldown)
		}
	case CircuitProbing:
		c.open(min(2*c.cooldown, c.cfg.MaxCooldown))
	}
}

// open opens the circuit for cooldown; c.mu is held.
func (c *Circuit) open(cooldown time.Duration) {
	c.state = CircuitOpen
	c.cooldown = cooldown
	c.openUntil = time.Now().Add(cooldown)
	c.notify()
}

// notify wakes the waiters and the watchers of Changes; c.mu is held.
func (c *Circuit) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// State returns the circuit's state.
func (c *Circuit) State() CircuitState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Changes returns a channel closed at the circuit's next change of state
// (or of its probe): call State, then wait on it, then call Changes again.
func (c *Circuit) Changes() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}
