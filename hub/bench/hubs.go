package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MaxHubs bounds Config.Hubs: every hub is a process on the bench's
// machine, with its own pool of Postgres connections.
const MaxHubs = 8

// HubResult is one hub process's share of a run with several hubs
// (Config.Hubs): the load generator sends delivery i to hub i mod Hubs.
type HubResult struct {
	// Deliveries is how many measured deliveries the hub answered 2xx.
	Deliveries int     `json:"deliveries"`
	PerSecond  float64 `json:"per_second"`
	// CPUus is the hub's CPU time (user + system) per delivery it
	// answered, in microseconds.
	CPUus           float64 `json:"cpu_us_per_delivery"`
	PeakRSSMB       float64 `json:"peak_rss_mb,omitempty"`
	MeanCommitBatch float64 `json:"mean_commit_batch,omitempty"`
	AllocBytes      float64 `json:"alloc_bytes_per_delivery,omitempty"`
}

// hubSet is the hubs of one run, started by startHubSet on one database
// and one NATS server, with the JetStream connection the run reads its
// stream through.
type hubSet struct {
	procs  []*hubProcess
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
}

// startHubSet connects to the NATS server natsURL (connectJS, which
// deletes the stream a previous run left), starts n hubs on the database
// dbURL and waits for their stream. Only the first hub gets
// cfg.HubAdminAddr; the others get free ports. close stops them all.
func startHubSet(ctx context.Context, cfg Config, dbURL, natsURL string, batchMax, n int) (*hubSet, error) {
	nc, js, err := connectJS(ctx, natsURL)
	if err != nil {
		return nil, err
	}
	hs := &hubSet{nc: nc, js: js}
	for k := range n {
		c := cfg
		if k > 0 {
			c.HubAdminAddr = ""
		}
		hp, err := startHub(ctx, c, dbURL, natsURL, batchMax)
		if err != nil {
			hs.close()
			return nil, fmt.Errorf("hub %d of %d: %w", k+1, n, err)
		}
		hs.procs = append(hs.procs, hp)
	}
	if hs.stream, err = waitStream(ctx, js, 30*time.Second); err != nil {
		hs.close()
		return nil, err
	}
	return hs, nil
}

func (hs *hubSet) close() {
	for _, hp := range hs.procs {
		hp.stop()
	}
	hs.nc.Close()
}

// bases are the hubs' webhook listeners, in order.
func (hs *hubSet) bases() []string {
	b := make([]string, len(hs.procs))
	for k, hp := range hs.procs {
		b[k] = hp.base
	}
	return b
}

// hubMetrics is what a hub's /metrics says at one moment: its commit
// batches and heap allocation so far. ok is false when it could not be
// read.
type hubMetrics struct {
	batchSum, batches, alloc float64
	ok                       bool
}

func readHubMetrics(adminBase string) hubMetrics {
	const sum, count, alloc = "hub_commit_batch_deliveries_sum", "hub_commit_batch_deliveries_count", "go_memstats_alloc_bytes_total"
	v, err := metricValues(adminBase, sum, count, alloc)
	_, hasCount := v[count]
	_, hasAlloc := v[alloc]
	return hubMetrics{batchSum: v[sum], batches: v[count], alloc: v[alloc], ok: err == nil && hasCount && hasAlloc}
}

// procsMark is the CPU time so far of each hub, of Postgres, of the
// bench's process and of the NATS server's process (0 when it is
// embedded in the bench's).
type procsMark struct {
	hubs            []time.Duration
	pg, self, natsT time.Duration
}

func (hs *hubSet) markCPU(natsPID int) procsMark {
	m := procsMark{pg: postgresCPU(), self: cpuTime(os.Getpid())}
	for _, hp := range hs.procs {
		m.hubs = append(m.hubs, cpuTime(hp.cmd.Process.Pid))
	}
	if natsPID != 0 {
		m.natsT = cpuTime(natsPID)
	}
	return m
}

func (hs *hubSet) metrics() []hubMetrics {
	ms := make([]hubMetrics, len(hs.procs))
	for k, hp := range hs.procs {
		ms[k] = readHubMetrics(hp.adminBase)
	}
	return ms
}

// hubsWindow is what the bench read of the hubs around the measured load.
type hubsWindow struct {
	cpu0, cpu1        procsMark
	before, after     []hubMetrics
	answered          []int // measured 2xx by hub
	elapsed           time.Duration
	batchMax, natsPID int
}

// figures sets res's per-process figures (and res.Hubs) from w: CPU per
// delivery of the hubs summed, of Postgres, the bench and NATS; the hubs'
// commit batches, allocation and peak RSS; and each hub's own.
func (hs *hubSet) figures(log io.Writer, res *Result, w hubsWindow) {
	n := 0
	for _, a := range w.answered {
		n += a
	}
	if n == 0 {
		return
	}
	var hubCPU time.Duration
	var batchSum, batches, alloc float64
	allocOK := true
	res.Hubs = make([]HubResult, len(hs.procs))
	for k, hp := range hs.procs {
		cpu := w.cpu1.hubs[k] - w.cpu0.hubs[k]
		hubCPU += cpu
		h := HubResult{Deliveries: w.answered[k], PerSecond: float64(w.answered[k]) / w.elapsed.Seconds(), PeakRSSMB: peakRSS(hp.cmd.Process.Pid)}
		if h.Deliveries > 0 {
			h.CPUus = perDelivery(cpu, h.Deliveries)
		}
		b, a := w.before[k], w.after[k]
		if b.ok && a.ok {
			batchSum, batches, alloc = batchSum+a.batchSum-b.batchSum, batches+a.batches-b.batches, alloc+a.alloc-b.alloc
			if a.batches > b.batches {
				h.MeanCommitBatch = (a.batchSum - b.batchSum) / (a.batches - b.batches)
			}
			if h.Deliveries > 0 {
				h.AllocBytes = (a.alloc - b.alloc) / float64(h.Deliveries)
			}
		} else {
			allocOK = false
			fmt.Fprintf(log, "hub %d: /metrics unreadable: no commit batches or allocation\n", k+1)
		}
		res.PeakRSSMB = max(res.PeakRSSMB, h.PeakRSSMB)
		res.Hubs[k] = h
	}
	res.HubCPUus = perDelivery(hubCPU, n)
	res.PostgresCPUus = perDelivery(w.cpu1.pg-w.cpu0.pg, n)
	res.SelfCPUus = perDelivery(w.cpu1.self-w.cpu0.self, n)
	if w.natsPID != 0 {
		res.NATSCPUus = perDelivery(w.cpu1.natsT-w.cpu0.natsT, n)
	}
	if allocOK {
		res.HubAllocBytes = alloc / float64(n)
	}
	switch {
	case w.batchMax == 1:
		res.MeanCommitBatch = 1
		for k := range res.Hubs {
			res.Hubs[k].MeanCommitBatch = 1
		}
	case batches > 0:
		res.MeanCommitBatch = batchSum / batches
	}
}

// jetStreamServer is the bench's JetStream server: embedded in the
// bench's process, or, with Config.NATSServer, a nats-server process of
// its own whose CPU the bench measures apart (pid).
type jetStreamServer struct {
	url  string
	pid  int
	stop func()
}

// startJetStream starts the bench's JetStream server, storing in dir.
func startJetStream(ctx context.Context, cfg Config, dir string) (*jetStreamServer, error) {
	if cfg.NATSServer == "" {
		ns, err := startNATS(dir)
		if err != nil {
			return nil, err
		}
		return &jetStreamServer{url: ns.ClientURL(), stop: ns.Shutdown}, nil
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	// As startNATS configures the embedded one; its log (every start and
	// stop) in the store's directory, out of the bench's progress.
	conf := fmt.Sprintf("server_name: hub-bench\nlisten: %q\nmax_payload: 8MB\nlog_file: %q\njetstream {\n  store_dir: %q\n  max_memory_store: 64MB\n  max_file_store: 4GB\n}\n",
		addr, filepath.Join(dir, "nats-server.log"), dir)
	confPath := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, cfg.NATSServer, "-c", confPath)
	cmd.Stderr = cfg.Log // what it says before it opens its log file
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.NATSServer, err)
	}
	js := &jetStreamServer{url: "nats://" + addr, pid: cmd.Process.Pid, stop: func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		nc, err := nats.Connect(js.url)
		if err == nil {
			nc.Close()
			fmt.Fprintf(cfg.Log, "nats-server pid %d on %s\n", js.pid, js.url)
			return js, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			js.stop()
			return nil, fmt.Errorf("nats-server at %s: %w", js.url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
