package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// RunOptions configure Run.
type RunOptions struct {
	Load LoadOptions
	// Faults are injected under the load, Every apart (default 5 s), or
	// all at once when Together, Stagger apart (default 500 ms).
	Faults   []Fault
	Every    time.Duration
	Stagger  time.Duration
	Together bool
	// Check reaches the archive, the stream and the subscribers; Run sets
	// its FromSeq.
	Check CheckOptions
	// Repair, when not nil, runs after the faults and the load, before
	// the check: heal what is still broken, so that the check waits for
	// a whole system.
	Repair func(ctx context.Context) error
	// Progress, when not nil, receives a line every ProgressEvery
	// (default 2 s) while the run lasts.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// Run proves the promise once: it sends the load, injects the faults
// while it runs, waits until every event is answered or given up, then
// checks the archive, the stream and the subscribers and returns the
// report. The error is for a run that could not be carried out (the
// target unreachable, the database unreadable); lost or duplicated
// events are in the report (Report.OK).
func Run(ctx context.Context, o RunOptions) (Report, error) {
	setDefault(&o.Every, 5*time.Second)
	setDefault(&o.Stagger, 500*time.Millisecond)
	setDefault(&o.ProgressEvery, 2*time.Second)
	from, err := StreamMark(ctx, o.Check.JetStream, o.Check.Stream)
	if err != nil {
		return Report{}, err
	}
	o.Check.FromSeq = from
	load, err := StartLoad(ctx, o.Load)
	if err != nil {
		return Report{}, err
	}
	start := time.Now()
	st := &runState{}
	faultsDone := make(chan []FaultRecord, 1)
	go func() {
		faultsDone <- Schedule(ctx, o.Faults, start, o.Every, o.Stagger, o.Together, st.fault)
	}()
	stopProgress := st.report(o.Progress, o.ProgressEvery, load)
	var faults []FaultRecord
	select {
	case faults = <-faultsDone:
	case <-ctx.Done():
		faults = <-faultsDone
	}
	// The load retries each event for at most RetryFor after it was
	// sent: wait that long after the last send, and a little more.
	lo := load.o
	waitCtx, cancel := context.WithDeadline(ctx, start.Add(lo.Duration+lo.RetryFor+lo.AttemptTimeout+10*time.Second))
	events := load.Wait(waitCtx)
	cancel()
	sent := time.Since(start)
	if o.Repair != nil {
		st.set("repairing")
		if err := o.Repair(ctx); err != nil {
			stopProgress()
			return Report{}, fmt.Errorf("chaos: repair after the faults: %w", err)
		}
	}
	st.set("checking")
	o.Check.Progress = func(missing int) { st.set(fmt.Sprintf("checking: %d events not yet everywhere", missing)) }
	r, err := Check(ctx, o.Check, events)
	stopProgress()
	if err != nil && !errors.Is(err, context.Canceled) {
		return r, err
	}
	p := load.Progress()
	r.RunID, r.Duration, r.Faults, r.LongestGap = load.RunID(), sent, faults, p.LongestGap
	return r, err
}

// runState is what the progress line shows besides the load's counts.
type runState struct {
	mu     sync.Mutex
	active []string
	phase  string
}

func (s *runState) fault(r FaultRecord, done bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !done {
		s.active = append(s.active, r.Name)
		return
	}
	for i, n := range s.active {
		if n == r.Name {
			s.active = append(s.active[:i], s.active[i+1:]...)
			break
		}
	}
}

func (s *runState) set(phase string) {
	s.mu.Lock()
	s.phase = phase
	s.mu.Unlock()
}

func (s *runState) line(p LoadProgress) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%5.0fs  sent %d  acknowledged %d  retrying %d  refused %d  errors %d",
		p.Elapsed.Seconds(), p.Sent, p.Acked, p.Pending, p.Refused, p.Errors)
	if len(s.active) > 0 {
		fmt.Fprintf(&b, "  | fault: %s", strings.Join(s.active, ", "))
	}
	if s.phase != "" {
		fmt.Fprintf(&b, "  | %s", s.phase)
	}
	return b.String()
}

// report writes a progress line to w every `every` until the returned
// function is called.
func (s *runState) report(w io.Writer, every time.Duration, load *Load) func() {
	if w == nil {
		return func() {}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fmt.Fprintln(w, s.line(load.Progress()))
			}
		}
	}()
	return func() { close(stop); <-done }
}
