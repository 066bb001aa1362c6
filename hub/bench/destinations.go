package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/store"
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
	Rounds int
	// IdleFor is how long the idle run measures the hub and a
	// destinations process with no traffic; 0 skips it.
	IdleFor  time.Duration
	Keep     bool     // keep the bench databases
	ExtraEnv []string // more HUB_* variables for the hubs
	Log      io.Writer
}

// hubConfig is what startHub needs of cfg.
func (cfg DestinationsConfig) hubConfig() Config {
	return Config{HubCommand: cfg.HubCommand, ExtraEnv: cfg.ExtraEnv, Log: cfg.Log}
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
	// Idle is the hub and a destinations process with no traffic.
	Idle *IdleRun `json:"idle,omitempty"`
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
	// PostgresDBCPUus is the run database's backends alone (the hub's and
	// the destinations process's connections): unlike PostgresCPUus, not
	// what else the server runs meanwhile.
	PostgresDBCPUus float64 `json:"postgres_database_cpu_us_per_delivery"`
	// MeanCommitBatch is the hub's deliveries per group commit, and
	// TransactionsPerDelivery the run database's commits and rollbacks
	// (pg_stat_database, every process's) per delivery, over the window.
	MeanCommitBatch         float64 `json:"mean_commit_batch"`
	TransactionsPerDelivery float64 `json:"transactions_per_delivery"`
	BenchCPUus              float64 `json:"bench_cpu_us_per_delivery"`
	HubPeakRSSMB            float64 `json:"hub_peak_rss_mb"`
	DestPeakRSSMB           float64 `json:"destinations_peak_rss_mb,omitempty"`
	Non2xx                  int     `json:"non_2xx"`
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
	cfg.Log = cmp.Or(cfg.Log, io.Discard)
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
	if cfg.IdleFor > 0 {
		idle, err := runIdle(ctx, cfg, srv, ns.ClientURL(), dir)
		if err != nil {
			return rep, fmt.Errorf("idle: %w", err)
		}
		rep.Idle = &idle
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
	nc, js, err := connectJS(ctx, natsURL, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return err
	}
	defer nc.Close()
	stream, err := relay.EnsureStream(ctx, js, relay.StreamConfig{
		Name: schema.DefaultStream, Providers: []string{"paddle"}, Replicas: 1, DuplicateWindow: 2 * time.Minute,
	})
	if err != nil {
		return err
	}

	// The messages: the preload's, then the latency run's at most.
	b := destBench{cfg: cfg, js: js, rep: rep}
	if b.pub, err = newPublisher(cfg.Preload + maxLatencyEvents); err != nil {
		return err
	}
	rep.BodyBytes = len(b.pub.body)
	if b.rc, err = startReceiver(cfg.Preload + maxLatencyEvents); err != nil {
		return err
	}
	defer b.rc.close()

	fmt.Fprintf(cfg.Log, "drain: publishing %d events with the destinations process stopped …\n", cfg.Preload)
	pubCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	err = b.pub.publishAll(pubCtx, js, 0, cfg.Preload)
	cancel()
	if err != nil {
		return err
	}
	if info, err := stream.Info(ctx); err != nil {
		return err
	} else if info.State.Msgs != uint64(cfg.Preload) {
		return fmt.Errorf("the stream holds %d messages after publishing %d", info.State.Msgs, cfg.Preload)
	}

	if b.dp, err = startDestinations(ctx, cfg, dir, db.url, natsURL, b.rc.url); err != nil {
		return err
	}
	defer b.dp.stop()
	fmt.Fprintf(cfg.Log, "destinations pid %d (concurrency %d) started; draining …\n", b.dp.cmd.Process.Pid, cfg.Concurrency)
	if err := b.drain(ctx); err != nil {
		return err
	}
	if err := b.latency(ctx); err != nil {
		return err
	}
	d, l := &rep.Drain, &rep.Latency
	rep.PeakRSSMB = peakRSS(b.dp.pid())
	// A duplicate is counted with the run it arrived in.
	d.Duplicates, l.Duplicates = int(b.drainDups), int(b.rc.dups.Load()-b.drainDups)
	rep.NothingLost = rep.NothingLost && d.Received == d.Events && l.Received == l.Events && b.rc.foreign.Load() == 0
	return nil
}

// destBench is the destinations process under measurement, with the
// bench's publisher and receiver.
type destBench struct {
	cfg DestinationsConfig
	js  jetstream.JetStream
	pub *publisher
	rc  *receiver
	dp  *destProcess
	rep *DestinationsReport
	// drainDups are the duplicates received until the drain's end.
	drainDups int64
}

// drain measures the drain of the preloaded backlog into rep.Drain: CPU
// from the first receipt to the last.
func (b *destBench) drain(ctx context.Context) error {
	select {
	case <-b.rc.firstReceipt:
	case <-time.After(60 * time.Second):
		return errors.New("drain: nothing received within 60 s of starting the destinations process")
	case err := <-b.dp.exited:
		return fmt.Errorf("the destinations process exited: %v", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	preload := b.cfg.Preload
	at0 := b.rc.received.Load()
	cpu0 := markCPU(b.dp.pid())
	if err := b.rc.waitFor(ctx, 0, preload, drainTimeout(preload), b.dp.exited); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	cpu := cpu0.since(b.dp.pid())
	b.drainDups = b.rc.dups.Load()
	first, last := b.rc.span(0, preload)
	d := &b.rep.Drain
	d.Events, d.Received = preload, b.rc.distinct(0, preload)
	d.Seconds = time.Duration(last - first).Seconds()
	if d.Seconds > 0 {
		d.PerSecond = float64(preload-1) / d.Seconds
	}
	n := max(1, preload-int(at0))
	d.DestCPUus, d.PostgresCPUus, d.BenchCPUus = perDelivery(cpu.proc, n), perDelivery(cpu.pg, n), perDelivery(cpu.self, n)
	fmt.Fprintf(b.cfg.Log, "drain: %d events in %.1f s: %.0f deliveries/s\n", d.Events, d.Seconds, d.PerSecond)
	return nil
}

// latency measures the latency at a fixed publish rate (by default half
// the drain's) into rep.Latency.
func (b *destBench) latency(ctx context.Context) error {
	rate := b.cfg.LatencyRate
	if rate <= 0 {
		rate = b.rep.Drain.PerSecond / 2
	}
	events := min(maxLatencyEvents, int(rate*b.cfg.LatencyFor.Seconds()))
	if events <= 0 {
		return nil
	}
	l := &b.rep.Latency
	l.Events, l.PerSecond = events, rate
	fmt.Fprintf(b.cfg.Log, "latency: publishing %d events at %.0f/s …\n", events, rate)
	from, to := b.cfg.Preload, b.cfg.Preload+events
	cpu0 := markCPU(b.dp.pid())
	start := time.Now()
	if err := b.pub.publishPaced(ctx, b.js, from, to, rate); err != nil {
		return err
	}
	if err := b.rc.waitFor(ctx, from, to, 60*time.Second, b.dp.exited); err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	l.Seconds = time.Since(start).Seconds()
	cpu := cpu0.since(b.dp.pid())
	l.Received = b.rc.distinct(from, to)
	lat := make([]time.Duration, 0, events)
	for i := from; i < to; i++ {
		if at := b.rc.first[i].Load(); at != 0 {
			lat = append(lat, time.Duration(at-b.pub.sentAt[i].Load()))
		}
	}
	slices.Sort(lat)
	l.P50ms, l.P99ms, l.MaxMs = percentiles(lat)
	l.DestCPUus, l.PostgresCPUus, l.BenchCPUus = perDelivery(cpu.proc, events), perDelivery(cpu.pg, events), perDelivery(cpu.self, events)
	fmt.Fprintf(b.cfg.Log, "latency: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", l.P50ms, l.P99ms, l.MaxMs)
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
	hp, err := startHubRun(ctx, cfg.hubConfig(), db.url, natsURL, 64)
	if err != nil {
		return res, err
	}
	defer hp.close()
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
		if err := waitConsumer(ctx, hp.js, destName, 30*time.Second); err != nil {
			return res, err
		}
	}
	pool, err := openPool(ctx, db.url)
	if err != nil {
		return res, err
	}
	defer pool.Close()

	hubPid := hp.cmd.Process.Pid
	var m0 ingestMark
	snapshot := func() { m0 = markIngest(ctx, srv, db.name, hp.hubProcess, dp) }
	start, lat, non2xx := paced(ctx, hp.base, w, cfg.IngestRate, cfg.IngestClients, snapshot)
	interval := time.Second / time.Duration(cfg.IngestRate)
	if rc != nil {
		if err := rc.waitFor(ctx, 0, w.events, 60*time.Second, dp.exited); err != nil {
			fmt.Fprintf(cfg.Log, "destination: %v\n", err)
		}
	}
	res.Seconds = time.Since(start.Add(time.Duration(w.warmup) * interval)).Seconds()
	n := max(1, res.Deliveries)
	m0.since(ctx, srv, db.name, hp.hubProcess, dp, &res, n)
	res.HubPeakRSSMB = peakRSS(hubPid)
	res.Non2xx = non2xx
	res.P50ms, res.P99ms, res.MaxMs = percentiles(lat)
	if dp != nil {
		res.DestPeakRSSMB = peakRSS(dp.pid())
		res.Forwarded = rc.distinct(0, w.events)
		res.Lost += w.events - res.Forwarded
		var fwd []time.Duration
		for i := w.warmup; i < w.events; i++ { // no duplicates: event i is delivery i, due at start + i·interval
			if at := rc.first[i].Load(); at != 0 {
				fwd = append(fwd, time.Duration(at-start.Add(time.Duration(i)*interval).UnixNano()))
			}
		}
		slices.Sort(fwd)
		res.ForwardP50ms, res.ForwardP99ms, _ = percentiles(fwd)
	}

	// Nothing lost by the hub: every event on the stream once, recorded
	// once, none left in the outbox.
	waitDrained(ctx, hp.stream, store.New(pool), w.events)
	check := Result{Events: w.events}
	if err := verify(ctx, &check, store.New(pool), since.Add(-time.Minute), hp.js, nil); err != nil {
		return res, err
	}
	res.Lost += check.Lost + check.Duplicated
	fmt.Fprintf(cfg.Log, "ingest 2xx p50 %.1f ms, p99 %.1f ms, max %.1f ms; hub %.0f µs/delivery; %.1f deliveries per group commit\n", res.P50ms, res.P99ms, res.MaxMs, res.HubCPUus, res.MeanCommitBatch)
	return res, nil
}

// ingestMark is what an ingest run reads when its measured window starts.
type ingestMark struct {
	cpu               cpuMark       // the hub's, Postgres's, the bench's
	dest              time.Duration // the destinations process's, if any
	backends          map[int]time.Duration
	xact              int64
	batchSum, batches float64
}

func markIngest(ctx context.Context, srv *server, dbName string, hp *hubProcess, dp *destProcess) ingestMark {
	m := ingestMark{cpu: markCPU(hp.cmd.Process.Pid)}
	if dp != nil {
		m.dest = cpuTime(dp.pid())
	}
	m.backends, m.xact, _ = srv.databaseActivity(ctx, dbName)
	m.batchSum, m.batches, _ = commitBatches(hp.adminBase)
	return m
}

// since sets res's CPU and commit figures for the n deliveries measured
// since m.
func (m ingestMark) since(ctx context.Context, srv *server, dbName string, hp *hubProcess, dp *destProcess, res *IngestRun, n int) {
	cpu := m.cpu.since(hp.cmd.Process.Pid)
	res.HubCPUus, res.PostgresCPUus, res.BenchCPUus = perDelivery(cpu.proc, n), perDelivery(cpu.pg, n), perDelivery(cpu.self, n)
	if dp != nil {
		res.DestCPUus = perDelivery(cpuTime(dp.pid())-m.dest, n)
	}
	if backends, xact, err := srv.databaseActivity(ctx, dbName); err == nil {
		res.PostgresDBCPUus = perDelivery(backendsCPU(m.backends, backends), n)
		res.TransactionsPerDelivery = float64(xact-m.xact) / float64(n)
	}
	if sum, count, err := commitBatches(hp.adminBase); err == nil && count > m.batches {
		res.MeanCommitBatch = (sum - m.batchSum) / (count - m.batches)
	}
}

// paced sends w's deliveries at rate per second, open loop: delivery i is
// due at start + i/rate whether or not earlier ones were answered, and
// its latency runs from then until its whole answer was read, so a stall
// of the hub counts for every request it held up (no coordinated
// omission). clients connections send them. measured is called when the
// first delivery after the warm-up is due. It returns the start and the
// sorted latencies of the measured 2xx.
func paced(ctx context.Context, base string, w *workload, rate, clients int, measured func()) (time.Time, []time.Duration, int) {
	interval := time.Second / time.Duration(rate)
	due := make(chan int, len(w.bodies))
	var non2xx atomic.Int64
	start := time.Now().Add(10 * time.Millisecond)
	cs := startClients([]string{base}, w, clients, func(post func(i int, sending func()) bool) (lat []time.Duration) {
		for i := range due {
			if !post(i, nil) {
				if i >= w.warmup {
					non2xx.Add(1)
				}
				continue
			}
			if i >= w.warmup {
				lat = append(lat, time.Since(start.Add(time.Duration(i)*interval)))
			}
		}
		return lat
	})
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
	cs.wg.Wait()
	return start, cs.latencies(), int(non2xx.Load())
}
