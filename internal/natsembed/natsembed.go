// Package natsembed runs a JetStream-enabled nats-server inside the hub's
// process: the development default when no NATS URL is configured, and the
// real server the tests run against.
//
// The server listens on TCP (so separate subscriber processes and the nats
// CLI can connect), never installs signal handlers (the hub owns graceful
// shutdown), and keeps its store in the directory it is given.
package natsembed

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultPort is the port tried first when Options.Port is 0.
const DefaultPort = 4222

// Options configure an embedded server.
type Options struct {
	// Host to listen on. Default 127.0.0.1.
	Host string
	// Port to listen on. 0 tries DefaultPort and falls back to a free port
	// when it is taken; -1 always picks a free port.
	Port int
	// StoreDir holds the JetStream file store. Required: an empty store dir
	// would make nats-server share os.TempDir() with every other embedded
	// server on the machine.
	StoreDir string
	// ServerName, used in logs. Default "hookhub-embedded".
	ServerName string
	// MaxStore bounds the JetStream file store, in bytes. 0 means 1 GiB.
	MaxStore int64
	// Logger receives the server's notices, warnings and errors. Nil
	// silences it.
	Logger *slog.Logger
	// MonitorPort, when positive, serves nats-server's HTTP monitoring
	// endpoints (/healthz, /jsz, /routez, ...) on Host.
	MonitorPort int
	// Cluster, when set, makes the server a node of a JetStream cluster.
	Cluster *ClusterOptions
}

// ClusterOptions make an embedded server a node of a JetStream cluster.
type ClusterOptions struct {
	// Name of the cluster, the same on every node.
	Name string
	// Port the node accepts route connections on, on Options.Host.
	Port int
	// Routes are the nats-route:// URLs of the cluster's nodes; listing
	// the node itself too lets the meta group expect every peer from the
	// start.
	Routes []string
}

// Server is a running embedded nats-server.
type Server struct {
	ns   *server.Server
	opts *server.Options
}

// Start starts a server and waits until it accepts connections.
func Start(o Options) (*Server, error) {
	if o.StoreDir == "" {
		return nil, errors.New("natsembed: StoreDir is required")
	}
	o.Host = cmp.Or(o.Host, "127.0.0.1")
	o.ServerName = cmp.Or(o.ServerName, "hookhub-embedded")
	o.MaxStore = cmp.Or(o.MaxStore, 1<<30)
	port := o.Port
	if port == 0 {
		port = DefaultPort
		if !portFree(o.Host, port) {
			port = server.RANDOM_PORT
		}
	}
	opts := &server.Options{
		ServerName:         o.ServerName,
		Host:               o.Host,
		Port:               port,
		JetStream:          true,
		StoreDir:           o.StoreDir,
		JetStreamMaxStore:  o.MaxStore,
		JetStreamMaxMemory: 64 << 20,
		NoSigs:             true,
		NoLog:              o.Logger == nil,
		// Room for the hub's largest accepted body (HUB_MAX_BODY_BYTES,
		// 1 MiB by default) plus headers; nats-server's default is 1 MB.
		MaxPayload: 8 << 20,
		HTTPHost:   o.Host,
		HTTPPort:   max(o.MonitorPort, 0),
	}
	if c := o.Cluster; c != nil {
		opts.Cluster = server.ClusterOpts{
			Name: c.Name,
			Host: o.Host,
			Port: c.Port,
			// Loopback peers: compression would only cost CPU.
			Compression: server.CompressionOpts{Mode: server.CompressionOff},
		}
		opts.Routes = server.RoutesFromStr(strings.Join(c.Routes, ","))
	}
	return start(opts, o.Logger)
}

func start(opts *server.Options, logger *slog.Logger) (*Server, error) {
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsembed: new server: %w", err)
	}
	if logger != nil {
		ns.SetLoggerV2(NewLogger(logger.With("component", "nats-server")), false, false, false)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("natsembed: server on %s:%d not ready after 10s", opts.Host, opts.Port)
	}
	return &Server{ns: ns, opts: opts}, nil
}

// ClientURL is the nats:// URL clients connect to.
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// Port is the TCP port the server listens on.
func (s *Server) Port() int {
	if a, ok := s.ns.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return s.opts.Port
}

// Shutdown stops the server and waits until it has stopped. Its store stays
// on disk.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// Restart starts a new server on the same port and store directory as s,
// which must have been shut down. Clients reconnect to it by themselves.
func (s *Server) Restart(logger *slog.Logger) (*Server, error) {
	opts := s.opts.Clone()
	opts.Port = s.Port()
	return start(opts, logger)
}

func portFree(host string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// NewLogger returns l as a nats-server logger (server.SetLoggerV2), for
// every in-process server: the embedded one and the test clusters.
func NewLogger(l *slog.Logger) server.Logger { return slogAdapter{l} }

// slogAdapter routes nats-server's printf-style logging to slog. Fatalf is
// logged as an error: an in-process server must never exit the process.
type slogAdapter struct{ l *slog.Logger }

// Noticef is logged at debug level: the server's start-up banner is noise
// in the hub's log.
func (a slogAdapter) Noticef(format string, v ...any) { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Warnf(format string, v ...any)   { a.l.Warn(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Fatalf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Errorf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Debugf(format string, v ...any)  { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Tracef(format string, v ...any)  { a.l.Debug(fmt.Sprintf(format, v...)) }
