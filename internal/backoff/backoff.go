// Package backoff computes the delays of retries that double from a first
// delay up to a cap: the one backoff of the hub and the subscribers.
//
// Exp gives the delay for a retry number (a relay attempt, an email send,
// a destination's attempt, spread by Jitter),
// Doubling the successive delays of one retry loop (reconnecting,
// recreating a consumer, calling a rate-limited API).
package backoff

import (
	"context"
	"time"
)

// Exp returns first doubled n times, capped at max: the delay before a
// retry that n earlier retries preceded. n ≤ 0 gives min(first, max).
func Exp(first, max time.Duration, n int) time.Duration {
	d := first
	for i := 0; i < n && d < max; i++ {
		d = double(d, max)
	}
	return min(d, max)
}

// Jitter spreads d uniformly over [d/2, d] by r, a number in [0, 1)
// (math/rand/v2.Float64): d/2 at 0. An r out of range (NaN) counts as 0.
func Jitter(d time.Duration, r float64) time.Duration {
	if !(r >= 0 && r < 1) {
		r = 0
	}
	return d/2 + time.Duration(r*float64(d-d/2))
}

// Doubling hands out the delays of one retry loop: first, then each delay
// doubled, capped at max. The first delay is handed out as given, even
// above max. The zero value is not usable: call New.
type Doubling struct {
	first, next, max time.Duration
}

// New returns a Doubling starting at first, capped at max.
func New(first, max time.Duration) *Doubling {
	return &Doubling{first: first, next: first, max: max}
}

// Next returns the delay to wait now and doubles the one after it.
func (b *Doubling) Next() time.Duration {
	d := b.next
	b.next = double(b.next, b.max)
	return d
}

// double returns min(d*2, max) without overflowing.
func double(d, max time.Duration) time.Duration {
	if d > max/2 {
		return max
	}
	return d * 2
}

// Reset starts again from the first delay, after a success.
func (b *Doubling) Reset() { b.next = b.first }

// Sleep waits d, or until ctx is done (its error).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
