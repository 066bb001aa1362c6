package backfill

import (
	"context"
	"time"
)

// SetRetrySleep replaces a source's wait between retries (tests).
func SetRetrySleep(src Source, sleep func(ctx context.Context, d time.Duration) error) {
	switch s := src.(type) {
	case *Stripe:
		s.api.sleep = sleep
	case *Paddle:
		s.api.sleep = sleep
	case *GitHub:
		s.api.sleep = sleep
	}
}

// SetMinLease lowers the shortest lease c validates with, for a test that
// waits through a lease's renewals.
func SetMinLease(c *Config, d time.Duration) { c.minLease = d }

// SetAcquireTimeout lowers how long a run waits to take its lease, for a
// test whose lease statement never answers.
func SetAcquireTimeout(c *Config, d time.Duration) { c.acquireTimeout = d }

// GitHubRefs returns how many deliveries a GitHub source remembers.
func GitHubRefs(src Source) int {
	g := src.(*GitHub)
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.refs)
}

// ParseGitHubDeliveries is parseGitHubDeliveries, returning the items' count.
func ParseGitHubDeliveries(b []byte) (int, error) {
	items, err := parseGitHubDeliveries(b)
	return len(items), err
}
