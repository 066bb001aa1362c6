package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/migrations"
)

// LocalOptions configure StartLocal.
type LocalOptions struct {
	// Dir holds everything the topology writes (data directories, logs);
	// it must exist.
	Dir string
	// Exe is the hub binary: the hubs run as `Exe serve`, the JetStream
	// nodes as `Exe chaos node`.
	Exe string
	// Hubs is the number of hub replicas, 1..5. Default 3.
	Hubs int
	// Synchronous replication of Postgres (the safe setting); false runs
	// the standby asynchronously, to measure what that loses.
	Synchronous bool
	// HubEnv is added to every hub's environment: the providers' secrets
	// (HUB_<NAME>_SECRETS), and any other setting.
	HubEnv []string
	// Subscribers, when not nil, runs the subscribers against the
	// database and NATS URLs until ctx ends; the returned function waits
	// for them to stop.
	Subscribers func(ctx context.Context, dbURL, natsURL, stream string) (func(), error)
	// Stream is the hub's stream. Default WEBHOOKS.
	Stream string
	// PartitionFor is how long a partition lasts. Default 3 s.
	PartitionFor time.Duration
	Logger       *slog.Logger
}

// Local is a topology on this machine: a Postgres primary and standby,
// a three-node JetStream cluster of separate processes, hub replicas
// behind a load balancer, each reaching every Postgres and NATS node
// through a proxy of its own (so that it can be partitioned alone), and
// the subscribers.
type Local struct {
	o        LocalOptions
	log      *slog.Logger
	PG       *PostgresPair
	NATS     *NATSCluster
	LB       *Proxy
	hubs     []*hubProc
	pool     *pgxpool.Pool
	nc       *nats.Conn
	js       jetstream.JetStream
	stopSubs func()
	cancel   context.CancelFunc
	next     int // the hub the next hub fault hits
	mu       sync.Mutex
}

// hubProc is one hub replica: a child process, and its proxies.
type hubProc struct {
	i        int
	addr     string
	env      []string
	pgProxy  []*Proxy
	natProxy []*Proxy
	logPath  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartLocal starts the topology: Postgres and JetStream, the hub's
// migrations, the hubs (ready), the load balancer and the subscribers.
// Stop it with Stop, whatever it returns.
func StartLocal(ctx context.Context, o LocalOptions) (*Local, error) {
	setDefault(&o.Hubs, 3)
	setDefault(&o.Stream, "WEBHOOKS")
	setDefault(&o.PartitionFor, 3*time.Second)
	if o.Hubs < 1 || o.Hubs > 5 {
		return nil, fmt.Errorf("chaos: hubs %d out of range 1..5", o.Hubs)
	}
	if o.Exe == "" || o.Dir == "" {
		return nil, errors.New("chaos: a local topology needs the hub binary and a directory")
	}
	l := &Local{o: o, log: o.Logger}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	if err := l.start(ctx, runCtx); err != nil {
		return l, err
	}
	return l, nil
}

func (l *Local) start(ctx, runCtx context.Context) error {
	var err error
	t0 := time.Now()
	if l.PG, err = StartPostgres(ctx, PostgresOptions{Dir: filepath.Join(l.o.Dir, "pg"), Synchronous: l.o.Synchronous, Logger: l.log.With("part", "postgres")}); err != nil {
		return err
	}
	l.log.Info("postgres started", "primary", l.PG.Addrs()[l.PG.Primary()], "synchronous", l.o.Synchronous, "took", time.Since(t0).Round(time.Millisecond))
	if err = l.migrate(ctx); err != nil {
		return err
	}
	if l.NATS, err = StartNATS(ctx, NATSOptions{Dir: filepath.Join(l.o.Dir, "nats"), Exe: l.o.Exe, Args: []string{"chaos", "node"}, Logger: l.log.With("part", "nats")}); err != nil {
		return err
	}
	if l.nc, err = nats.Connect(l.NATS.URL(), nats.MaxReconnects(-1), nats.Name("hookhub-chaos")); err != nil {
		return fmt.Errorf("chaos: connect to NATS: %w", err)
	}
	if l.js, err = jetstream.New(l.nc); err != nil {
		return err
	}
	addrs := make([]string, l.o.Hubs)
	for i := range l.o.Hubs {
		h, err := l.newHub(i)
		if err != nil {
			return err
		}
		l.hubs = append(l.hubs, h)
		addrs[i] = h.addr
		if err := l.startHub(ctx, h); err != nil {
			return err
		}
	}
	if l.LB, err = NewProxy("127.0.0.1:0", addrs...); err != nil {
		return err
	}
	if l.o.Subscribers != nil {
		if l.stopSubs, err = l.o.Subscribers(runCtx, l.PG.URL("hub"), l.NATS.URL(), l.o.Stream); err != nil {
			return fmt.Errorf("chaos: subscribers: %w", err)
		}
	}
	l.log.Info("topology ready", "hubs", len(l.hubs), "load_balancer", l.LB.Addr(), "took", time.Since(t0).Round(time.Millisecond))
	return nil
}

// migrate creates the hub's database and applies its migrations.
func (l *Local) migrate(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, l.PG.URL("postgres"))
	if err != nil {
		return fmt.Errorf("chaos: connect to postgres: %w", err)
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE hub")
	conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("chaos: create the hub's database: %w", err)
	}
	pcfg, err := pgxpool.ParseConfig(l.PG.URL("hub"))
	if err != nil {
		return err
	}
	pcfg.MaxConns = 4
	if l.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return fmt.Errorf("chaos: connect to postgres: %w", err)
	}
	m, err := migrations.Hub(l.pool)
	if err != nil {
		return err
	}
	defer m.Close()
	if _, err := m.Up(ctx); err != nil {
		return fmt.Errorf("chaos: migrate the hub's database: %w", err)
	}
	return nil
}

// newHub sets up hub i's proxies and environment.
func (l *Local) newHub(i int) (*hubProc, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	h := &hubProc{i: i, addr: addr, logPath: filepath.Join(l.o.Dir, "hub"+strconv.Itoa(i)+".log")}
	var pgAddrs, natsURLs []string
	for _, a := range l.PG.Addrs() {
		p, err := NewProxy("127.0.0.1:0", a)
		if err != nil {
			return nil, err
		}
		h.pgProxy = append(h.pgProxy, p)
		pgAddrs = append(pgAddrs, p.Addr())
	}
	for _, a := range l.NATS.ClientAddrs() {
		p, err := NewProxy("127.0.0.1:0", a)
		if err != nil {
			return nil, err
		}
		h.natProxy = append(h.natProxy, p)
		natsURLs = append(natsURLs, "nats://"+p.Addr())
	}
	h.env = append([]string{
		"HUB_HTTP_ADDR=" + addr,
		"HUB_DATABASE_URL=" + l.PG.URL("hub", pgAddrs...),
		"HUB_DATABASE_MAX_CONNS=6",
		"HUB_NATS_URL=" + strings.Join(natsURLs, ","),
		"HUB_STREAM=" + l.o.Stream,
		"HUB_STREAM_REPLICAS=3",
		"HUB_DATA_DIR=" + filepath.Join(l.o.Dir, "hub"+strconv.Itoa(i)),
		"HUB_LOG_FORMAT=text",
	}, l.o.HubEnv...)
	return h, nil
}

// startHub starts h's process and waits until /readyz answers 200.
func (l *Local) startHub(ctx context.Context, h *hubProc) error {
	logf, err := os.OpenFile(h.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(l.o.Exe, "serve")
	cmd.Env = append(os.Environ(), h.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("chaos: start hub %d: %w", h.i, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	h.mu.Lock()
	h.cmd, h.done = cmd, done
	h.mu.Unlock()
	return waitReady(ctx, "http://"+h.addr+"/readyz", done, 90*time.Second, h.logPath)
}

// waitReady polls url until it answers 200, the process ends or timeout.
func waitReady(ctx context.Context, url string, exited <-chan struct{}, timeout time.Duration, logPath string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("chaos: %s: the process exited; its log: %s\n%s", url, logPath, fileTail(logPath, 20))
		case <-ctx.Done():
			return fmt.Errorf("chaos: %s not ready: %w; log: %s\n%s", url, ctx.Err(), logPath, fileTail(logPath, 20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fileTail returns the last n lines of the file at path (at most its
// last 64 KiB), for an error message.
func fileTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	const most = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > most {
		_, _ = f.Seek(fi.Size()-most, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, most))
	return lastLines(b, n)
}

// killHub SIGKILLs hub h (its process group) and waits until it is gone.
func killHub(h *hubProc) {
	h.mu.Lock()
	cmd, done := h.cmd, h.done
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// URL is the load balancer's base URL: where the load is sent.
func (l *Local) URL() string { return "http://" + l.LB.Addr() }

// Pool reaches the hub's database on the current primary.
func (l *Local) Pool() *pgxpool.Pool { return l.pool }

// JetStream reaches the cluster.
func (l *Local) JetStream() jetstream.JetStream { return l.js }

// Stop stops the subscribers, the hubs, the proxies, NATS and Postgres;
// the directory is left to the caller.
func (l *Local) Stop(ctx context.Context) error {
	l.cancel()
	if l.stopSubs != nil {
		l.stopSubs()
	}
	for _, h := range l.hubs {
		h.mu.Lock()
		cmd := h.cmd
		h.mu.Unlock()
		if cmd != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-h.done:
			case <-time.After(10 * time.Second):
				killHub(h)
			}
		}
		for _, p := range append(h.pgProxy, h.natProxy...) {
			_ = p.Close()
		}
	}
	if l.LB != nil {
		_ = l.LB.Close()
	}
	if l.nc != nil {
		l.nc.Close()
	}
	if l.pool != nil {
		l.pool.Close()
	}
	var errs []error
	if l.NATS != nil {
		errs = append(errs, l.NATS.Stop(ctx))
	}
	if l.PG != nil {
		errs = append(errs, l.PG.Stop(ctx))
	}
	return errors.Join(errs...)
}
