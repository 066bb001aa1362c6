package server

import (
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
	"time"
)

// ProviderTrafficMinutes is how many minutes a ProviderTraffic keeps: a
// day, for the console's charts of the last 1, 6 or 24 hours.
const ProviderTrafficMinutes = 24 * 60

// LatencyBuckets is the number of buckets of a ProviderTraffic latency
// histogram: bucket i holds answers faster than LatencyBound(i)
// (500 µs × 2^i) and not faster than the bucket before; the last one
// holds everything from 500 µs × 2^(LatencyBuckets-2) (8.192 s) up.
const LatencyBuckets = 16

// UnknownProvider is the name under which ProviderTraffic counts requests
// for a provider that is not configured (one bucket for all of them, so
// outside input cannot grow the memory). Not a valid provider name.
const UnknownProvider = "(unknown)"

// Answer classes of a ProviderTraffic bucket.
const (
	classOK     = iota // 2xx
	classAuth          // 401: refused signature or timestamp
	classClient        // other 4xx
	classServer        // 5xx
	classes
)

// LatencyBound is the upper bound (exclusive) of latency bucket i; the
// last bucket has none (math.MaxInt64).
func LatencyBound(i int) time.Duration {
	if i >= LatencyBuckets-1 {
		return math.MaxInt64
	}
	return 500 * time.Microsecond << i
}

// latencyBucket is the bucket of d: bits.Len of d in units of 500 µs.
func latencyBucket(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return min(bits.Len64(uint64(d/(500*time.Microsecond))), LatencyBuckets-1)
}

// ProviderTraffic counts webhook answers per provider and minute over the
// last day, by class (2xx, 401, other 4xx, 5xx), with a histogram of the
// 2xx answers' latency: the console's "which provider is failing, is
// ingest slow" charts. Like Traffic, recording is a few atomic adds (and
// once a minute per provider the swap of a fresh bucket), and the memory
// is fixed: the providers are the configured ones plus UnknownProvider,
// each a ring of ProviderTrafficMinutes buckets allocated as minutes with
// traffic come. The counts are this process's only (one replica); the
// Prometheus metrics are the view across replicas.
type ProviderTraffic struct {
	names []string // sorted configured names, then UnknownProvider
	index map[string]int
	rings []providerRing
}

type providerRing [ProviderTrafficMinutes]atomic.Pointer[providerMinute]

// providerMinute is one provider's minute; a ring slot moves to a new
// minute by swapping in a fresh one (see minuteCounts).
type providerMinute struct {
	minute  int64
	classes [classes]atomic.Uint64
	latency [LatencyBuckets]atomic.Uint64
}

// NewProviderTraffic returns an empty counter for the providers named
// (duplicates count once).
func NewProviderTraffic(providers []string) *ProviderTraffic {
	names := slices.Compact(slices.Sorted(slices.Values(providers)))
	names = slices.DeleteFunc(names, func(n string) bool { return n == UnknownProvider })
	names = append(names, UnknownProvider)
	t := &ProviderTraffic{names: names, index: make(map[string]int, len(names)), rings: make([]providerRing, len(names))}
	for i, n := range names {
		t.index[n] = i
	}
	return t
}

// Record counts one answer to a request for provider at now with status,
// which took latency (only a 2xx answer's latency is kept); statuses
// outside 2xx, 4xx and 5xx are not counted.
func (t *ProviderTraffic) Record(now time.Time, provider string, status int, latency time.Duration) {
	var class int
	switch {
	case status >= 200 && status < 300:
		class = classOK
	case status == 401:
		class = classAuth
	case status >= 400 && status < 500:
		class = classClient
	case status >= 500 && status < 600:
		class = classServer
	default:
		return
	}
	i, ok := t.index[provider]
	if !ok {
		i = len(t.names) - 1
	}
	m := now.Unix() / 60
	slot := &t.rings[i][((m%ProviderTrafficMinutes)+ProviderTrafficMinutes)%ProviderTrafficMinutes]
	c := slot.Load()
	if c == nil || c.minute < m {
		if fresh := (&providerMinute{minute: m}); slot.CompareAndSwap(c, fresh) {
			c = fresh
		} else {
			c = slot.Load()
		}
	}
	if c.minute != m {
		return // a minute long gone (a clock jump)
	}
	c.classes[class].Add(1)
	if class == classOK {
		c.latency[latencyBucket(latency)].Add(1)
	}
}

// ProviderBucket is one provider's answers over one step of a series.
type ProviderBucket struct {
	Start time.Time
	// OK, Auth, Client and Server count the 2xx, 401, other 4xx and 5xx
	// answers.
	OK, Auth, Client, Server uint64
	// Latency is the histogram of the 2xx answers' latency (LatencyBound).
	Latency [LatencyBuckets]uint64
}

// Total is the number of answers counted.
func (b ProviderBucket) Total() uint64 { return b.OK + b.Auth + b.Client + b.Server }

// Failed is the number of answers that were not 2xx.
func (b ProviderBucket) Failed() uint64 { return b.Auth + b.Client + b.Server }

// Quantile estimates the q quantile (0 < q ≤ 1) of the 2xx latency by
// linear interpolation within the histogram's bucket, as Prometheus'
// histogram_quantile does; ok is false without any 2xx answer. In the
// last, open bucket the estimate is its lower bound (8.192 s: "at least").
func (b ProviderBucket) Quantile(q float64) (d time.Duration, ok bool) {
	return LatencyQuantile(b.Latency, q)
}

// LatencyQuantile is ProviderBucket.Quantile of histogram h.
func LatencyQuantile(h [LatencyBuckets]uint64, q float64) (time.Duration, bool) {
	var total uint64
	for _, n := range h {
		total += n
	}
	if total == 0 || !(q > 0 && q <= 1) {
		return 0, false
	}
	rank := q * float64(total)
	var seen float64
	for i, n := range h {
		if n == 0 {
			continue
		}
		if seen+float64(n) >= rank {
			lo := time.Duration(0)
			if i > 0 {
				lo = LatencyBound(i - 1)
			}
			if i == LatencyBuckets-1 {
				return lo, true
			}
			frac := (rank - seen) / float64(n)
			return lo + time.Duration(frac*float64(LatencyBound(i)-lo)), true
		}
		seen += float64(n)
	}
	return LatencyBound(LatencyBuckets - 2), true // not reached
}

// ProviderSeries is one provider's buckets, oldest first.
type ProviderSeries struct {
	Provider string
	Buckets  []ProviderBucket
	// Sum is every bucket added up.
	Sum ProviderBucket
}

// Series returns each provider's answers over the span up to now in steps
// of step, oldest first (the last step holds the current, incomplete
// minute): the configured providers sorted by name, then UnknownProvider
// if it has any answer in the span. span and step are rounded down to
// whole minutes and bounded: span to [1 minute, ProviderTrafficMinutes],
// step to [1 minute, span].
func (t *ProviderTraffic) Series(now time.Time, span, step time.Duration) []ProviderSeries {
	spanMin := min(max(int64(span/time.Minute), 1), ProviderTrafficMinutes)
	stepMin := min(max(int64(step/time.Minute), 1), spanMin)
	steps := (spanMin + stepMin - 1) / stepMin
	cur := now.Unix() / 60
	first := cur - steps*stepMin + 1 // the oldest minute of the oldest step
	out := make([]ProviderSeries, 0, len(t.names))
	for i, name := range t.names {
		s := ProviderSeries{Provider: name, Buckets: make([]ProviderBucket, steps)}
		for k := range s.Buckets {
			s.Buckets[k].Start = time.Unix((first+int64(k)*stepMin)*60, 0).UTC()
		}
		for m := max(first, cur-ProviderTrafficMinutes+1); m <= cur; m++ {
			c := t.rings[i][((m%ProviderTrafficMinutes)+ProviderTrafficMinutes)%ProviderTrafficMinutes].Load()
			if c == nil || c.minute != m {
				continue
			}
			b := &s.Buckets[(m-first)/stepMin]
			b.OK += c.classes[classOK].Load()
			b.Auth += c.classes[classAuth].Load()
			b.Client += c.classes[classClient].Load()
			b.Server += c.classes[classServer].Load()
			for j := range b.Latency {
				b.Latency[j] += c.latency[j].Load()
			}
		}
		for _, b := range s.Buckets {
			s.Sum.OK += b.OK
			s.Sum.Auth += b.Auth
			s.Sum.Client += b.Client
			s.Sum.Server += b.Server
			for j := range b.Latency {
				s.Sum.Latency[j] += b.Latency[j]
			}
		}
		if len(s.Buckets) > 0 {
			s.Sum.Start = s.Buckets[0].Start
		}
		if name == UnknownProvider && s.Sum.Total() == 0 {
			continue
		}
		out = append(out, s)
	}
	return out
}
