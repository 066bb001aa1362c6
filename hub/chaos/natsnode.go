package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/hookhub/hookhub/internal/natsembed"
)

// RunNode is the body of a node process: it parses the node flags
// StartNATS passes (-name, -port, -cluster-port, -monitor-port, -routes,
// -store, -cluster), runs an embedded JetStream nats-server with a file
// store until ctx is done (SIGTERM, for the caller), shuts it down and
// returns. It logs to stderr, one JSON record a line.
func RunNode(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("chaos node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "server name")
	port := fs.Int("port", 0, "client port on 127.0.0.1")
	clusterPort := fs.Int("cluster-port", 0, "route port on 127.0.0.1")
	monitorPort := fs.Int("monitor-port", 0, "HTTP monitoring port on 127.0.0.1 (0: none)")
	routes := fs.String("routes", "", "comma-separated nats-route:// URLs of every node")
	store := fs.String("store", "", "JetStream store directory")
	cluster := fs.String("cluster", "hookhub-chaos", "cluster name")
	debug := fs.Bool("debug", false, "log the server's notices too")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("chaos node: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("chaos node: unexpected arguments %q", fs.Args())
	}
	if *name == "" || *store == "" || *port <= 0 || *clusterPort <= 0 || *routes == "" {
		return errors.New("chaos node: -name, -store, -port, -cluster-port and -routes are required")
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	srv, err := natsembed.Start(natsembed.Options{
		Port:        *port,
		StoreDir:    *store,
		ServerName:  *name,
		Logger:      logger,
		MonitorPort: *monitorPort,
		Cluster: &natsembed.ClusterOptions{
			Name:   *cluster,
			Port:   *clusterPort,
			Routes: strings.Split(*routes, ","),
		},
	})
	if err != nil {
		return fmt.Errorf("chaos node: %w", err)
	}
	logger.Info("chaos node ready", "name", *name, "client", srv.ClientURL())
	<-ctx.Done()
	srv.Shutdown()
	logger.Info("chaos node stopped", "name", *name)
	return nil
}

// logLines logs every line r yields, cut at natsLogLineMax bytes, until
// it ends: a node's JSON log record (RunNode's) at its own level with its
// attributes, any other line as it is.
func logLines(r io.Reader, logger *slog.Logger) {
	br := bufio.NewReaderSize(r, natsLogLineMax)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			relayLine(logger, line)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			// Drop the rest of an overlong line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		}
		if err != nil {
			return
		}
	}
}

// relayLine logs one output line of a node.
func relayLine(logger *slog.Logger, line []byte) {
	var rec map[string]any
	if json.Unmarshal(line, &rec) != nil {
		logger.Info(strings.TrimRight(string(line), "\r\n"))
		return
	}
	msg, _ := rec[slog.MessageKey].(string)
	var level slog.Level
	if s, ok := rec[slog.LevelKey].(string); !ok || level.UnmarshalText([]byte(s)) != nil {
		level = slog.LevelInfo
	}
	attrs := make([]slog.Attr, 0, len(rec))
	for k, v := range rec {
		if k != slog.MessageKey && k != slog.LevelKey && k != slog.TimeKey {
			attrs = append(attrs, slog.Any(k, v))
		}
	}
	slices.SortFunc(attrs, func(a, b slog.Attr) int { return strings.Compare(a.Key, b.Key) })
	logger.LogAttrs(context.Background(), level, msg, attrs...)
}
