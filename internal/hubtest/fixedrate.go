package hubtest

import (
	"errors"
	"slices"
	"sync"
	"time"
)

// FixedRate is an open-loop load for a benchmark: for d, every interval
// it prepares a request with small (on its own goroutine: small may
// count, sign, number) and runs what small returned concurrently, and,
// when heavy is not nil, every heavyEvery the same with heavy. It waits
// for every request and returns the latencies of the small ones, from
// the time each was due until it returned, sorted, and their errors.
func FixedRate(d, interval, heavyEvery time.Duration, small, heavy func() func() error) ([]time.Duration, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var errs []error
	var wg sync.WaitGroup
	done := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var heavyTick <-chan time.Time
	if heavy != nil {
		t := time.NewTicker(heavyEvery)
		defer t.Stop()
		heavyTick = t.C
	}
	end := time.After(d)
	for {
		select {
		case due := <-tick.C:
			req := small()
			wg.Go(func() {
				err := req()
				mu.Lock()
				lat = append(lat, time.Since(due))
				mu.Unlock()
				done(err)
			})
		case <-heavyTick:
			req := heavy()
			wg.Go(func() { done(req()) })
		case <-end:
			wg.Wait()
			slices.Sort(lat)
			return lat, errors.Join(errs...)
		}
	}
}

// Percentile is the p-th (0..1) of sorted durations; 0 for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}
