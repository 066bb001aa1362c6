package bench

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
)

// liveLoad sends deliveries to a hub at a fixed rate, open loop, for as
// long as it is not stopped (at most max deliveries): delivery i is due at
// start + i/rate, made (a new event, signed now) when it is due and
// forgotten once answered, so its memory does not grow with the run's
// length. It keeps each delivery's answer time, from which phase reports
// any time window.
type liveLoad struct {
	w        *workload
	rate     int
	start    time.Time
	interval time.Duration
	tmpl     []byte
	ph       []byte
	done     []atomic.Int64 // unix ns of the 2xx answer; -1 for another answer; 0 not answered
	due      chan int
	stopped  atomic.Bool
	sent     atomic.Int64
	cs       *clients
	finished chan struct{}
}

// startLiveLoad starts sending to the hub at base at rate deliveries/s
// over clients connections; stop ends it.
func startLiveLoad(ctx context.Context, base string, rate, clients, maxDeliveries int) (*liveLoad, error) {
	p, err := provider.NewPaddle([]string{benchSecret}, provider.Options{})
	if err != nil {
		return nil, err
	}
	ph := "evt_live_" + strings.Repeat("0", len(strconv.Itoa(maxDeliveries)))
	tmpl, err := samples.Body(p.Name(), ph, "subscription.created", nil, time.Now())
	if err != nil {
		return nil, err
	}
	l := &liveLoad{
		w:    &workload{paddle: p, bodies: make([][]byte, maxDeliveries), signatures: make([][]byte, maxDeliveries)},
		rate: rate, interval: time.Second / time.Duration(rate), tmpl: tmpl, ph: []byte(ph),
		done: make([]atomic.Int64, maxDeliveries), due: make(chan int, maxDeliveries), finished: make(chan struct{}),
	}
	l.start = time.Now().Add(10 * time.Millisecond)
	l.cs = startClients([]string{base}, l.w, clients, func(post func(i int, sending func()) bool) []time.Duration {
		for i := range l.due {
			if post(i, nil) {
				l.done[i].Store(time.Now().UnixNano())
			} else {
				l.done[i].Store(-1)
			}
			l.w.bodies[i], l.w.signatures[i] = nil, nil
		}
		return nil
	})
	go labelled("loadgen", func() { l.dispatch(ctx, maxDeliveries) })
	return l, nil
}

// dispatch makes each delivery when it is due and hands it to a client.
func (l *liveLoad) dispatch(ctx context.Context, n int) {
	defer close(l.finished)
	defer close(l.due)
	width := len(l.ph) - len("evt_live_")
	for i := range n {
		if ctx.Err() != nil || l.stopped.Load() {
			return
		}
		if d := time.Until(l.at(i)); d > 0 {
			time.Sleep(d)
		}
		digits := strconv.Itoa(i)
		id := "evt_live_" + strings.Repeat("0", width-len(digits)) + digits
		body := bytes.ReplaceAll(l.tmpl, l.ph, []byte(id))
		h, _, err := l.w.paddle.Sign(id, "", body, time.Now())
		if err != nil {
			return
		}
		l.w.bodies[i], l.w.signatures[i] = body, []byte(h.Get(provider.PaddleSignatureHeader))
		l.sent.Store(int64(i + 1))
		l.due <- i
	}
}

func (l *liveLoad) at(i int) time.Time { return l.start.Add(time.Duration(i) * l.interval) }

// stop stops making deliveries and waits for the answers of those made.
func (l *liveLoad) stop() {
	l.stopped.Store(true)
	<-l.finished
	l.cs.wg.Wait()
	for _, c := range l.cs.hubs {
		c.CloseIdleConnections()
	}
}

// PhaseLoad is the load's figures over one phase of a purge bench: the
// deliveries due in it.
type PhaseLoad struct {
	Seconds    float64 `json:"seconds"`
	Deliveries int     `json:"deliveries"` // due in the phase
	// PerSecond is the 2xx answered in the phase over its length: the
	// rate sent while the hub keeps up.
	PerSecond float64 `json:"per_second"`
	Non2xx    int     `json:"non_2xx"`
	// Unanswered were due in the phase and not answered by the end.
	Unanswered int     `json:"unanswered,omitempty"`
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
}

// phase reports the deliveries due in [from, to), each latency from its
// due time to its answer.
func (l *liveLoad) phase(from, to time.Time) PhaseLoad {
	r := PhaseLoad{Seconds: to.Sub(from).Seconds()}
	var lat []time.Duration
	answered := 0
	n := int(l.sent.Load())
	for i := range n {
		due := l.at(i)
		d := l.done[i].Load()
		if d > 0 && !time.Unix(0, d).Before(from) && time.Unix(0, d).Before(to) {
			answered++
		}
		if due.Before(from) || !due.Before(to) {
			continue
		}
		r.Deliveries++
		switch {
		case d > 0:
			lat = append(lat, time.Unix(0, d).Sub(due))
		case d < 0:
			r.Non2xx++
		default:
			r.Unanswered++
		}
	}
	slices.Sort(lat)
	r.P50ms, r.P99ms, r.MaxMs = percentiles(lat)
	if r.Seconds > 0 {
		r.PerSecond = float64(answered) / r.Seconds
	}
	return r
}

// windows returns the phase figures of every window of length d from
// from to to, for a time line.
func (l *liveLoad) windows(from, to time.Time, d time.Duration) []PhaseLoad {
	var out []PhaseLoad
	for t := from; t.Before(to) && len(out) < 10_000; t = t.Add(d) {
		end := t.Add(d)
		if end.After(to) {
			end = to
		}
		out = append(out, l.phase(t, end))
	}
	return out
}

func (p PhaseLoad) String() string {
	return fmt.Sprintf("%6.0f/s  p50 %6.1f ms  p99 %7.1f ms  max %7.1f ms", p.PerSecond, p.P50ms, p.P99ms, p.MaxMs)
}
