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
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/schema"
)

// labelled runs f with the pprof label bench=what: every goroutine f
// starts carries it too.
func labelled(what string, f func()) {
	pprof.Do(context.Background(), pprof.Labels("bench", what), func(context.Context) { f() })
}

// hubEnv is a measured hub's environment: the bench's own (base), what
// the bench sets, then extra. When a variable is listed twice the last
// value wins (os/exec), so what must match the bench's own setup never
// reaches the hub from an operator's shell (its addresses, its database,
// its single-node JetStream server and stream: HUB_STREAM_REPLICAS 1; no
// periodic backfill calling providers' APIs), while HUB_* tuning
// variables do.
func hubEnv(base []string, dbURL, natsURL, addr, adminAddr string, batchMax int, extra []string) []string {
	env := append(slices.Clip(base),
		"HUB_DATABASE_URL="+dbURL, "HUB_NATS_URL="+natsURL, "HUB_HTTP_ADDR="+addr, "HUB_ADMIN_ADDR="+adminAddr,
		"HUB_STREAM="+schema.DefaultStream, "HUB_STREAM_REPLICAS=1", "HUB_BACKFILL_INTERVAL=0",
		"HUB_PADDLE_SECRETS="+benchSecret, "HUB_CLERK_SECRETS=", "HUB_LOG_LEVEL=warn",
		"HUB_BATCH_MAX="+strconv.Itoa(batchMax))
	return append(env, extra...)
}

// hubProcess is a running hub started by startHub.
type hubProcess struct {
	cmd             *exec.Cmd
	base, adminBase string // http://host:port of its webhook and admin listeners
}

// hubRun is a hub started by startHubRun, with the JetStream connection
// a run reads its stream through.
type hubRun struct {
	*hubProcess
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
}

// startHubRun connects to the NATS server natsURL (connectJS), starts the
// hub on the database dbURL (startHub) and waits for its stream. close
// stops the hub, then closes the connection.
func startHubRun(ctx context.Context, cfg Config, dbURL, natsURL string, batchMax int) (*hubRun, error) {
	nc, js, err := connectJS(ctx, natsURL)
	if err != nil {
		return nil, err
	}
	hp, err := startHub(ctx, cfg, dbURL, natsURL, batchMax)
	if err != nil {
		nc.Close()
		return nil, err
	}
	r := &hubRun{hubProcess: hp, nc: nc, js: js}
	if r.stream, err = waitStream(ctx, js, 30*time.Second); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *hubRun) close() {
	r.stop()
	r.nc.Close()
}

// startHub starts the hub (cfg.HubCommand serve) on the database dbURL and
// the NATS server natsURL, and waits until its webhook and admin listeners
// are ready. stop interrupts it and waits for it to exit.
func startHub(ctx context.Context, cfg Config, dbURL, natsURL string, batchMax int) (*hubProcess, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	adminAddr := cfg.HubAdminAddr
	if adminAddr == "" {
		if adminAddr, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, cfg.HubCommand[0], append(cfg.HubCommand[1:], "serve")...)
	cmd.Env = hubEnv(os.Environ(), dbURL, natsURL, addr, adminAddr, batchMax, cfg.ExtraEnv)
	cmd.Stdout, cmd.Stderr = cfg.Log, cfg.Log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start hub: %w", err)
	}
	hp := &hubProcess{cmd: cmd, base: "http://" + addr, adminBase: "http://" + adminAddr}
	if err := waitReady(ctx, hp.base, 30*time.Second); err != nil {
		hp.stop()
		return nil, err
	}
	if err := waitReady(ctx, hp.adminBase, 5*time.Second); err != nil {
		hp.stop()
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	fmt.Fprintf(cfg.Log, "hub pid %d: webhooks on %s, admin (/metrics, /debug/pprof/) on %s\n", cmd.Process.Pid, hp.base, hp.adminBase)
	return hp, nil
}

func (h *hubProcess) stop() {
	_ = h.cmd.Process.Signal(os.Interrupt)
	_ = h.cmd.Wait()
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// commitBatches reads hub_commit_batch_deliveries from /metrics on the
// hub's admin listener (adminBase): the deliveries and the transactions so
// far.
func commitBatches(adminBase string) (sum, count float64, err error) {
	const sumName, countName = "hub_commit_batch_deliveries_sum", "hub_commit_batch_deliveries_count"
	v, err := metricValues(adminBase, sumName, countName)
	if err != nil {
		return 0, 0, err
	}
	count, found := v[countName]
	if !found {
		return 0, 0, errors.New("no hub_commit_batch_deliveries in /metrics")
	}
	return v[sumName], count, nil
}

// metricValues reads /metrics on the hub's admin listener (adminBase) and
// returns the values of the samples of names (without labels) it holds.
func metricValues(adminBase string, names ...string) (map[string]float64, error) {
	resp, err := probe.Get(adminBase + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	values := map[string]float64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		name, v, ok := strings.Cut(line, " ")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		if values[name], err = strconv.ParseFloat(v, 64); err != nil {
			return nil, fmt.Errorf("parse %q: %w", line, err)
		}
	}
	return values, nil
}

// probe is the client of the bench's requests to a hub other than the
// deliveries: a hub that stops answering fails them instead of hanging the
// bench.
var probe = &http.Client{Timeout: 10 * time.Second}

func waitReady(ctx context.Context, base string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := probe.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("hub at %s not ready after %s", base, timeout)
}

func waitStream(ctx context.Context, js jetstream.JetStream, timeout time.Duration) (jetstream.Stream, error) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := js.Stream(ctx, schema.DefaultStream)
		if err == nil {
			return st, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("stream %s: %w", schema.DefaultStream, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func perDelivery(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(n) }

// postgresCPU sums the CPU time of every process named postgres.
func postgresCPU() time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			// With the time of reaped children: a backend or autovacuum
			// worker that exits during the run moves its time to the
			// postmaster's instead of taking it out of the sum.
			total += procCPU(pid, true)
		}
	}
	return total
}

// cpuTime reads a process's user + system CPU time from /proc.
func cpuTime(pid int) time.Duration { return procCPU(pid, false) }

// procCPU reads a process's user + system CPU time from /proc, plus that
// of its reaped children when children is set.
func procCPU(pid int, children bool) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) < 15 {
		return 0
	}
	fields := f[11:13] // utime, stime
	if children {
		fields = f[11:15] // and cutime, cstime
	}
	var ticks int64
	for _, v := range fields {
		n, _ := strconv.ParseInt(v, 10, 64)
		ticks += n
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(ticks) * time.Second / ticksPerSecond
}

// peakRSS reads a process's peak resident set (VmHWM), in MB.
func peakRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

// cpuMark is the CPU time of a process, of Postgres and of the bench.
type cpuMark struct{ proc, pg, self time.Duration }

// markCPU reads the CPU time so far of the process pid, of Postgres and of
// the bench.
func markCPU(pid int) cpuMark { return cpuMark{cpuTime(pid), postgresCPU(), cpuTime(os.Getpid())} }

// since is the CPU time used since m.
func (m cpuMark) since(pid int) cpuMark {
	return cpuMark{cpuTime(pid) - m.proc, postgresCPU() - m.pg, cpuTime(os.Getpid()) - m.self}
}

// connectJS connects to the NATS server natsURL and deletes the stream a
// previous run left there.
func connectJS(ctx context.Context, natsURL string, opts ...jetstream.JetStreamOpt) (nc *nats.Conn, js jetstream.JetStream, err error) {
	labelled("nats-client", func() { nc, err = nats.Connect(natsURL) })
	if err != nil {
		return nil, nil, err
	}
	if js, err = jetstream.New(nc, opts...); err == nil {
		if err = js.DeleteStream(ctx, schema.DefaultStream); errors.Is(err, jetstream.ErrStreamNotFound) {
			err = nil
		}
	}
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// openPool opens a small pool on a bench database, for the checks.
func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = 2
	return pgxpool.NewWithConfig(ctx, pcfg)
}

// waitDrained waits up to a minute for the hub's outbox to drain: every
// event on the stream and none left in the outbox (the last PubAcks and
// marks may still be in flight).
func waitDrained(ctx context.Context, stream jetstream.Stream, st *store.Store, events int) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if info, err := stream.Info(ctx); err == nil && info.State.Msgs >= uint64(events) {
			if b, err := st.OutboxBacklog(ctx); err == nil && b.Pending == 0 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// percentiles are the p50, p99 and maximum of sorted latencies, in ms.
func percentiles(sorted []time.Duration) (p50, p99, maxMs float64) {
	if len(sorted) > 0 {
		maxMs = ms(sorted[len(sorted)-1])
	}
	return ms(pct(sorted, 0.50)), ms(pct(sorted, 0.99)), maxMs
}
