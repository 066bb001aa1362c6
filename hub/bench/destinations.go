package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/valyala/fasthttp"

	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/natsembed"
	"github.com/hookhub/hookhub/schema"
)

// DestinationsConfig configures Destinations: the benchmark of the
// destinations process.
type DestinationsConfig struct {
	AdminURL   string   // a Postgres URL; bench databases are created next to it
	HubCommand []string // how to start the hub; "serve" is appended
	// DestinationsCommand starts the destinations process
	// (subscribers/destination/cmd/destinations); it is configured by the
	// environment (DESTINATIONS_*).
	DestinationsCommand []string
	// Concurrency is the destination's concurrency (the file's
	// concurrency: requests in flight).
	Concurrency int
	// Preload is how many events are on the stream before the
	// destinations process starts: the drain measures its throughput.
	Preload int
	// LatencyFor is how long events are published at LatencyRate for the
	// stream-to-receiver latency; LatencyRate 0 means half the drain rate.
	LatencyFor  time.Duration
	LatencyRate float64
	// IngestRate is the fixed rate of the hub runs (deliveries/s, open
	// loop), IngestFor how long each is measured after IngestWarmup, and
	// IngestClients the connections the deliveries are sent over. An
	// IngestFor of 0 skips the hub runs.
	IngestRate    int
	IngestFor     time.Duration
	IngestWarmup  time.Duration
	IngestClients int
	// Rounds repeats the hub runs (without, then with destinations; the
	// other way round in every other round, so drift affects both alike).
	Rounds   int
	Keep     bool     // keep the bench databases
	ExtraEnv []string // more HUB_* variables for the hubs
	Log      io.Writer
}

// DestinationsReport is the result of Destinations.
type DestinationsReport struct {
	Concurrency int `json:"destination_concurrency"`
	BodyBytes   int `json:"body_bytes"`
	// Drain is the destinations process delivering a preloaded backlog.
	Drain DestinationRun `json:"drain"`
	// Latency is the same process fed at a fixed rate.
	Latency DestinationRun `json:"latency"`
	// Ingest holds the hub run without destinations then the one with,
	// both of the median round (IngestMedianRound, 1-based): the round
	// whose ratio of the ingest 2xx p99 with destinations to the one
	// without is the median of the rounds' (the lower middle of an even
	// count), IngestP99Ratio. The two runs are one round's, so the table
	// of them shows the ratio the verdict judges. IngestRounds is every
	// round.
	Ingest            []IngestRun   `json:"ingest,omitempty"`
	IngestRounds      [][]IngestRun `json:"ingest_rounds,omitempty"`
	IngestMedianRound int           `json:"ingest_median_round,omitempty"`
	IngestP99Ratio    float64       `json:"ingest_p99_ratio,omitempty"`
	// PeakRSSMB is the destinations process's peak resident set over the
	// drain and the latency run (VmHWM).
	PeakRSSMB   float64 `json:"destinations_peak_rss_mb"`
	NothingLost bool    `json:"nothing_lost"`
	// LoadBefore and LoadAfter are the machine's 1-minute load average
	// (/proc/loadavg) when the bench started and ended: above the number
	// of CPUs, something else competed with the measured processes.
	LoadBefore float64 `json:"load_average_before"`
	LoadAfter  float64 `json:"load_average_after"`
}

// DestinationRun is the destinations process delivering events published
// straight to the stream, in the hub's message shape, to the bench's
// receiver. CPU figures are per delivered event, over the run.
type DestinationRun struct {
	Events     int     `json:"events"`
	Received   int     `json:"received"`   // distinct events that reached the receiver
	Duplicates int     `json:"duplicates"` // requests beyond the first of an event
	Seconds    float64 `json:"seconds"`
	// PerSecond is deliveries/s: for the drain, the events over the time
	// from the first receipt to the last; for the latency run, the rate
	// events were published at.
	PerSecond float64 `json:"per_second"`
	// P50ms, P99ms and MaxMs are, for the latency run, from publishing an
	// event (the bench's publish call) until the receiver had it.
	P50ms         float64 `json:"p50_ms,omitempty"`
	P99ms         float64 `json:"p99_ms,omitempty"`
	MaxMs         float64 `json:"max_ms,omitempty"`
	DestCPUus     float64 `json:"destinations_cpu_us_per_delivery"`
	PostgresCPUus float64 `json:"postgres_cpu_us_per_delivery"`
	// BenchCPUus is the bench process: the receiver, the publisher and the
	// embedded NATS server.
	BenchCPUus float64 `json:"bench_cpu_us_per_delivery"`
}

// IngestRun is the hub under a fixed, open-loop rate of deliveries, with or
// without a destinations process forwarding every event.
type IngestRun struct {
	Name         string `json:"name"`
	Destinations bool   `json:"destinations"`
	Rate         int    `json:"rate"`
	Deliveries   int    `json:"deliveries"` // measured (after the warm-up)
	// Seconds is the measured part: from the first measured delivery's due
	// time until every answer was read and, with destinations, every event
	// received. The CPU figures cover the same window.
	Seconds float64 `json:"seconds"`
	// P50ms, P99ms and MaxMs are of the 2xx, from the time each request
	// was due (not when a client got to send it: no coordinated omission)
	// until its whole answer was read.
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// ForwardP50ms and ForwardP99ms are from the time a measured event was
	// due at the hub until the destination's receiver had it.
	ForwardP50ms  float64 `json:"forward_p50_ms,omitempty"`
	ForwardP99ms  float64 `json:"forward_p99_ms,omitempty"`
	Forwarded     int     `json:"forwarded,omitempty"` // distinct events the receiver had, warm-up included
	HubCPUus      float64 `json:"hub_cpu_us_per_delivery"`
	DestCPUus     float64 `json:"destinations_cpu_us_per_delivery,omitempty"`
	PostgresCPUus float64 `json:"postgres_cpu_us_per_delivery"`
	BenchCPUus    float64 `json:"bench_cpu_us_per_delivery"`
	HubPeakRSSMB  float64 `json:"hub_peak_rss_mb"`
	DestPeakRSSMB float64 `json:"destinations_peak_rss_mb,omitempty"`
	Non2xx        int     `json:"non_2xx"`
	// Lost counts events missing from the stream or the hub's tables, or,
	// with destinations, never received.
	Lost int `json:"lost"`
}

// destName is the bench's destination, and destSecretEnv the variable its
// secret is read from.
const (
	destName      = "bench"
	destSecretEnv = "HUB_BENCH_DESTINATION_SECRET"
	destSecret    = "whsec_YmVuY2gtc2VjcmV0LW5vdC1zZWNyZXQtMDEyMzQ1Njc4OQ=="
)

// maxLatencyEvents bounds the latency run's events (memory: a publish and a
// receipt time each).
const maxLatencyEvents = 1_000_000

// Destinations runs the destinations benchmark: a drain of cfg.Preload
// events, a fixed-rate run for the latency, and the hub at a fixed ingest
// rate without and with destinations.
func Destinations(ctx context.Context, cfg DestinationsConfig) (rep DestinationsReport, err error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Concurrency <= 0 || cfg.Preload < 2 || len(cfg.DestinationsCommand) == 0 {
		return DestinationsReport{}, errors.New("destinations bench: concurrency, a preload of at least 2 events and the destinations command are required")
	}
	rep = DestinationsReport{Concurrency: cfg.Concurrency, NothingLost: true, LoadBefore: loadAverage()}
	defer func() { rep.LoadAfter = loadAverage() }()
	srv, err := connectServer(ctx, cfg.AdminURL)
	if err != nil {
		return rep, err
	}
	defer srv.close()
	dir, err := os.MkdirTemp("", "hub-bench-destinations-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	ns, err := startNATS(dir)
	if err != nil {
		return rep, err
	}
	defer ns.Shutdown()

	if err := destinationRuns(ctx, cfg, srv, ns.ClientURL(), dir, &rep); err != nil {
		return rep, err
	}
	if cfg.IngestFor <= 0 {
		return rep, nil
	}
	count := int(float64(cfg.IngestRate) * (cfg.IngestWarmup + cfg.IngestFor).Seconds())
	w, err := newWorkload(count, 0)
	if err != nil {
		return rep, err
	}
	w.warmup = int(float64(cfg.IngestRate) * cfg.IngestWarmup.Seconds())
	rounds := max(1, cfg.Rounds)
	for n := range rounds {
		order := []bool{false, true}
		if n%2 == 1 {
			order = []bool{true, false}
		}
		round := make([]IngestRun, 2)
		for _, withDest := range order {
			name := "hub at a fixed rate, no destinations"
			if withDest {
				name = "hub at a fixed rate, forwarding every event"
			}
			fmt.Fprintf(cfg.Log, "round %d/%d: %s (%d/s for %s after %s of warm-up) …\n", n+1, rounds, name, cfg.IngestRate, cfg.IngestFor, cfg.IngestWarmup)
			r, err := runIngest(ctx, cfg, srv, ns.ClientURL(), dir, w, withDest)
			if err != nil {
				return rep, fmt.Errorf("%s: %w", name, err)
			}
			r.Name = name
			rep.NothingLost = rep.NothingLost && r.Lost == 0 && r.Non2xx == 0
			round[btoi(withDest)] = r
		}
		rep.IngestRounds = append(rep.IngestRounds, round)
	}
	rep.medianRound()
	if rounds == 1 {
		rep.IngestRounds = nil
	}
	return rep, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// destinationRuns measures the destinations process alone: the drain of a
// preloaded backlog, then the latency at a fixed publish rate, on one
// process and one database.
func destinationRuns(ctx context.Context, cfg DestinationsConfig, srv *server, natsURL, dir string, rep *DestinationsReport) error {
	db, err := srv.create(ctx, "dest", "")
	if err != nil {
		return err
	}
	if !cfg.Keep {
		defer srv.drop(db.name)
	}
	var nc *nats.Conn
	labelled("nats-client", func() { nc, err = nats.Connect(natsURL) })
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return err
	}
	if err := js.DeleteStream(ctx, schema.DefaultStream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	stream, err := relay.EnsureStream(ctx, js, relay.StreamConfig{
		Name: schema.DefaultStream, Providers: []string{"paddle"}, Replicas: 1, DuplicateWindow: 2 * time.Minute,
	})
	if err != nil {
		return err
	}

	// The messages: the preload's, then the latency run's at most.
	pub, err := newPublisher(cfg.Preload + maxLatencyEvents)
	if err != nil {
		return err
	}
	rep.BodyBytes = len(pub.body)
	rc, err := startReceiver(cfg.Preload + maxLatencyEvents)
	if err != nil {
		return err
	}
	defer rc.close()

	fmt.Fprintf(cfg.Log, "drain: publishing %d events with the destinations process stopped …\n", cfg.Preload)
	pubCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	err = pub.publishAll(pubCtx, js, 0, cfg.Preload)
	cancel()
	if err != nil {
		return err
	}
	if info, err := stream.Info(ctx); err != nil {
		return err
	} else if info.State.Msgs != uint64(cfg.Preload) {
		return fmt.Errorf("the stream holds %d messages after publishing %d", info.State.Msgs, cfg.Preload)
	}

	dp, err := startDestinations(ctx, cfg, dir, db.url, natsURL, rc.url)
	if err != nil {
		return err
	}
	defer dp.stop()
	fmt.Fprintf(cfg.Log, "destinations pid %d (concurrency %d) started; draining …\n", dp.cmd.Process.Pid, cfg.Concurrency)

	// (a) The drain: CPU from the first receipt to the last.
	select {
	case <-rc.firstReceipt:
	case <-time.After(60 * time.Second):
		return errors.New("drain: nothing received within 60 s of starting the destinations process")
	case err := <-dp.exited:
		return fmt.Errorf("the destinations process exited: %v", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	at0 := rc.received.Load()
	cpu0, pg0, self0 := cpuTime(dp.pid()), postgresCPU(), cpuTime(os.Getpid())
	if err := rc.waitFor(ctx, 0, cfg.Preload, drainTimeout(cfg.Preload), dp.exited); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	cpu, pg, self := cpuTime(dp.pid())-cpu0, postgresCPU()-pg0, cpuTime(os.Getpid())-self0
	drainDups := rc.dups.Load()
	first, last := rc.span(0, cfg.Preload)
	d := &rep.Drain
	d.Events, d.Received = cfg.Preload, rc.distinct(0, cfg.Preload)
	d.Seconds = time.Duration(last - first).Seconds()
	if d.Seconds > 0 {
		d.PerSecond = float64(cfg.Preload-1) / d.Seconds
	}
	n := max(1, cfg.Preload-int(at0))
	d.DestCPUus, d.PostgresCPUus, d.BenchCPUus = perDelivery(cpu, n), perDelivery(pg, n), perDelivery(self, n)
	fmt.Fprintf(cfg.Log, "drain: %d events in %.1f s: %.0f deliveries/s\n", d.Events, d.Seconds, d.PerSecond)

	// (b) The latency at a fixed rate.
	rate := cfg.LatencyRate
	if rate <= 0 {
		rate = d.PerSecond / 2
	}
	events := min(maxLatencyEvents, int(rate*cfg.LatencyFor.Seconds()))
	l := &rep.Latency
	if events > 0 {
		l.Events, l.PerSecond = events, rate
		fmt.Fprintf(cfg.Log, "latency: publishing %d events at %.0f/s …\n", events, rate)
		from, to := cfg.Preload, cfg.Preload+events
		cpu0, pg0, self0 := cpuTime(dp.pid()), postgresCPU(), cpuTime(os.Getpid())
		start := time.Now()
		if err := pub.publishPaced(ctx, js, from, to, rate); err != nil {
			return err
		}
		if err := rc.waitFor(ctx, from, to, 60*time.Second, dp.exited); err != nil {
			return fmt.Errorf("latency: %w", err)
		}
		l.Seconds = time.Since(start).Seconds()
		cpu, pg, self := cpuTime(dp.pid())-cpu0, postgresCPU()-pg0, cpuTime(os.Getpid())-self0
		l.Received = rc.distinct(from, to)
		lat := make([]time.Duration, 0, events)
		for i := from; i < to; i++ {
			if at := rc.first[i].Load(); at != 0 {
				lat = append(lat, time.Duration(at-pub.sentAt[i].Load()))
			}
		}
		slices.Sort(lat)
		l.P50ms, l.P99ms = ms(pct(lat, 0.50)), ms(pct(lat, 0.99))
		if len(lat) > 0 {
			l.MaxMs = ms(lat[len(lat)-1])
		}
		l.DestCPUus, l.PostgresCPUus, l.BenchCPUus = perDelivery(cpu, events), perDelivery(pg, events), perDelivery(self, events)
		fmt.Fprintf(cfg.Log, "latency: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", l.P50ms, l.P99ms, l.MaxMs)
	}
	rep.PeakRSSMB = peakRSS(dp.pid())
	// A duplicate is counted with the run it arrived in.
	d.Duplicates, l.Duplicates = int(drainDups), int(rc.dups.Load()-drainDups)
	rep.NothingLost = rep.NothingLost && d.Received == d.Events && l.Received == l.Events && rc.foreign.Load() == 0
	return nil
}

// drainTimeout bounds the wait for a drain of n events: at least a minute,
// and no slower than 100 events/s.
func drainTimeout(n int) time.Duration {
	return max(time.Minute, time.Duration(n/100)*time.Second)
}

// runIngest runs the hub on a fresh database under w's deliveries at
// cfg.IngestRate, open loop, with or without a destinations process
// forwarding every event to the bench's receiver.
func runIngest(ctx context.Context, cfg DestinationsConfig, srv *server, natsURL, dir string, w *workload, withDest bool) (IngestRun, error) {
	res := IngestRun{Destinations: withDest, Rate: cfg.IngestRate, Deliveries: len(w.bodies) - w.warmup}
	db, err := srv.create(ctx, "ingest", "")
	if err != nil {
		return res, err
	}
	if !cfg.Keep {
		defer srv.drop(db.name)
	}
	since := time.Now()
	if err := w.sign(since); err != nil {
		return res, err
	}
	var nc *nats.Conn
	labelled("nats-client", func() { nc, err = nats.Connect(natsURL) })
	if err != nil {
		return res, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return res, err
	}
	if err := js.DeleteStream(ctx, schema.DefaultStream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return res, err
	}
	hp, err := startHub(ctx, Config{HubCommand: cfg.HubCommand, ExtraEnv: cfg.ExtraEnv, Log: cfg.Log}, db.url, natsURL, 64)
	if err != nil {
		return res, err
	}
	defer hp.stop()
	stream, err := waitStream(ctx, js, 30*time.Second)
	if err != nil {
		return res, err
	}
	var rc *receiver
	var dp *destProcess
	if withDest {
		if rc, err = startReceiver(w.events); err != nil {
			return res, err
		}
		defer rc.close()
		if dp, err = startDestinations(ctx, cfg, dir, db.url, natsURL, rc.url); err != nil {
			return res, err
		}
		defer dp.stop()
		// The consumer exists before the first delivery: the warm-up goes
		// through the destination too.
		if err := waitConsumer(ctx, js, destName, 30*time.Second); err != nil {
			return res, err
		}
	}

	pcfg, err := pgxpool.ParseConfig(db.url)
	if err != nil {
		return res, err
	}
	pcfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return res, err
	}
	defer pool.Close()

	var cpu0, dest0, pg0, self0 time.Duration
	snapshot := func() {
		cpu0, pg0, self0 = cpuTime(hp.cmd.Process.Pid), postgresCPU(), cpuTime(os.Getpid())
		if dp != nil {
			dest0 = cpuTime(dp.pid())
		}
	}
	start, lat, non2xx := paced(ctx, hp.base, w, cfg.IngestRate, cfg.IngestClients, snapshot)
	interval := time.Second / time.Duration(cfg.IngestRate)
	due := func(i int) int64 { return start.Add(time.Duration(i) * interval).UnixNano() }
	if rc != nil {
		if err := rc.waitFor(ctx, 0, w.events, 60*time.Second, dp.exited); err != nil {
			fmt.Fprintf(cfg.Log, "destination: %v\n", err)
		}
	}
	cpu, pg, self := cpuTime(hp.cmd.Process.Pid)-cpu0, postgresCPU()-pg0, cpuTime(os.Getpid())-self0
	res.Seconds = time.Since(start.Add(time.Duration(w.warmup) * interval)).Seconds()
	n := max(1, res.Deliveries)
	res.HubCPUus, res.PostgresCPUus, res.BenchCPUus = perDelivery(cpu, n), perDelivery(pg, n), perDelivery(self, n)
	res.HubPeakRSSMB = peakRSS(hp.cmd.Process.Pid)
	res.Non2xx = non2xx
	res.P50ms, res.P99ms = ms(pct(lat, 0.50)), ms(pct(lat, 0.99))
	if len(lat) > 0 {
		res.MaxMs = ms(lat[len(lat)-1])
	}
	if dp != nil {
		res.DestCPUus = perDelivery(cpuTime(dp.pid())-dest0, n)
		res.DestPeakRSSMB = peakRSS(dp.pid())
		res.Forwarded = rc.distinct(0, w.events)
		res.Lost += w.events - res.Forwarded
		var fwd []time.Duration
		for i := w.warmup; i < w.events; i++ { // no duplicates: event i is delivery i
			if at := rc.first[i].Load(); at != 0 {
				fwd = append(fwd, time.Duration(at-due(i)))
			}
		}
		slices.Sort(fwd)
		res.ForwardP50ms, res.ForwardP99ms = ms(pct(fwd, 0.50)), ms(pct(fwd, 0.99))
	}

	// Nothing lost by the hub: every event on the stream once, recorded
	// once, none left in the outbox.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if info, err := stream.Info(ctx); err == nil && info.State.Msgs >= uint64(w.events) {
			if b, err := store.New(pool).OutboxBacklog(ctx); err == nil && b.Pending == 0 {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	check := Result{Events: w.events}
	if err := verify(ctx, &check, store.New(pool), since.Add(-time.Minute), js, nil); err != nil {
		return res, err
	}
	res.Lost += check.Lost + check.Duplicated
	fmt.Fprintf(cfg.Log, "ingest 2xx p50 %.1f ms, p99 %.1f ms, max %.1f ms; hub %.0f µs/delivery\n", res.P50ms, res.P99ms, res.MaxMs, res.HubCPUus)
	return res, nil
}

// paced sends w's deliveries at rate per second, open loop: delivery i is
// due at start + i/rate whether or not earlier ones were answered, and
// its latency runs from then until its whole answer was read, so a stall
// of the hub counts for every request it held up (no coordinated
// omission). clients connections send them. measured is called when the
// first delivery after the warm-up is due. It returns the start and the
// sorted latencies of the measured 2xx.
func paced(ctx context.Context, base string, w *workload, rate, clients int, measured func()) (time.Time, []time.Duration, int) {
	client := &fasthttp.HostClient{
		Addr:               strings.TrimPrefix(base, "http://"),
		MaxConns:           clients,
		ReadTimeout:        30 * time.Second,
		WriteTimeout:       30 * time.Second,
		MaxConnWaitTimeout: 30 * time.Second,
	}
	defer client.CloseIdleConnections()
	url := base + "/webhooks/paddle"
	interval := time.Second / time.Duration(rate)
	due := make(chan int, len(w.bodies))
	var non2xx atomic.Int64
	lats := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	start := time.Now().Add(10 * time.Millisecond)
	for c := range clients {
		labelled("loadgen", func() {
			wg.Go(func() {
				req := fasthttp.AcquireRequest()
				resp := fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.SetRequestURI(url)
				req.Header.SetMethod(http.MethodPost)
				req.Header.SetContentType("application/json")
				for i := range due {
					req.Header.SetBytesV(provider.PaddleSignatureHeader, w.signatures[i])
					req.SetBodyRaw(w.bodies[i])
					if err := client.Do(req, resp); err != nil || resp.StatusCode()/100 != 2 {
						if i >= w.warmup {
							non2xx.Add(1)
						}
						continue
					}
					if i >= w.warmup {
						lats[c] = append(lats[c], time.Since(start.Add(time.Duration(i)*interval)))
					}
				}
			})
		})
	}
	labelled("loadgen", func() {
		for i := range w.bodies {
			if ctx.Err() != nil {
				break
			}
			at := start.Add(time.Duration(i) * interval)
			if d := time.Until(at); d > 0 {
				time.Sleep(d)
			}
			if i == w.warmup && measured != nil {
				measured()
			}
			due <- i
		}
		close(due)
	})
	wg.Wait()
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	return start, all, int(non2xx.Load())
}

// publisher publishes events straight to the stream in the hub's message
// shape (schema.Metadata headers, Nats-Msg-Id "paddle:<event id>"), each
// with the same Paddle sample body, and notes when each was published.
type publisher struct {
	body    []byte
	subject string
	sentAt  []atomic.Int64 // unix nanos
}

func newPublisher(n int) (*publisher, error) {
	subject, err := schema.Subject("paddle", "subscription.created")
	if err != nil {
		return nil, err
	}
	body, err := samples.Body("paddle", eventID(0), "subscription.created", nil, time.Now())
	if err != nil {
		return nil, err
	}
	return &publisher{body: body, subject: subject, sentAt: make([]atomic.Int64, n)}, nil
}

func (p *publisher) msg(i int, now time.Time) *nats.Msg {
	md := schema.Metadata{
		MsgID: schema.MsgID("paddle", eventID(i)), EventID: eventID(i), Provider: "paddle",
		EventType: "subscription.created", ArchiveID: uuid.NewString(), ReceivedAt: now, OccurredAt: now.Add(-time.Second),
	}
	return &nats.Msg{Subject: p.subject, Header: md.Header(), Data: p.body}
}

// publishAll publishes events [from, to) as fast as JetStream takes them.
func (p *publisher) publishAll(ctx context.Context, js jetstream.JetStream, from, to int) error {
	for i := from; i < to; i++ {
		now := time.Now()
		p.sentAt[i].Store(now.UnixNano())
		if _, err := js.PublishMsgAsync(p.msg(i, now), jetstream.WithExpectStream(schema.DefaultStream), jetstream.WithStallWait(30*time.Second)); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
	}
	return p.complete(ctx, js)
}

// publishPaced publishes events [from, to) at rate per second: event i at
// its due time, or at once when the publisher is behind.
func (p *publisher) publishPaced(ctx context.Context, js jetstream.JetStream, from, to int, rate float64) error {
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	for i := from; i < to; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d := time.Until(start.Add(time.Duration(i-from) * interval)); d > 0 {
			time.Sleep(d)
		}
		now := time.Now()
		p.sentAt[i].Store(now.UnixNano())
		if _, err := js.PublishMsgAsync(p.msg(i, now), jetstream.WithExpectStream(schema.DefaultStream), jetstream.WithStallWait(30*time.Second)); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
	}
	return p.complete(ctx, js)
}

func (p *publisher) complete(ctx context.Context, js jetstream.JetStream) error {
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return ctx.Err()
	}
	if n := js.PublishAsyncPending(); n > 0 {
		return fmt.Errorf("publish: %d messages not acknowledged", n)
	}
	return nil
}

// receiver is the trivial local endpoint the destination delivers to: it
// reads each request's body, notes when each webhook-id ("paddle:evt_bench_<i>")
// first arrived and answers 204. It verifies no signature: its CPU is the
// bench process's, and is kept small.
type receiver struct {
	url          string
	srv          *http.Server
	first        []atomic.Int64 // unix nanos of event i's first receipt
	received     atomic.Int64   // distinct events
	dups         atomic.Int64   // requests for an event already received
	foreign      atomic.Int64   // requests with another webhook-id
	once         sync.Once
	firstReceipt chan struct{} // closed at the first receipt
}

func startReceiver(n int) (*receiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &receiver{url: "http://" + l.Addr().String() + "/hook", first: make([]atomic.Int64, n), firstReceipt: make(chan struct{})}
	rc.srv = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	labelled("receiver", func() { go func() { _ = rc.srv.Serve(l) }() })
	return rc, nil
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now().UnixNano()
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	i, ok := eventIndex(r.Header.Get("webhook-id"))
	switch {
	case !ok || i >= len(rc.first):
		rc.foreign.Add(1)
	case rc.first[i].CompareAndSwap(0, at):
		rc.received.Add(1)
		rc.once.Do(func() { close(rc.firstReceipt) })
	default:
		rc.dups.Add(1)
	}
	w.WriteHeader(http.StatusNoContent)
}

// waitFor waits until every event of [from, to) was received, for at most
// timeout, or until the destinations process exits.
func (rc *receiver) waitFor(ctx context.Context, from, to int, timeout time.Duration, exited <-chan error) error {
	deadline := time.Now().Add(timeout)
	next := from
	for {
		for next < to && rc.first[next].Load() != 0 {
			next++
		}
		if next == to {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d events not received after %s", to-from-rc.distinct(from, to), to-from, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-exited:
			return fmt.Errorf("the destinations process exited: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// distinct counts the events of [from, to) received.
func (rc *receiver) distinct(from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		if rc.first[i].Load() != 0 {
			n++
		}
	}
	return n
}

// span is the first and the last first receipt among [from, to).
func (rc *receiver) span(from, to int) (first, last int64) {
	for i := from; i < to; i++ {
		at := rc.first[i].Load()
		if at == 0 {
			continue
		}
		if first == 0 || at < first {
			first = at
		}
		last = max(last, at)
	}
	return first, last
}

func (rc *receiver) close() { _ = rc.srv.Close() }

// destProcess is a running destinations process.
type destProcess struct {
	cmd    *exec.Cmd
	exited chan error // receives the process's exit (once)
	done   chan struct{}
}

func (d *destProcess) pid() int { return d.cmd.Process.Pid }

// startDestinations writes a destinations file with one destination,
// forwarding everything the bench publishes (paddle.>) to url, the
// backlog published before it started included (start: all), and starts
// the destinations process on it.
func startDestinations(ctx context.Context, cfg DestinationsConfig, dir, dbURL, natsURL, url string) (*destProcess, error) {
	file := filepath.Join(dir, "destinations.yaml")
	spec := fmt.Sprintf("destinations:\n  - name: %s\n    url: %s\n    subjects: [\"paddle.>\"]\n    secret_env: %s\n    concurrency: %d\n    start: all\n",
		destName, url, destSecretEnv, cfg.Concurrency)
	if err := os.WriteFile(file, []byte(spec), 0o600); err != nil {
		return nil, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, cfg.DestinationsCommand[0], cfg.DestinationsCommand[1:]...)
	// The bench's own settings last: when a variable is listed twice the
	// last value wins.
	cmd.Env = append(slices.Clip(os.Environ()),
		"DESTINATIONS_FILE="+file, "DESTINATIONS_DATABASE_URL="+dbURL, "DESTINATIONS_NATS_URL="+natsURL,
		"DESTINATIONS_STREAM="+schema.DefaultStream, "DESTINATIONS_HTTP_ADDR="+httpAddr,
		"DESTINATIONS_DATABASE_MAX_CONNS="+strconv.Itoa(cfg.Concurrency+4), "DESTINATIONS_LOG_LEVEL=warn",
		"DESTINATIONS_OTEL_ENABLED=false", destSecretEnv+"="+destSecret)
	cmd.Stdout, cmd.Stderr = cfg.Log, cfg.Log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start destinations: %w", err)
	}
	d := &destProcess{cmd: cmd, exited: make(chan error, 1), done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		d.exited <- err
		close(d.done)
	}()
	return d, nil
}

// stop interrupts the process and waits for it (killing it after 30 s).
func (d *destProcess) stop() {
	_ = d.cmd.Process.Signal(os.Interrupt)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

// waitConsumer waits until the stream has the durable consumer name.
func waitConsumer(ctx context.Context, js jetstream.JetStream, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := js.Consumer(ctx, schema.DefaultStream, name)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("consumer %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// BuildDestinations builds the destinations command into dir with the go
// tool, from the module the working directory is in.
func BuildDestinations(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "destinations")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/hookhub/hookhub/subscribers/destination/cmd/destinations").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build the destinations command (run from the hookhub module, or pass its binary): %w\n%s", err, out)
	}
	return bin, nil
}

// startNATS starts the bench's embedded JetStream server, storing in dir.
func startNATS(dir string) (ns *natsembed.Server, err error) {
	labelled("nats-server", func() {
		ns, err = natsembed.Start(natsembed.Options{Port: -1, StoreDir: dir, MaxStore: 4 << 30})
	})
	return ns, err
}

// loadAverage is the machine's 1-minute load average, or 0 when unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
