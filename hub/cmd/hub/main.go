// Command hub is the hookhub webhook hub: it verifies, archives,
// deduplicates and publishes webhooks to NATS JetStream.
//
// Run `hub --help` for the commands and `hub <command> --help` for each.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/internal/redact"
)

func main() {
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// tuneGC trades memory for CPU unless the operator chose with GOGC or
// GOMEMLIMIT: measured with `hub bench`, GOGC=400 cuts the hub's CPU per
// delivery by about a fifth, and the soft limit keeps the heap from
// growing past 256 MiB (the hub's RSS stays far below it at thousands of
// deliveries a second).
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(256 << 20)
	}
}

// command is one subcommand, in its own file (serve.go, events.go, ...):
// run gets the arguments after the command's name, declares and parses its
// flags as flags.go shows, writes its output on stdout and returns an
// error, which exitCode prints and maps to the exit code.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "run the hub (production): verify, archive, publish", runServe},
		{"dev", "run the hub on embedded defaults: creates the database, migrates, embeds NATS, dev secrets", runDev},
		{"migrate", "apply, roll back or list database migrations (up | down | status)", runMigrate},
		{"send", "sign and POST a realistic test delivery to a running hub", runSend},
		{"events", "forensics: list the archive, or show one event's deliveries and subscriber outcomes", runEvents},
		{"replay", "redeliver a range of the stream to one subscriber (it skips what it processed; a destination sends it again)", runReplay},
		{"republish", "publish archived events back into the stream (after retention or a lost stream)", runRepublish},
		{"bulk", "replay the events a filter (payload included) matches to one subscriber, or republish them", runBulk},
		{"reconcile", "list PROCESSED events the stream no longer holds (and republish them)", runReconcile},
		{"dlq", "list a subscriber's dead letters, or redrive them after a fix", runDLQ},
		{"destinations", "HTTP destinations: list, status, pause, resume, or test one with a signed sample", runDestinations},
		{"purge", "delete old archive rows in batches (the dedup table is kept)", runPurge},
		{"sessions", "the console's signed-in sessions: list them, revoke one, an operator's or all", runSessions},
		{"audit", "the audit trail: who replayed, republished, redrove, purged, paused what, and when", runAudit},
		{"status", "stream, consumers, outbox backlog and dead letters at a glance", runStatus},
		{"backfill", "ingest the events a provider's API lists but whose webhooks never arrived", runBackfill},
		{"chaos", "prove nothing is lost or duplicated under faults: a local topology, or a deployment you name", runChaos},
		{"bench", "measure throughput and latency end to end, against batching disabled and the raw ceiling", runBench},
		{"version", "print the version", runVersion},
	}
}

// run runs the command args on stdout and stderr, through the escaping
// of redact.Terminal: nothing a command prints, whatever the archive or a
// remote party put in it, can drive the terminal.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out, errOut := redact.Terminal(stdout), redact.Terminal(stderr)
	code := runCommand(ctx, args, out, errOut)
	_, _ = out.Flush(), errOut.Flush()
	return code
}

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printHelp(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	// The operator actions this command runs are recorded with who ran it.
	ctx = hub.WithActor(ctx, cliActor())
	for _, c := range commands() {
		if c.name == args[0] {
			// A refusal its action did not record is recorded here.
			actx, recorded := hub.WithAuditMark(ctx)
			err := c.run(actx, args[1:], stdout, stderr)
			if err != nil && !recorded() {
				recordRefusal(ctx, args, err)
			}
			return exitCode(c.name, err, stderr)
		}
	}
	fmt.Fprintf(stderr, "hub: unknown command %q; run `hub --help`\n", args[0])
	return 2
}

// exitCode prints the error of the command name on stderr and returns the
// exit code, the same for every command: 0 without an error (or after
// --help), 2 for bad input (the message names the flag), 1 otherwise (the
// target is missing or the operation failed).
func exitCode(name string, err error, stderr io.Writer) int {
	var input *ops.InputError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &input):
		// An operation refused a flag's value: name the flag.
		fmt.Fprintln(stderr, "hub "+name+":", flagName(input.Field)+":", input.Reason)
		return 2
	case errors.Is(err, errUsage), errors.Is(err, ops.ErrInvalid), errors.Is(err, ops.ErrBadTime):
		fmt.Fprintln(stderr, "hub "+name+":", err)
		return 2
	default:
		fmt.Fprintln(stderr, "hub "+name+":", err)
		return 1
	}
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, `hub: an event-sourced webhook fan-out hub over NATS JetStream.

Providers POST to /webhooks/{provider}; the hub verifies the signature,
archives and deduplicates the delivery in Postgres in one transaction,
answers 200 after the commit, and publishes each event exactly once to the
JetStream subject <provider>.<event_type>.

Usage:
  hub <command> [flags]

Commands:`)
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.name))
	}
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-*s %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `hub <command> --help` for a command's flags.\n\nEnvironment (every command reads the same variables):")
	printEnv(w)
}
