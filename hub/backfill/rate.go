package backfill

import (
	"fmt"
	"net/http"

	"golang.org/x/time/rate"
)

// RateLimited returns a copy of client (nil: the default client of the
// sources) whose requests, retries included, start at most perSecond times
// a second (bursts of one): --rate and a provider's documented limits.
// perSecond <= 0 returns the client unchanged.
func RateLimited(client *http.Client, perSecond float64) *http.Client {
	c := *clientOr(client)
	if perSecond <= 0 {
		return &c
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = &limitedTransport{next: next, limiter: rate.NewLimiter(rate.Limit(perSecond), 1)}
	return &c
}

type limitedTransport struct {
	next    http.RoundTripper
	limiter *rate.Limiter
}

func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.limiter.Wait(req.Context()); err != nil {
		return nil, fmt.Errorf("rate limit: %w", err)
	}
	return t.next.RoundTrip(req)
}
