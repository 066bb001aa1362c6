package destination

import (
	"cmp"
	"math/rand/v2"
	"time"

	"github.com/hookhub/hookhub/internal/backoff"
)

// Defaults of a Policy.
const (
	DefaultBackoffBase = 5 * time.Second
	DefaultBackoffMax  = time.Hour
	// DefaultMaxRetryAfter caps the wait a receiver's Retry-After asks
	// for (a destination's max_retry_after).
	DefaultMaxRetryAfter = time.Hour
)

// Policy is a destination's retry schedule: exponential backoff with
// jitter, for RetryFor from the first attempt, after which the message is
// dead-lettered. Zero fields take defaults (DefaultRetryFor,
// DefaultBackoffBase, DefaultBackoffMax, DefaultMaxRetryAfter,
// math/rand/v2.Float64).
type Policy struct {
	RetryFor time.Duration
	Base     time.Duration
	Max      time.Duration
	// MaxRetryAfter caps a receiver's Retry-After.
	MaxRetryAfter time.Duration
	// Rand returns a number in [0, 1) for the jitter.
	Rand func() float64
}

// Delay is how long to wait before the next attempt, after attempt
// failures (1 after the first): Base*2^(attempt-1), at most Max, less a
// jitter that spreads it uniformly over [d/2, d]. A server's retryAfter
// (Result.RetryAfter) wins when it is longer, up to p.MaxRetryAfter.
// Until caps the result at the horizon.
func (p Policy) Delay(attempt int, retryAfter time.Duration) time.Duration {
	base, f := cmp.Or(max(p.Base, 0), DefaultBackoffBase), p.Rand
	if f == nil {
		f = rand.Float64
	}
	d := backoff.Jitter(backoff.Exp(base, max(cmp.Or(max(p.Max, 0), DefaultBackoffMax), base), attempt-1), f())
	if retryAfter > d {
		d = min(retryAfter, cmp.Or(p.MaxRetryAfter, DefaultMaxRetryAfter))
	}
	return d
}

// Until caps delay d, after an attempt at now of an event first attempted
// at first, so that the next attempt is due by the horizon (first +
// RetryFor) at the latest: a wait never extends past retry_for, and the
// attempt at the horizon, if it fails, dead-letters the event. A zero
// first leaves d as it is.
func (p Policy) Until(first, now time.Time, d time.Duration) time.Duration {
	if first.IsZero() {
		return d
	}
	left := first.Add(cmp.Or(p.RetryFor, DefaultRetryFor)).Sub(now)
	return max(min(d, left), 0)
}

// Expired reports whether a message first attempted at first has been
// retried for RetryFor by now. A zero first (no attempt yet) never
// expires.
func (p Policy) Expired(first, now time.Time) bool {
	if first.IsZero() {
		return false
	}
	return now.Sub(first) >= cmp.Or(max(p.RetryFor, 0), DefaultRetryFor)
}
