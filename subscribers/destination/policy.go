package destination

import (
	"math/rand/v2"
	"time"
)

// Defaults of a Policy.
const (
	DefaultBackoffBase = 5 * time.Second
	DefaultBackoffMax  = time.Hour
)

// Policy is a destination's retry schedule: exponential backoff with
// jitter, for RetryFor from the first attempt, after which the message is
// dead-lettered. Zero fields take defaults (DefaultRetryFor,
// DefaultBackoffBase, DefaultBackoffMax, math/rand/v2.Float64).
type Policy struct {
	RetryFor time.Duration
	Base     time.Duration
	Max      time.Duration
	// Rand returns a number in [0, 1) for the jitter.
	Rand func() float64
}

// Delay is how long to wait before the next attempt, after attempt
// failures (1 after the first): Base*2^(attempt-1), at most Max, less a
// jitter that spreads it uniformly over [d/2, d]. A server's retryAfter
// (Result.RetryAfter) wins when it is longer, up to MaxRetryAfter.
func (p Policy) Delay(attempt int, retryAfter time.Duration) time.Duration {
	base, max := p.Base, p.Max
	if base <= 0 {
		base = DefaultBackoffBase
	}
	if max <= 0 {
		max = DefaultBackoffMax
	}
	max = maxDuration(max, base)
	d := base
	for i := 1; i < attempt && d < max; i++ { // at most ~63 doublings
		if d > max/2 {
			d = max
			break
		}
		d *= 2
	}
	d = min(d, max)
	f := rand.Float64
	if p.Rand != nil {
		f = p.Rand
	}
	r := f()
	if !(r >= 0 && r < 1) { // NaN or out of range from a custom Rand
		r = 0
	}
	d = d/2 + time.Duration(r*float64(d-d/2))
	if retryAfter > d {
		d = min(retryAfter, MaxRetryAfter)
	}
	return d
}

// Expired reports whether a message first attempted at first has been
// retried for RetryFor by now. A zero first (no attempt yet) never
// expires.
func (p Policy) Expired(first, now time.Time) bool {
	if first.IsZero() {
		return false
	}
	retryFor := p.RetryFor
	if retryFor <= 0 {
		retryFor = DefaultRetryFor
	}
	return now.Sub(first) >= retryFor
}

func maxDuration(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}
