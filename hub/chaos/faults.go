package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hookhub/hookhub/internal/backoff"
)

// Fault is one fault a run injects under load. Inject does the whole
// fault: it breaks something, waits, and repairs it (restarts the killed
// process, heals the partition, rebuilds the lost primary), and returns
// when the repair is done or ctx ends.
type Fault struct {
	Name   string
	Inject func(ctx context.Context) error
}

// FaultRecord is what became of one fault.
type FaultRecord struct {
	Name string        `json:"name"`
	At   time.Duration `json:"at_ns"`   // since the load started
	Took time.Duration `json:"took_ns"` // from the fault to its repair
	Err  string        `json:"error,omitempty"`
}

func (f FaultRecord) result() string {
	if f.Err != "" {
		return "failed: " + f.Err
	}
	return "injected and repaired"
}

// Schedule runs faults under a load that started at start: one after
// another, each `every` after the end of the one before (the first
// `every` after start), or, when together, all at once after `every`,
// each `stagger` after the previous. It returns when every fault is done
// or ctx ends (an unfinished fault is recorded as such). progress, when
// not nil, hears each fault as it starts and ends.
func Schedule(ctx context.Context, faults []Fault, start time.Time, every, stagger time.Duration, together bool, progress func(FaultRecord, bool)) []FaultRecord {
	recs := make([]FaultRecord, len(faults))
	run := func(i int) {
		f := faults[i]
		t0 := time.Now()
		recs[i] = FaultRecord{Name: f.Name, At: t0.Sub(start)}
		if progress != nil {
			progress(recs[i], false)
		}
		err := safeInject(ctx, f)
		recs[i].Took = time.Since(t0)
		if err != nil {
			recs[i].Err = err.Error()
		}
		if progress != nil {
			progress(recs[i], true)
		}
	}
	if err := backoff.Sleep(ctx, every); err != nil {
		return markUnrun(recs, faults, err)
	}
	if together {
		var wg sync.WaitGroup
		for i := range faults {
			if i > 0 && backoff.Sleep(ctx, stagger) != nil {
				break
			}
			wg.Add(1)
			go func() { defer wg.Done(); run(i) }()
		}
		wg.Wait()
		return markUnrun(recs, faults, ctx.Err())
	}
	for i := range faults {
		if i > 0 {
			if err := backoff.Sleep(ctx, every); err != nil {
				return markUnrun(recs, faults, err)
			}
		}
		run(i)
	}
	return recs
}

// safeInject runs f.Inject, turning a panic into an error.
func safeInject(ctx context.Context, f Fault) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("fault %s panicked: %v", f.Name, p)
		}
	}()
	return f.Inject(ctx)
}

func markUnrun(recs []FaultRecord, faults []Fault, err error) []FaultRecord {
	for i := range recs {
		if recs[i].Name == "" {
			recs[i] = FaultRecord{Name: faults[i].Name, Err: fmt.Sprintf("not injected: %v", err)}
		}
	}
	return recs
}
