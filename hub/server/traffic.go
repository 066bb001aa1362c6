package server

import (
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
)

// TrafficMinutes is how many minutes a Traffic counter keeps.
const TrafficMinutes = 60

// TrafficMinute is one minute of webhook requests by status class.
type TrafficMinute struct {
	Start                 time.Time
	OK, ClientErr, SrvErr uint64 // 2xx, 4xx, 5xx answers
}

// Traffic counts webhook answers per minute by status class over the last
// hour, for the operator console's chart. Recording is an atomic load and
// add, and once a minute per bucket the swap of a fresh set of counts, so
// it costs nothing noticeable on the hot path and loses no count.
type Traffic struct {
	buckets [TrafficMinutes]atomic.Pointer[minuteCounts]
}

// minuteCounts are one minute's counts; a bucket moves to a new minute by
// swapping in a fresh one, never by resetting counts in place (an
// increment racing the reset would be lost).
type minuteCounts struct {
	minute int64 // Unix minute the counts belong to
	counts [3]atomic.Uint64
}

// NewTraffic returns an empty counter.
func NewTraffic() *Traffic { return &Traffic{} }

// Record counts one answer of status at now; statuses outside 2xx, 4xx
// and 5xx are not counted.
func (t *Traffic) Record(now time.Time, status int) {
	class := status/100 - 2 // 2xx:0, 3xx:1, 4xx:2, 5xx:3
	switch class {
	case 0:
	case 2, 3:
		class--
	default:
		return
	}
	m := now.Unix() / 60
	b := &t.buckets[m%TrafficMinutes]
	c := b.Load()
	if c == nil || c.minute < m {
		if fresh := (&minuteCounts{minute: m}); b.CompareAndSwap(c, fresh) {
			c = fresh
		} else {
			c = b.Load() // another request moved it first
		}
	}
	if c.minute != m {
		return // a request from a minute long gone (a clock jump)
	}
	c.counts[class].Add(1)
}

// Minutes returns the last TrafficMinutes minutes up to now, oldest
// first; the last one is the current, incomplete minute.
func (t *Traffic) Minutes(now time.Time) []TrafficMinute {
	cur := now.Unix() / 60
	out := make([]TrafficMinute, TrafficMinutes)
	for i := range out {
		m := cur - TrafficMinutes + 1 + int64(i)
		out[i].Start = time.Unix(m*60, 0).UTC()
		c := t.buckets[((m%TrafficMinutes)+TrafficMinutes)%TrafficMinutes].Load()
		if c == nil || c.minute != m {
			continue
		}
		out[i].OK, out[i].ClientErr, out[i].SrvErr = c.counts[0].Load(), c.counts[1].Load(), c.counts[2].Load()
	}
	return out
}

// counted records the status of each answer of h in the server's Traffic
// and, with its latency, in its ProviderTraffic (a panic counts as 5xx).
func (s *Server) counted(h fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) (err error) {
		start := time.Now()
		returned := false
		defer func() {
			status := fiber.StatusInternalServerError
			if returned {
				if err != nil {
					status = classify(err).status
				} else {
					status = c.Response().StatusCode()
				}
			}
			now := s.cfg.Now()
			s.traffic.Record(now, status)
			s.byProv.Record(now, c.Params("provider"), status, time.Since(start))
		}()
		err = h(c)
		returned = true
		return err
	}
}
