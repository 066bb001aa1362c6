package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

const (
	// natsReadyTimeout bounds StartNATS's and Start's waits when their
	// context has no earlier deadline.
	natsReadyTimeout = 60 * time.Second
	// natsStopGrace is how long Stop waits after SIGTERM before SIGKILL.
	natsStopGrace = 10 * time.Second
	// natsExitTimeout bounds the wait for a killed process to be reaped.
	natsExitTimeout = 10 * time.Second
	// natsLogLineMax bounds a logged output line of a node, in bytes.
	natsLogLineMax = 2048
)

// NATSOptions configure StartNATS.
type NATSOptions struct {
	// Dir holds the nodes' stores, in Dir/n0, Dir/n1, ... Required.
	Dir string
	// Size is the number of nodes. Default 3.
	Size int
	// Exe is the executable a node runs as: `Exe <Args...> <node flags>`,
	// where the node flags are what RunNode parses. Required.
	Exe string
	// Args come before the node flags, e.g. {"chaos", "node"} for the hub
	// binary.
	Args []string
	// Env are extra environment variables for the node processes, on top
	// of this process's own.
	Env []string
	// Name is the cluster's name. Default "hookhub-chaos".
	Name string
	// Logger receives the nodes' output lines, each with a "node"
	// attribute, and the cluster's own notices. Nil discards them.
	Logger *slog.Logger
}

// NATSCluster is a JetStream cluster whose nodes are separate OS
// processes, each in its own process group, on fixed 127.0.0.1 ports and
// store directories, so that a node can be killed abruptly (SIGKILL: no
// leadership hand-over, no flush) and started again where it was.
type NATSCluster struct {
	name   string
	exe    string
	args   []string
	env    []string
	logger *slog.Logger
	nodes  []*natsNode
	http   *http.Client // to the nodes' monitoring ports

	mu      sync.Mutex // serializes Kill, Start and Stop
	stopped bool

	errMu sync.Mutex
	err   error // the first unexpected exit
}

// natsNode is one node: its fixed ports and store, and its process while
// it runs.
type natsNode struct {
	name                   string
	dir                    string
	client, route, monitor int
	proc                   *nodeProc // nil while not running
}

// nodeProc is a running node process.
type nodeProc struct {
	cmd      *exec.Cmd
	done     chan struct{} // closed once it exited and its output is read
	expected atomic.Bool   // killed or stopped on purpose
	err      error         // what Wait returned, set before done closes
}

// StartNATS picks free client, cluster and monitoring ports, spawns the
// nodes, and waits until JetStream has a meta leader that every node
// follows. On error no node is left running.
func StartNATS(ctx context.Context, o NATSOptions) (*NATSCluster, error) {
	if o.Dir == "" || o.Exe == "" {
		return nil, errors.New("chaos: nats: Dir and Exe are required")
	}
	size := cmp.Or(o.Size, 3)
	if size < 1 {
		return nil, fmt.Errorf("chaos: nats: size %d", size)
	}
	ports, err := freePorts(3 * size)
	if err != nil {
		return nil, fmt.Errorf("chaos: nats: %w", err)
	}
	c := &NATSCluster{
		name:   cmp.Or(o.Name, "hookhub-chaos"),
		exe:    o.Exe,
		args:   slices.Clone(o.Args),
		env:    slices.Clone(o.Env),
		logger: cmp.Or(o.Logger, slog.New(slog.DiscardHandler)),
		http:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}},
	}
	for i := range size {
		n := &natsNode{
			name:    fmt.Sprintf("n%d", i),
			client:  ports[3*i],
			route:   ports[3*i+1],
			monitor: ports[3*i+2],
		}
		n.dir = filepath.Join(o.Dir, n.name)
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return nil, fmt.Errorf("chaos: nats: %w", err)
		}
		c.nodes = append(c.nodes, n)
	}
	began := time.Now()
	ctx, cancel := boundContext(ctx)
	defer cancel()
	err = c.startAll(ctx)
	if err != nil {
		_ = c.Stop(context.Background())
		return nil, err
	}
	c.logger.Info("chaos: nats cluster ready", "nodes", size, "took", time.Since(began).Round(time.Millisecond))
	return c, nil
}

func (c *NATSCluster) startAll(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.nodes {
		if err := c.spawn(i); err != nil {
			return err
		}
	}
	return c.waitUntil(ctx, -1, c.clusterReady)
}

// boundContext bounds ctx by natsReadyTimeout.
func boundContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, natsReadyTimeout)
}

// ClientAddrs are the nodes' client addresses, "127.0.0.1:port", the same
// across restarts.
func (c *NATSCluster) ClientAddrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(n.client))
	}
	return out
}

// URL is every node's client URL, comma-separated, as nats.Connect and
// HUB_NATS_URL take them.
func (c *NATSCluster) URL() string {
	addrs := c.ClientAddrs()
	for i, a := range addrs {
		addrs[i] = "nats://" + a
	}
	return strings.Join(addrs, ",")
}

// Size is the number of nodes, running or not.
func (c *NATSCluster) Size() int { return len(c.nodes) }

// Name is node i's server name.
func (c *NATSCluster) Name(i int) string { return c.nodes[i].name }

// Err is the first unexpected exit of a node (one neither Kill nor Stop
// caused), or nil.
func (c *NATSCluster) Err() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.err
}

// Running reports whether node i's process runs.
func (c *NATSCluster) Running(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.nodes[i].proc
	return p != nil && !p.exited()
}

// Kill sends SIGKILL to node i's process group and waits until the
// process is gone: no leadership hand-over, no flush. Killing a node that
// does not run does nothing.
func (c *NATSCluster) Kill(i int) error {
	if i < 0 || i >= len(c.nodes) {
		return fmt.Errorf("chaos: nats: no node %d", i)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kill(i)
}

func (c *NATSCluster) kill(i int) error {
	n := c.nodes[i]
	p := n.proc
	if p == nil {
		return nil
	}
	p.expected.Store(true)
	n.proc = nil
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	if !p.waitExit(natsExitTimeout) {
		return fmt.Errorf("chaos: nats: node %s not gone %s after SIGKILL", n.name, natsExitTimeout)
	}
	c.logger.Info("chaos: nats node killed", "node", n.name)
	return nil
}

// Start starts node i, which must not run (killed, or exited on its own),
// on its ports and store, and waits until it runs and has rejoined the
// cluster: it follows the JetStream meta leader and the leader has it
// current. Kill, Start and Stop are serialized: one waits for another.
func (c *NATSCluster) Start(ctx context.Context, i int) error {
	if i < 0 || i >= len(c.nodes) {
		return fmt.Errorf("chaos: nats: no node %d", i)
	}
	ctx, cancel := boundContext(ctx)
	defer cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("chaos: nats: cluster stopped")
	}
	if p := c.nodes[i].proc; p != nil && !p.exited() {
		return fmt.Errorf("chaos: nats: node %s already runs", c.nodes[i].name)
	}
	began := time.Now()
	if err := c.spawn(i); err != nil {
		return err
	}
	if err := c.waitUntil(ctx, i, func(ctx context.Context) string { return c.nodeRejoined(ctx, i) }); err != nil {
		return err
	}
	c.logger.Info("chaos: nats node rejoined", "node", c.nodes[i].name, "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// Restart kills node i and starts it again.
func (c *NATSCluster) Restart(ctx context.Context, i int) error {
	if err := c.Kill(i); err != nil {
		return err
	}
	return c.Start(ctx, i)
}

// Stop sends SIGTERM to every node, then SIGKILL to those still running
// after a bound (natsStopGrace or ctx, the earlier), and waits until
// every process is gone. It is idempotent.
func (c *NATSCluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	ctx, cancel := context.WithTimeout(ctx, natsStopGrace)
	defer cancel()
	var running []*nodeProc
	for _, n := range c.nodes {
		if n.proc != nil {
			n.proc.expected.Store(true)
			_ = syscall.Kill(-n.proc.cmd.Process.Pid, syscall.SIGTERM)
			running = append(running, n.proc)
			n.proc = nil
		}
	}
	defer c.http.CloseIdleConnections()
	var errs []error
	for _, p := range running {
		select {
		case <-p.done:
			continue
		case <-ctx.Done():
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		if !p.waitExit(natsExitTimeout) {
			errs = append(errs, fmt.Errorf("chaos: nats: process %d not gone after SIGKILL", p.cmd.Process.Pid))
		}
	}
	return errors.Join(errs...)
}

// spawn starts node i's process; c.mu is held.
func (c *NATSCluster) spawn(i int) error {
	n := c.nodes[i]
	routes := make([]string, len(c.nodes))
	for j, peer := range c.nodes {
		routes[j] = fmt.Sprintf("nats-route://127.0.0.1:%d", peer.route)
	}
	args := append(slices.Clone(c.args),
		"-name", n.name,
		"-port", strconv.Itoa(n.client),
		"-cluster-port", strconv.Itoa(n.route),
		"-monitor-port", strconv.Itoa(n.monitor),
		"-routes", strings.Join(routes, ","),
		"-store", n.dir,
		"-cluster", c.name,
	)
	cmd := exec.Command(c.exe, args...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.SysProcAttr = nodeProcAttr()
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("chaos: nats: node %s: %w", n.name, err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	_ = w.Close()
	if err != nil {
		_ = r.Close()
		return fmt.Errorf("chaos: nats: start node %s: %w", n.name, err)
	}
	p := &nodeProc{cmd: cmd, done: make(chan struct{})}
	n.proc = p
	logger := c.logger.With("node", n.name)
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		logLines(r, logger)
	}()
	go func() {
		err := cmd.Wait()
		// The group is gone or going: its output ends soon; a grandchild
		// holding the pipe must not hold this goroutine.
		select {
		case <-lines:
		case <-time.After(natsExitTimeout):
		}
		_ = r.Close()
		p.err = err
		if !p.expected.Load() {
			c.exitedUnexpectedly(n.name, err)
		}
		close(p.done)
	}()
	return nil
}

func (c *NATSCluster) exitedUnexpectedly(name string, err error) {
	err = fmt.Errorf("chaos: nats: node %s exited unexpectedly: %v", name, err)
	c.logger.Error(err.Error())
	c.errMu.Lock()
	defer c.errMu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// exited reports whether the process has exited.
func (p *nodeProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *nodeProc) waitExit(timeout time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// StreamLeader is the index of the node that leads stream (of the default
// account), asked with $JS.API.STREAM.INFO through a client connection:
// -1 when the stream has no leader or no node answered within a second
// (during an election nobody answers: poll it); an error when ctx ends or
// JetStream answers one.
func (c *NATSCluster) StreamLeader(ctx context.Context, stream string) (int, error) {
	nc, err := nats.Connect(c.URL(), nats.Timeout(2*time.Second), nats.Name("hookhub-chaos"))
	if err != nil {
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		return -1, nil
	}
	defer nc.Close()
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(rctx, "$JS.API.STREAM.INFO."+stream, nil)
	if err != nil {
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		return -1, nil
	}
	var info struct {
		Cluster *struct {
			Leader string `json:"leader"`
		} `json:"cluster"`
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		return -1, fmt.Errorf("chaos: nats: stream info: %w", err)
	}
	if info.Error != nil {
		return -1, fmt.Errorf("chaos: nats: stream info: %s (%d)", info.Error.Description, info.Error.Code)
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return -1, nil
	}
	return c.index(info.Cluster.Leader)
}

// index is the index of the node named name.
func (c *NATSCluster) index(name string) (int, error) {
	for i, n := range c.nodes {
		if n.name == name {
			return i, nil
		}
	}
	return -1, fmt.Errorf("chaos: nats: unknown node %q", name)
}

// monitorGet decodes the JSON of node i's monitoring endpoint path into
// v, and returns the status code.
func (c *NATSCluster) monitorGet(ctx context.Context, i int, path string, v any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	u := fmt.Sprintf("http://127.0.0.1:%d%s", c.nodes[i].monitor, path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		return resp.StatusCode, fmt.Errorf("%s: %w", path, err)
	}
	return resp.StatusCode, nil
}

// waitUntil polls cond every 100 ms until it answers "" (ready), ctx ends,
// or node i (every node when i is -1) exits; c.mu is held. The error
// carries cond's last answer.
func (c *NATSCluster) waitUntil(ctx context.Context, i int, cond func(context.Context) string) error {
	why := "not asked yet"
	for {
		for j, n := range c.nodes {
			if (i == -1 || i == j) && n.proc != nil && n.proc.exited() {
				return fmt.Errorf("chaos: nats: node %s exited while starting: %v", n.name, n.proc.err)
			}
		}
		was := why
		if why = cond(ctx); why == "" {
			return nil
		}
		if why != was {
			c.logger.Debug("chaos: nats: waiting", "why", why)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: nats: not ready: %s: %w", why, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// clusterReady answers "" once every node follows the same JetStream meta
// leader and the leader has every node current, or else why not.
func (c *NATSCluster) clusterReady(ctx context.Context) string {
	leader := ""
	for i := range c.nodes {
		l, why := c.rejoined(ctx, i)
		if why != "" {
			return why
		}
		if leader != "" && l != leader {
			return fmt.Sprintf("nodes follow different meta leaders: %s and %s", leader, l)
		}
		leader = l
	}
	return ""
}

// nodeRejoined answers "" once node i follows the JetStream meta leader
// and the leader has it current, or else why not.
func (c *NATSCluster) nodeRejoined(ctx context.Context, i int) string {
	_, why := c.rejoined(ctx, i)
	return why
}

// jsz is the part of a node's /jsz answer these checks read.
type jsz struct {
	Meta *struct {
		Leader   string `json:"leader"`
		Replicas []struct {
			Name    string `json:"name"`
			Current bool   `json:"current"`
			Offline bool   `json:"offline"`
		} `json:"replicas"`
	} `json:"meta_cluster"`
}

// rejoined returns the meta leader node i follows and "", or else why
// it has not rejoined.
func (c *NATSCluster) rejoined(ctx context.Context, i int) (string, string) {
	name := c.nodes[i].name
	// The meta leader first: the health check logs a warning each time
	// it fails.
	var own jsz
	if _, err := c.monitorGet(ctx, i, "/jsz", &own); err != nil {
		return "", fmt.Sprintf("%s: jsz: %v", name, err)
	}
	if own.Meta == nil || own.Meta.Leader == "" {
		return "", name + " knows no meta leader"
	}
	var health struct {
		Error string `json:"error"`
	}
	code, err := c.monitorGet(ctx, i, "/healthz?js-meta-only=true", &health)
	if err != nil {
		return "", fmt.Sprintf("%s: healthz: %v", name, err)
	}
	if code != http.StatusOK {
		return "", fmt.Sprintf("%s: %s", name, health.Error)
	}
	leader := own.Meta.Leader
	if leader == name {
		return leader, ""
	}
	li, err := c.index(leader)
	if err != nil {
		return "", err.Error()
	}
	var theirs jsz
	if _, err := c.monitorGet(ctx, li, "/jsz", &theirs); err != nil {
		return "", fmt.Sprintf("meta leader %s: jsz: %v", leader, err)
	}
	if theirs.Meta == nil || theirs.Meta.Leader != leader {
		return "", fmt.Sprintf("%s follows %s, which does not lead", name, leader)
	}
	for _, r := range theirs.Meta.Replicas {
		if r.Name == name && r.Current && !r.Offline {
			return leader, ""
		}
	}
	return "", fmt.Sprintf("meta leader %s does not have %s current", leader, name)
}
