package destination_test

import (
	"math"
	"testing"
	"time"

	"github.com/hookhub/hookhub/subscribers/destination"
)

func TestPolicyDelay(t *testing.T) {
	fixed := func(r float64) func() float64 { return func() float64 { return r } }
	for _, tc := range []struct {
		name       string
		p          destination.Policy
		attempt    int
		retryAfter time.Duration
		want       time.Duration
	}{
		{"first, no jitter drawn low", destination.Policy{Rand: fixed(0)}, 1, 0, 2500 * time.Millisecond},
		{"first, high in the range", destination.Policy{Rand: fixed(0.8)}, 1, 0, 4500 * time.Millisecond},
		{"second", destination.Policy{Rand: fixed(0.5)}, 2, 0, 7500 * time.Millisecond},
		{"fifth", destination.Policy{Rand: fixed(0)}, 5, 0, 40 * time.Second},
		{"capped at Max", destination.Policy{Rand: fixed(0)}, 20, 0, 30 * time.Minute},
		{"huge attempt", destination.Policy{Rand: fixed(0)}, math.MaxInt, 0, 30 * time.Minute},
		{"attempt 0 is 1", destination.Policy{Rand: fixed(0)}, 0, 0, 2500 * time.Millisecond},
		{"custom base and max", destination.Policy{Base: time.Second, Max: 3 * time.Second, Rand: fixed(0)}, 3, 0, 1500 * time.Millisecond},
		{"max below base", destination.Policy{Base: time.Minute, Max: time.Second, Rand: fixed(0)}, 3, 0, 30 * time.Second},
		{"retry-after longer wins", destination.Policy{Rand: fixed(0)}, 1, time.Minute, time.Minute},
		{"retry-after shorter loses", destination.Policy{Rand: fixed(0)}, 1, time.Second, 2500 * time.Millisecond},
		{"retry-after capped by the default max_retry_after", destination.Policy{Rand: fixed(0)}, 1, 100 * time.Hour, destination.DefaultMaxRetryAfter},
		{"retry-after capped by max_retry_after", destination.Policy{MaxRetryAfter: 10 * time.Minute, Rand: fixed(0)}, 1, 24 * time.Hour, 10 * time.Minute},
		{"retry-after within max_retry_after", destination.Policy{MaxRetryAfter: 2 * time.Hour, Rand: fixed(0)}, 1, 90 * time.Minute, 90 * time.Minute},
		{"bad rand", destination.Policy{Rand: fixed(math.NaN())}, 1, 0, 2500 * time.Millisecond},
		{"rand of 1", destination.Policy{Rand: fixed(1)}, 1, 0, 2500 * time.Millisecond},
	} {
		if got := tc.p.Delay(tc.attempt, tc.retryAfter); got != tc.want {
			t.Errorf("%s: Delay(%d, %v) = %v, want %v", tc.name, tc.attempt, tc.retryAfter, got, tc.want)
		}
	}
	// The default jitter stays in [d/2, d].
	var p destination.Policy
	for attempt := 1; attempt < 40; attempt++ {
		d := min(destination.DefaultBackoffBase<<min(attempt-1, 30), destination.DefaultBackoffMax)
		if got := p.Delay(attempt, 0); got < d/2 || got > d {
			t.Fatalf("Delay(%d) = %v, want in [%v, %v]", attempt, got, d/2, d)
		}
	}
}

func TestPolicyExpired(t *testing.T) {
	first := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		p     destination.Policy
		first time.Time
		after time.Duration
		want  bool
	}{
		{destination.Policy{}, first, 72*time.Hour - time.Nanosecond, false},
		{destination.Policy{}, first, 72 * time.Hour, true},
		{destination.Policy{RetryFor: time.Minute}, first, time.Minute, true},
		{destination.Policy{RetryFor: time.Minute}, first, 59 * time.Second, false},
		{destination.Policy{RetryFor: time.Minute}, time.Time{}, 1000 * time.Hour, false},
	} {
		if got := tc.p.Expired(tc.first, first.Add(tc.after)); got != tc.want {
			t.Errorf("%+v Expired(%v, +%v) = %v", tc.p, tc.first, tc.after, got)
		}
	}
}

// TestPolicyUntil: a wait never extends past the horizon (retry_for from
// the first attempt).
func TestPolicyUntil(t *testing.T) {
	first := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		p     destination.Policy
		first time.Time
		after time.Duration // now - first
		delay time.Duration
		want  time.Duration
	}{
		{"well within", destination.Policy{RetryFor: time.Hour}, first, time.Minute, 5 * time.Minute, 5 * time.Minute},
		{"cut at the horizon", destination.Policy{RetryFor: time.Minute}, first, 0, time.Hour, time.Minute},
		{"cut, later attempt", destination.Policy{RetryFor: time.Minute}, first, 50 * time.Second, time.Hour, 10 * time.Second},
		{"default retry_for", destination.Policy{}, first, 71 * time.Hour, 24 * time.Hour, time.Hour},
		{"past the horizon", destination.Policy{RetryFor: time.Minute}, first, 2 * time.Minute, time.Hour, 0},
		{"no first attempt", destination.Policy{RetryFor: time.Minute}, time.Time{}, 0, time.Hour, time.Hour},
	} {
		if got := tc.p.Until(tc.first, first.Add(tc.after), tc.delay); got != tc.want {
			t.Errorf("%s: Until = %v, want %v", tc.name, got, tc.want)
		}
	}
}
