package destination_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookhub/hookhub/subscribers/destination"
)

// The circuit's tests run in a synctest bubble: time is fake, moves only
// when every goroutine of the bubble is blocked (advance), and stands
// still while the test checks.

func newTestCircuit() *destination.Circuit {
	return destination.NewCircuit(destination.CircuitConfig{
		Threshold: 3, Cooldown: 5 * time.Second, MaxCooldown: 20 * time.Second, ProbeTimeout: 15 * time.Second,
	})
}

// openCircuit returns a test circuit opened by 3 failures, now.
func openCircuit() *destination.Circuit {
	c := newTestCircuit()
	fail(c, 3)
	return c
}

// fail reports n failures.
func fail(c *destination.Circuit, n int) {
	for range n {
		c.Report(false)
	}
}

// advance moves the bubble's clock by d and lets the goroutines it woke
// run until they block again.
func advance(d time.Duration) {
	time.Sleep(d) // fake time: returns at once
	synctest.Wait()
}

// blocked reports whether Admit waits: it calls Admit, lets it run until
// it returns or blocks (no fake time passes), then cancels it.
func blocked(c *destination.Circuit) bool {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Admit(ctx) }()
	synctest.Wait()
	cancel()
	return errors.Is(<-done, context.Canceled)
}

func TestCircuitOpensProbesAndCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCircuit()
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
		advance(5*time.Second - time.Nanosecond)
		if !blocked(c) {
			t.Fatal("admitted before the cooldown's end")
		}
		advance(time.Nanosecond)
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
		advance(5 * time.Second)
		if !blocked(c) {
			t.Fatal("admitted 5s after a failed probe, want 10s")
		}
		advance(5 * time.Second)
		if blocked(c) {
			t.Fatal("no probe 10s after a failed probe")
		}
		c.Report(false) // 20s
		advance(20 * time.Second)
		if blocked(c) {
			t.Fatal("no probe after 20s")
		}
		c.Report(false) // capped: 20s again
		advance(20 * time.Second)
		if blocked(c) {
			t.Fatal("the cooldown grew past MaxCooldown")
		}
		// The probe succeeds: closed, and the next opening starts from Cooldown.
		c.Report(true)
		if c.State() != destination.CircuitClosed || blocked(c) {
			t.Fatalf("state %v after a successful probe", c.State())
		}
		fail(c, 3)
		advance(5 * time.Second)
		if blocked(c) {
			t.Fatal("the cooldown was not reset by the success")
		}
	})
}

// A probe slot never reported is freed after ProbeTimeout.
func TestCircuitFreesAnUnreportedProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := openCircuit()
		advance(5 * time.Second)
		if blocked(c) {
			t.Fatal("no probe")
		}
		advance(15*time.Second - time.Nanosecond)
		if !blocked(c) {
			t.Fatal("slot freed before ProbeTimeout")
		}
		advance(time.Nanosecond)
		if blocked(c) {
			t.Fatal("slot not freed after ProbeTimeout")
		}
		if !blocked(c) {
			t.Fatal("the freed slot admitted two probes")
		}
	})
}

// Eight workers wait while the circuit is open: exactly one is let
// through as the probe, and the others only once it is reported.
func TestCircuitOneProbeAmongMany(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := openCircuit()
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
		synctest.Wait() // every one waits
		if n := admitted.Load(); n != 0 {
			t.Fatalf("%d admitted while open", n)
		}
		advance(5 * time.Second)
		if n := admitted.Load(); n != 1 {
			t.Fatalf("%d admitted after the cooldown, want exactly 1 probe", n)
		}
		c.Report(true)
		wg.Wait()
		if n := admitted.Load(); n != 8 {
			t.Fatalf("%d admitted after the probe succeeded, want 8", n)
		}
	})
}

func TestCircuitAdmitEndsWithContext(t *testing.T) {
	c := openCircuit()
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
