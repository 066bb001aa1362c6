package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
)

const benchSecret = "pdl_ntfset_01bench000000000000000000000_BenchmarkSecretNotSecret0"

// workload is the pre-built, pre-signed sequence of deliveries; the first
// warmup of them are the warm-up.
type workload struct {
	warmup  int
	events  int
	eventOf []int // delivery index → event index
	bodies  [][]byte
	// signatures are the deliveries' Paddle-Signature headers; every
	// request also says Content-Type: application/json.
	signatures [][]byte
	bodyBytes  int
	// paddle signs the deliveries (sign), with the events' bodies.
	paddle      *provider.Paddle
	eventBodies [][]byte
}

// sign signs every delivery at now. Paddle rejects a signature older than
// the hub's tolerance (5 minutes), and a benchmark with rounds and a
// preload lasts longer than that: each hub run signs afresh before its
// load (22,000 HMACs, milliseconds).
func (w *workload) sign(now time.Time) error {
	for i, e := range w.eventOf {
		h, _, err := w.paddle.Sign(eventID(e), "", w.eventBodies[e], now)
		if err != nil {
			return err
		}
		if len(h) != 1 || h.Get(provider.PaddleSignatureHeader) == "" {
			return fmt.Errorf("workload: Paddle signs with %d headers, the load generator sends one", len(h))
		}
		w.signatures[i] = []byte(h.Get(provider.PaddleSignatureHeader))
	}
	return nil
}

func newWorkload(count int, dupShare float64) (*workload, error) {
	p, err := provider.NewPaddle([]string{benchSecret}, provider.Options{})
	if err != nil {
		return nil, err
	}
	w := &workload{eventOf: make([]int, count)}
	rng := rand.New(rand.NewPCG(1, 2))
	var eventBodies [][]byte
	now := time.Now()
	for i := range count {
		if w.events > 0 && rng.Float64() < dupShare {
			w.eventOf[i] = rng.IntN(w.events)
		} else {
			body, err := samples.Body(p.Name(), eventID(w.events), "subscription.created", nil, now)
			if err != nil {
				return nil, err
			}
			eventBodies = append(eventBodies, body)
			w.eventOf[i] = w.events
			w.events++
		}
	}
	w.bodies = make([][]byte, count)
	w.signatures = make([][]byte, count)
	w.paddle, w.eventBodies = p, eventBodies
	for i, e := range w.eventOf {
		w.bodies[i] = eventBodies[e]
		w.bodyBytes += len(eventBodies[e])
	}
	w.bodyBytes /= max(1, count)
	return w, w.sign(now)
}

func eventID(i int) string { return "evt_bench_" + strconv.Itoa(i) }

func eventIndex(msgID string) (int, bool) {
	s, ok := strings.CutPrefix(msgID, "paddle:evt_bench_")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// load sends deliveries [from, to) of w with concurrency clients over
// keep-alive connections, delivery i to the hub at bases[i mod
// len(bases)], and returns the latencies of the 2xx answers, each from
// writing the request until its whole answer is read, and the measured
// 2xx by hub. It uses fasthttp's client, and each client builds its
// request once and changes only the signature and the body from one
// delivery to the next: the load generator shares the machine with the
// hub, Postgres and NATS, and the lighter it is the more the figures say
// about the hub.
func load(ctx context.Context, bases []string, w *workload, concurrency, from, to int, sent func(i int, at time.Time)) ([]time.Duration, int, time.Duration, []int) {
	var next atomic.Int64
	next.Store(int64(from))
	var non2xx atomic.Int64
	answered := make([]atomic.Int64, len(bases))
	start := time.Now()
	cs := startClients(bases, w, concurrency, func(post func(i int, sending func()) bool) (lat []time.Duration) {
		lat = make([]time.Duration, 0, (to-from)/concurrency+1)
		for ctx.Err() == nil {
			i := int(next.Add(1) - 1)
			if i >= to {
				return lat
			}
			var t0 time.Time
			if !post(i, func() { t0 = time.Now(); sent(i, t0) }) {
				non2xx.Add(1)
				continue
			}
			lat = append(lat, time.Since(t0))
			answered[i%len(bases)].Add(1)
		}
		return lat
	})
	cs.wg.Wait()
	elapsed := time.Since(start)
	byHub := make([]int, len(bases))
	for k := range answered {
		byHub[k] = int(answered[k].Load())
	}
	return cs.latencies(), int(non2xx.Load()), elapsed, byHub
}

// clients post w's deliveries to the hubs over keep-alive connections:
// one fasthttp client per hub.
type clients struct {
	hubs []*fasthttp.HostClient
	wg   sync.WaitGroup // the clients running
	lats [][]time.Duration
}

// startClients starts n clients posting w's deliveries to the hubs at
// bases, delivery i to bases[i mod len(bases)] (round robin, as a load
// balancer would): each runs send with post, which builds the request of
// delivery i, calls sending (when not nil) right before it writes it, and
// reports whether it was answered 2xx; the clients keep the latencies
// send returns.
func startClients(bases []string, w *workload, n int, send func(post func(i int, sending func()) bool) []time.Duration) *clients {
	cs := &clients{lats: make([][]time.Duration, n)}
	for _, base := range bases {
		cs.hubs = append(cs.hubs, &fasthttp.HostClient{
			Addr:               strings.TrimPrefix(base, "http://"),
			MaxConns:           n,
			ReadTimeout:        30 * time.Second,
			WriteTimeout:       30 * time.Second,
			MaxConnWaitTimeout: 30 * time.Second,
		})
	}
	for c := range n {
		labelled("loadgen", func() {
			cs.wg.Go(func() {
				req := fasthttp.AcquireRequest()
				resp := fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.Header.SetMethod(http.MethodPost)
				req.Header.SetContentType("application/json")
				last := -1 // the hub req is addressed to
				cs.lats[c] = send(func(i int, sending func()) bool {
					k := i % len(bases)
					if k != last {
						req.SetRequestURI(bases[k] + "/webhooks/paddle")
						last = k
					}
					req.Header.SetBytesV(provider.PaddleSignatureHeader, w.signatures[i])
					req.SetBodyRaw(w.bodies[i])
					if sending != nil {
						sending()
					}
					err := cs.hubs[k].Do(req, resp)
					return err == nil && resp.StatusCode()/100 == 2
				})
			})
		})
	}
	return cs
}

// latencies closes the connections of clients that have ended and
// returns their latencies, sorted.
func (cs *clients) latencies() []time.Duration {
	for _, c := range cs.hubs {
		c.CloseIdleConnections()
	}
	all := slices.Concat(cs.lats...)
	slices.Sort(all)
	return all
}

func summarize(lat []time.Duration, elapsed time.Duration, deliveries, events int) Result {
	r := Result{Deliveries: deliveries, Events: events, Seconds: elapsed.Seconds()}
	r.PerSecond = float64(len(lat)) / elapsed.Seconds()
	r.P50ms, r.P90ms, r.P99ms = ms(pct(lat, .5)), ms(pct(lat, .9)), ms(pct(lat, .99))
	if len(lat) > 0 {
		r.MaxMs = ms(lat[len(lat)-1])
	}
	return r
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
