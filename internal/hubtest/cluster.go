package hubtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/internal/natsembed"
)

// ClusterOptions configure JetStreamCluster. Zero values take defaults.
type ClusterOptions struct {
	// Size is the number of nodes. Default 3.
	Size int
	// Name is the cluster's name. Default "hookhub-test".
	Name string
	// MaxStore bounds each node's file store, in bytes. Default 256 MiB.
	MaxStore int64
	// Logger receives the servers' notices, warnings and errors, each with
	// a "node" attribute. Nil silences them.
	Logger *slog.Logger
}

// Cluster is an in-process JetStream cluster for one test: every node is
// a nats-server in this process, listening on 127.0.0.1 (client port
// chosen at first start, kept across restarts), with its own store
// directory and NoSigs. It is shut down when the test ends.
//
// Every route connection between two nodes passes through a small TCP
// proxy in front of the accepting node's cluster port (the nodes advertise
// the proxies' addresses, so gossip uses them too). That is what lets
// Crash cut a node off the cluster before it stops: an in-process
// Shutdown alone hands its Raft leaderships over to a follower first.
type Cluster struct {
	t     testing.TB
	name  string
	mu    sync.Mutex
	nodes []*clusterNode
}

type clusterNode struct {
	name   string
	opts   *server.Options
	srv    *server.Server // nil while stopped
	proxy  *routeProxy
	logger *slog.Logger
}

// JetStreamCluster starts an in-process JetStream cluster and waits until
// it has a JetStream meta leader that every node follows. Its nodes are
// shut down when the test ends (register it before anything that uses it,
// so that its cleanup runs last).
func JetStreamCluster(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	if o.Size == 0 {
		o.Size = 3
	}
	if o.Name == "" {
		o.Name = "hookhub-test"
	}
	if o.MaxStore == 0 {
		o.MaxStore = 256 << 20
	}
	c := &Cluster{t: t, name: o.Name}
	// Store directories first: cleanups run last-in first-out, and the
	// nodes must stop before their directories are removed.
	dirs := make([]string, o.Size)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	t.Cleanup(c.shutdown)
	var routes []string
	for i := range o.Size {
		p, err := newRouteProxy()
		if err != nil {
			t.Fatalf("hubtest: cluster: %v", err)
		}
		n := &clusterNode{name: fmt.Sprintf("%s-n%d", o.Name, i+1), proxy: p}
		if o.Logger != nil {
			n.logger = o.Logger.With("node", n.name)
		}
		c.nodes = append(c.nodes, n)
		routes = append(routes, "nats-route://"+p.addr())
	}
	for i, n := range c.nodes {
		n.opts = &server.Options{
			ServerName: n.name,
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			Cluster: server.ClusterOpts{
				Name: o.Name,
				Host: "127.0.0.1",
				Port: server.RANDOM_PORT,
				// Peers reach this node through its proxy, gossip included.
				Advertise: n.proxy.addr(),
				// Plain bytes between in-process nodes: cheaper on a
				// loaded test machine.
				Compression: server.CompressionOpts{Mode: server.CompressionOff},
			},
			// Every node, itself included (as nats-server's own cluster
			// tests do): the meta group then expects Size peers from the
			// start instead of bootstrapping with two.
			Routes:             server.RoutesFromStr(strings.Join(routes, ",")),
			JetStream:          true,
			StoreDir:           dirs[i],
			JetStreamMaxStore:  o.MaxStore,
			JetStreamMaxMemory: 64 << 20,
			NoSigs:             true,
			NoLog:              o.Logger == nil,
		}
	}
	for i := range c.nodes {
		c.Start(i)
	}
	if err := c.WaitReady(60 * time.Second); err != nil {
		t.Fatalf("hubtest: cluster: %v", err)
	}
	return c
}

// Size is the number of nodes, running or not.
func (c *Cluster) Size() int { return len(c.nodes) }

// URLs are the client URLs of every node, running or not.
func (c *Cluster) URLs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = fmt.Sprintf("nats://127.0.0.1:%d", n.opts.Port)
	}
	return out
}

// URL is URLs joined by commas, as HUB_NATS_URL takes them.
func (c *Cluster) URL() string { return strings.Join(c.URLs(), ",") }

// Name is node i's server name.
func (c *Cluster) Name(i int) string { return c.nodes[i].name }

// Index is the index of the node whose server name is name, or -1.
func (c *Cluster) Index(name string) int {
	for i, n := range c.nodes {
		if n.name == name {
			return i
		}
	}
	return -1
}

// IndexOfURL is the index of the node whose client port url names (a
// nats:// URL such as a connection's ConnectedUrl), or -1.
func (c *Cluster) IndexOfURL(u string) int {
	parsed, err := url.Parse(u)
	if err != nil {
		return -1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range c.nodes {
		if parsed.Port() == strconv.Itoa(n.opts.Port) {
			return i
		}
	}
	return -1
}

// Running reports whether node i is running.
func (c *Cluster) Running(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].srv != nil
}

// Server is node i's server, nil while it is stopped.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].srv
}

// Start starts node i, which must be stopped, on its ports and store
// directory: a restarted node rejoins the cluster and catches up.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[i]
	if n.srv != nil {
		c.t.Fatalf("hubtest: cluster: node %s is already running", n.name)
	}
	ns, err := server.NewServer(n.opts.Clone())
	if err != nil {
		c.t.Fatalf("hubtest: cluster: node %s: %v", n.name, err)
	}
	if n.logger != nil {
		ns.SetLoggerV2(natsembed.NewLogger(n.logger), false, false, false)
	}
	ns.Start()
	if !ns.ReadyForConnections(20 * time.Second) {
		ns.Shutdown()
		ns.WaitForShutdown()
		c.t.Fatalf("hubtest: cluster: node %s not ready after 20s", n.name)
	}
	// Keep the ports the first start picked, so that a restart comes back
	// where clients and peers expect it.
	if a, ok := ns.Addr().(*net.TCPAddr); ok {
		n.opts.Port = a.Port
	}
	if a := ns.ClusterAddr(); a != nil {
		n.opts.Cluster.Port = a.Port
	}
	n.srv = ns
	n.proxy.open(fmt.Sprintf("127.0.0.1:%d", n.opts.Cluster.Port))
}

// Stop shuts node i down (nats-server's Shutdown, without lame duck mode)
// and waits until it has stopped; its store stays on disk. Shutdown closes
// the node's client connections at once, but first hands the Raft groups
// it leads over to an up-to-date follower, so no election timeout passes.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	c.halt(i, false)
}

// Crash stops node i as a crash would: it is first cut off from its peers
// (every route connection to or from it is closed and new ones refused),
// then shut down, so the leadership hand-over Shutdown attempts reaches
// nobody. Its peers see their connections drop without notice and elect
// new leaders after the Raft election timeout; its clients see their
// connections close. Its store stays on disk; Start restarts it.
func (c *Cluster) Crash(i int) {
	c.t.Helper()
	c.halt(i, true)
}

// halt shuts node i down if it runs, and waits until it has stopped:
// cut off from its peers first when crash is set (Crash), its proxy
// blocked after otherwise (Stop).
func (c *Cluster) halt(i int, crash bool) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[i]
	if n.srv == nil {
		return
	}
	if crash {
		c.cutOff(i)
	}
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
	n.srv = nil
	if !crash {
		n.proxy.block()
	}
}

// cutOff closes every route connection to or from node i and refuses new
// ones.
func (c *Cluster) cutOff(i int) {
	n := c.nodes[i]
	// Routes into the node pass through its own proxy.
	n.proxy.block()
	// Routes it opened pass through its peers' proxies: keep there only
	// the connections the peer knows as routes from another live node.
	for j, peer := range c.nodes {
		if j == i || peer.srv == nil {
			continue
		}
		rz, err := peer.srv.Routez(nil)
		if err != nil {
			c.t.Fatalf("hubtest: cluster: routez of %s: %v", peer.name, err)
		}
		keep := map[int]bool{}
		for _, r := range rz.Routes {
			if !r.DidSolicit && r.RemoteName != n.name && r.Port != 0 {
				keep[r.Port] = true
			}
		}
		peer.proxy.cutExcept(keep)
	}
}

// MetaLeader is the index of the running node that leads the JetStream
// meta group, or -1.
func (c *Cluster) MetaLeader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range c.nodes {
		if n.srv != nil && n.srv.JetStreamIsLeader() {
			return i
		}
	}
	return -1
}

// StreamLeader is the index of the running node that leads stream (of the
// default account), or -1 while it has none.
func (c *Cluster) StreamLeader(stream string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range c.nodes {
		if n.srv != nil && n.srv.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return i
		}
	}
	return -1
}

// StreamCurrent reports whether node i runs and its replica of stream is
// caught up with the leader.
func (c *Cluster) StreamCurrent(i int, stream string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[i]
	return n.srv != nil && n.srv.JetStreamIsStreamCurrent(server.DEFAULT_GLOBAL_ACCOUNT, stream)
}

// MoveStreamLeader asks the stream's leader to hand its leadership over
// to node i (a JetStream leader step-down with a preferred placement, as
// `nats stream cluster step-down --preferred` does) and waits until node i
// leads, asking again every few seconds. It returns at once when node i
// leads already.
func (c *Cluster) MoveStreamLeader(stream string, i int, timeout time.Duration) error {
	if c.StreamLeader(stream) == i {
		return nil
	}
	nc, err := nats.Connect(c.URL())
	if err != nil {
		return err
	}
	defer nc.Close()
	req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": c.nodes[i].name}})
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		last = stepDown(nc, "$JS.API.STREAM.LEADER.STEPDOWN."+stream, req)
		if err := poll(min(5*time.Second, time.Until(deadline)), func() bool { return c.StreamLeader(stream) == i }); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s did not become the leader of stream %s within %s (last step-down answer: %v)", c.nodes[i].name, stream, timeout, last)
}

func stepDown(nc *nats.Conn, subject string, req []byte) error {
	resp, err := nc.Request(subject, req, 5*time.Second)
	if err != nil {
		return err
	}
	var answer struct {
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &answer); err != nil {
		return err
	}
	if answer.Error != nil {
		return errors.New(answer.Error.Description)
	}
	return nil
}

// WaitStreamLeader waits until a running node leads stream and returns its
// index.
func (c *Cluster) WaitStreamLeader(stream string, timeout time.Duration) (int, error) {
	leader := -1
	err := poll(timeout, func() bool {
		leader = c.StreamLeader(stream)
		return leader >= 0
	})
	if err != nil {
		return -1, fmt.Errorf("stream %s has no leader after %s", stream, timeout)
	}
	return leader, nil
}

// WaitReady waits until every running node is routed to every other
// running node, and the JetStream meta group has a leader that every
// running node follows.
func (c *Cluster) WaitReady(timeout time.Duration) error {
	var why string
	err := poll(timeout, func() bool {
		why = c.notReady()
		return why == ""
	})
	if err != nil {
		return fmt.Errorf("not ready after %s: %s", timeout, why)
	}
	return nil
}

func (c *Cluster) notReady() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	running := map[string]bool{}
	for _, n := range c.nodes {
		if n.srv != nil {
			running[n.name] = true
		}
	}
	leaders := 0
	for _, n := range c.nodes {
		if n.srv == nil {
			continue
		}
		rz, err := n.srv.Routez(nil)
		if err != nil {
			return err.Error()
		}
		peers := map[string]bool{}
		for _, r := range rz.Routes {
			if running[r.RemoteName] {
				peers[r.RemoteName] = true
			}
		}
		if len(peers) != len(running)-1 {
			return fmt.Sprintf("%s is routed to %d of %d running peers", n.name, len(peers), len(running)-1)
		}
		if !n.srv.JetStreamIsCurrent() {
			return n.name + " does not follow a JetStream meta leader"
		}
		if n.srv.JetStreamIsLeader() {
			leaders++
		}
	}
	if leaders != 1 {
		return fmt.Sprintf("%d meta leaders", leaders)
	}
	return ""
}

// Connect returns a client connection to every node (reconnecting forever,
// 50ms apart) and its JetStream context, closed when the test ends.
func (c *Cluster) Connect(t testing.TB, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return connect(t, c.URL(), opts...)
}

func (c *Cluster) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.srv != nil {
			n.srv.Shutdown()
		}
	}
	for _, n := range c.nodes {
		if n.srv != nil {
			n.srv.WaitForShutdown()
			n.srv = nil
		}
		n.proxy.close()
	}
}

// poll calls cond every 20ms until it returns true or timeout passes.
func poll(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("timeout")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// routeProxy forwards the route connections a node accepts: peers dial
// the proxy, which dials the node's cluster port. Blocked, it refuses
// (accepts and closes) every connection.
type routeProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	target string // the node's cluster address; "" while blocked
	conns  map[*proxyConn]struct{}
	wg     sync.WaitGroup
}

type proxyConn struct {
	down, up net.Conn // from the peer; to the node
	once     sync.Once
}

func (pc *proxyConn) close() {
	pc.once.Do(func() {
		_ = pc.down.Close()
		_ = pc.up.Close()
	})
}

// upPort is the local port of the connection to the node: the port the
// node sees the route coming from.
func (pc *proxyConn) upPort() int {
	if a, ok := pc.up.LocalAddr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

func newRouteProxy() (*routeProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("route proxy: %w", err)
	}
	p := &routeProxy{ln: ln, conns: map[*proxyConn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

func (p *routeProxy) addr() string { return p.ln.Addr().String() }

func (p *routeProxy) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.forward(down) })
	}
}

func (p *routeProxy) forward(down net.Conn) {
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	if target == "" {
		_ = down.Close()
		return
	}
	up, err := net.DialTimeout("tcp", target, 2*time.Second)
	if err != nil {
		_ = down.Close()
		return
	}
	pc := &proxyConn{down: down, up: up}
	p.mu.Lock()
	if p.target != target {
		p.mu.Unlock()
		pc.close()
		return
	}
	p.conns[pc] = struct{}{}
	p.mu.Unlock()
	var pipes sync.WaitGroup
	pipes.Go(func() { _, _ = io.Copy(up, down); pc.close() })
	pipes.Go(func() { _, _ = io.Copy(down, up); pc.close() })
	pipes.Wait()
	p.mu.Lock()
	delete(p.conns, pc)
	p.mu.Unlock()
}

// open forwards new connections to target.
func (p *routeProxy) open(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// block refuses new connections and closes every open one.
func (p *routeProxy) block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = ""
	for pc := range p.conns {
		pc.close()
	}
}

// cutExcept closes every open connection whose port toward the node is
// not in keep.
func (p *routeProxy) cutExcept(keep map[int]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pc := range p.conns {
		if !keep[pc.upPort()] {
			pc.close()
		}
	}
}

func (p *routeProxy) close() {
	p.block()
	_ = p.ln.Close()
	p.wg.Wait()
}
