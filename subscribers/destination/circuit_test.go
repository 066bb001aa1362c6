package destination_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookhub/hookhub/subscribers/destination"
)

// fakeClock is a clock for the circuit: Now moves only by Advance, which
// fires the After channels that are due.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{c.now.Add(d), ch})
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

func newTestCircuit(clk *fakeClock) *destination.Circuit {
	return destination.NewCircuit(destination.CircuitConfig{
		Threshold: 3, Cooldown: 5 * time.Second, MaxCooldown: 20 * time.Second, ProbeTimeout: 15 * time.Second,
		Now: clk.Now, After: clk.After,
	})
}

// blocked reports whether Admit is still waiting after a short moment.
func blocked(c *destination.Circuit) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	return errors.Is(c.Admit(ctx), context.DeadlineExceeded)
}

func TestCircuitOpensProbesAndCloses(t *testing.T) {
	clk := newFakeClock()
	c := newTestCircuit(clk)
	if c.State() != destination.CircuitClosed || c.State().String() != "closed" {
		t.Fatalf("new circuit %v", c.State())
	}
	// Failures below the threshold, or broken by a success, keep it closed.
	c.Report(false)
	c.Report(false)
	c.Report(true)
	c.Report(false)
	c.Report(false)
	if c.State() != destination.CircuitClosed || blocked(c) {
		t.Fatal("opened before 3 failures in a row")
	}
	changes := c.Changes()
	c.Report(false)
	if c.State() != destination.CircuitOpen || c.State().String() != "open" {
		t.Fatalf("state %v after 3 failures", c.State())
	}
	select {
	case <-changes:
	default:
		t.Fatal("Changes not closed on opening")
	}
	c.Report(false) // a late failure while open changes nothing
	clk.Advance(5*time.Second - time.Nanosecond)
	if !blocked(c) {
		t.Fatal("admitted before the cooldown's end")
	}
	clk.Advance(time.Nanosecond)
	if blocked(c) { // the probe
		t.Fatal("no probe after the cooldown")
	}
	if c.State() != destination.CircuitProbing || c.State().String() != "probing" {
		t.Fatalf("state %v", c.State())
	}
	if !blocked(c) {
		t.Fatal("a second caller admitted while probing")
	}
	// A failed probe reopens for twice the cooldown.
	c.Report(false)
	clk.Advance(5 * time.Second)
	if !blocked(c) {
		t.Fatal("admitted 5s after a failed probe, want 10s")
	}
	clk.Advance(5 * time.Second)
	if blocked(c) {
		t.Fatal("no probe 10s after a failed probe")
	}
	c.Report(false) // 20s
	clk.Advance(20 * time.Second)
	if blocked(c) {
		t.Fatal("no probe after 20s")
	}
	c.Report(false) // capped: 20s again
	clk.Advance(20 * time.Second)
	if blocked(c) {
		t.Fatal("the cooldown grew past MaxCooldown")
	}
	// The probe succeeds: closed, and the next opening starts from Cooldown.
	c.Report(true)
	if c.State() != destination.CircuitClosed || blocked(c) {
		t.Fatalf("state %v after a successful probe", c.State())
	}
	for range 3 {
		c.Report(false)
	}
	clk.Advance(5 * time.Second)
	if blocked(c) {
		t.Fatal("the cooldown was not reset by the success")
	}
}

// A probe slot never reported is freed after ProbeTimeout.
func TestCircuitFreesAnUnreportedProbe(t *testing.T) {
	clk := newFakeClock()
	c := newTestCircuit(clk)
	for range 3 {
		c.Report(false)
	}
	clk.Advance(5 * time.Second)
	if blocked(c) {
		t.Fatal("no probe")
	}
	clk.Advance(15*time.Second - time.Nanosecond)
	if !blocked(c) {
		t.Fatal("slot freed before ProbeTimeout")
	}
	clk.Advance(time.Nanosecond)
	if blocked(c) {
		t.Fatal("slot not freed after ProbeTimeout")
	}
	if !blocked(c) {
		t.Fatal("the freed slot admitted two probes")
	}
}

// Eight workers wait while the circuit is open: exactly one is let
// through as the probe, and the others only once it is reported.
func TestCircuitOneProbeAmongMany(t *testing.T) {
	clk := newFakeClock()
	c := newTestCircuit(clk)
	for range 3 {
		c.Report(false)
	}
	var admitted atomic.Int32
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Admit(ctx); err != nil {
				t.Error(err)
				return
			}
			admitted.Add(1)
		}()
	}
	time.Sleep(50 * time.Millisecond) // let them wait
	if n := admitted.Load(); n != 0 {
		t.Fatalf("%d admitted while open", n)
	}
	clk.Advance(5 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for admitted.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // would a second one get through?
	if n := admitted.Load(); n != 1 {
		t.Fatalf("%d admitted after the cooldown, want exactly 1 probe", n)
	}
	c.Report(true)
	wg.Wait()
	if n := admitted.Load(); n != 8 {
		t.Fatalf("%d admitted after the probe succeeded, want 8", n)
	}
}

func TestCircuitAdmitEndsWithContext(t *testing.T) {
	clk := newFakeClock()
	c := newTestCircuit(clk)
	for range 3 {
		c.Report(false)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Admit(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Admit = %v", err)
	}
	// A closed circuit admits even so: there is nothing to wait for.
	c.Report(true)
	if err := c.Admit(ctx); err != nil {
		t.Fatalf("closed: Admit = %v", err)
	}
}

// The real clock (the defaults) works: a short cooldown ends.
func TestCircuitRealClock(t *testing.T) {
	c := destination.NewCircuit(destination.CircuitConfig{Threshold: 1, Cooldown: 20 * time.Millisecond})
	c.Report(false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Admit(ctx); err != nil || c.State() != destination.CircuitProbing {
		t.Fatalf("Admit = %v, state %v", err, c.State())
	}
}
