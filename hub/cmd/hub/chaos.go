package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/chaos"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/service"
)

const chaosUsage = `Usage: hub chaos <local | run | proxy> [flags]

Proves the hub's promise under faults: it sends signed events at a fixed
rate (retrying each until a 2xx, as providers do, and delivering some twice
as a provider whose 2xx was lost), injects faults while they arrive, then
checks that every acknowledged event is in the archive, on the stream
exactly once, and processed once by each subscriber that consumes it. It
prints sent, acknowledged, archived, on stream, processed, lost and
duplicated, and exits 1 on any loss or duplicate.

  local   start a topology on this machine (a Postgres primary and
          synchronous standby, three JetStream nodes, hub replicas behind a
          load balancer, the example subscribers), run, and remove it
  run     run against a deployment you name with --target, injecting only
          the faults you give the means for (--kill-pid, --partition)
  proxy   a TCP proxy to put in front of Postgres or NATS, whose control
          address lets ` + "`hub chaos run --partition`" + ` cut it off and heal it

Examples:
  hub chaos local
  hub chaos local --faults pg-failover --rate 200 --events 5000
  hub chaos local --async --faults pg-failover   # what asynchronous replication loses
  hub chaos run --target https://hub.staging.example.com --kill-pid 4242 --partition http://10.0.0.5:7001
`

func runChaos(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runAction(ctx, args, "chaos", chaosUsage, []command{
		{"local", "", runChaosLocal},
		{"run", "", runChaosRun},
		{"proxy", "", runChaosProxy},
		{"node", "", runChaosNode},
	}, stdout, stderr)
}

// chaosFlags are the load's and the check's flags, shared by local and run.
type chaosFlags struct {
	rate     *float64
	events   *int
	duration *time.Duration
	retryFor *time.Duration
	every    *time.Duration
	settle   *time.Duration
	together *bool
	asJSON   *bool
}

func addChaosFlags(fs *flag.FlagSet) chaosFlags {
	return chaosFlags{
		rate:     fs.Float64("rate", 50, fmt.Sprintf("new events a second (0.1..%d)", chaos.MaxRate)),
		events:   fs.Int("events", 1500, fmt.Sprintf("most events sent (1..%d)", chaos.MaxEvents)),
		duration: fs.Duration("duration", 40*time.Second, "stop sending new events after it (at most 1h)"),
		retryFor: fs.Duration("retry-for", 2*time.Minute, "how long each event is retried until a 2xx (at most 1h)"),
		every:    fs.Duration("every", 5*time.Second, "time between two faults (and before the first)"),
		settle:   fs.Duration("settle", 2*time.Minute, "how long the check waits for the stream and the subscribers to catch up (at most 1h)"),
		together: fs.Bool("together", false, "inject all the faults at once (500 ms apart) instead of one after another"),
		asJSON:   fs.Bool("json", false, "print the report as JSON"),
	}
}

func (f chaosFlags) validate() error {
	switch {
	case !(*f.rate >= 0.1 && *f.rate <= chaos.MaxRate):
		return usageErr(fmt.Sprintf("--rate must be within 0.1..%d, got %v", chaos.MaxRate, *f.rate))
	case *f.events < 1 || *f.events > chaos.MaxEvents:
		return usageErr(fmt.Sprintf("--events must be within 1..%d, got %d", chaos.MaxEvents, *f.events))
	case *f.duration <= 0 || *f.duration > chaos.MaxDuration:
		return usageErr(fmt.Sprintf("--duration must be within 0..1h, got %s", *f.duration))
	case *f.retryFor <= 0 || *f.retryFor > chaos.MaxRetryFor:
		return usageErr(fmt.Sprintf("--retry-for must be within 0..1h, got %s", *f.retryFor))
	case *f.every <= 0 || *f.every > time.Hour:
		return usageErr(fmt.Sprintf("--every must be within 0..1h, got %s", *f.every))
	case *f.settle <= 0 || *f.settle > time.Hour:
		return usageErr(fmt.Sprintf("--settle must be within 0..1h, got %s", *f.settle))
	}
	return nil
}

// runOptions are the run's options from the flags.
func (f chaosFlags) runOptions(target string, signers map[string]chaos.Signer, mix []chaos.Kind, faults []chaos.Fault, progress io.Writer) chaos.RunOptions {
	return chaos.RunOptions{
		Load: chaos.LoadOptions{Target: target, Signers: signers, Mix: mix, Rate: *f.rate, Events: *f.events,
			Duration: *f.duration, RetryFor: *f.retryFor},
		Faults: faults, Every: *f.every, Together: *f.together,
		Check:    chaos.CheckOptions{Settle: *f.settle},
		Progress: progress,
	}
}

// printChaosReport prints r and turns a loss or a duplicate into the
// error that makes the exit code 1.
func printChaosReport(r chaos.Report, asJSON bool, stdout io.Writer) error {
	var err error
	if asJSON {
		err = r.WriteJSON(stdout)
	} else {
		err = r.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if !r.OK() {
		return fmt.Errorf("chaos: %d events lost, %d duplicated (run %s)", r.Lost, r.Duplicated, r.RunID)
	}
	return nil
}

// signersOf returns the signers of the providers the mix needs, from cfg.
func signersOf(cfg *service.Config, mix []chaos.Kind) (map[string]chaos.Signer, error) {
	providers, err := cfg.Providers()
	if err != nil {
		return nil, err
	}
	out := map[string]chaos.Signer{}
	for _, p := range providers {
		if s, ok := p.(provider.Signer); ok {
			out[p.Name()] = s
		}
	}
	for _, k := range mix {
		if out[k.Provider] == nil {
			return nil, fmt.Errorf("chaos: the hub has no secret for %s (set %s)", k.Provider, service.SecretsVar(k.Provider))
		}
	}
	return out, nil
}

// chaosLogger logs the topology's and the subscribers' notices on stderr
// as text, warnings and up only unless verbose.
func chaosLogger(stderr io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

// splitList splits a comma list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func runChaosNode(ctx context.Context, args []string, _, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		return usageErr("hub chaos node is started by hub chaos local; it takes no flags of yours")
	}
	return chaos.RunNode(ctx, args, stderr)
}

// tempChaosDir is the local topology's directory: dir when given (kept),
// else a new temporary one removed by the returned function. Postgres runs
// as the postgres user when hub runs as root: the directory is readable.
func tempChaosDir(dir string) (string, func(), error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, err
		}
		return dir, func() {}, os.Chmod(dir, 0o755)
	}
	d, err := os.MkdirTemp("", "hookhub-chaos-")
	if err != nil {
		return "", nil, err
	}
	return d, func() { _ = os.RemoveAll(d) }, os.Chmod(d, 0o755)
}
