package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/chaos"
	"github.com/hookhub/hookhub/hub/service"
)

func runChaosLocal(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chaos local", `Usage: hub chaos local [flags]

Starts a topology on this machine in a temporary directory: a Postgres
primary and standby (initdb, pg_basebackup; synchronous replication unless
--async), three JetStream nodes as separate processes with the stream at R3,
--hubs hub replicas (this binary's `+"`serve`"+`) behind a load balancer, each
reaching Postgres and NATS through proxies of its own, and the example
subscribers (credits, email, downgrade). It then sends the load, injects the
faults one after another (or --together), checks, prints the report and
removes the topology. Needs PostgreSQL's server binaries (pg_config --bindir
or /usr/lib/postgresql/*/bin); as root, Postgres runs as the postgres user.

Faults: `+strings.Join(chaos.FaultNames, ", ")+` (or all)
  kill-hub        SIGKILL one hub under load, start it again a second later
  pg-failover     SIGKILL the Postgres primary, promote the standby, rebuild
                  the old primary as the new standby
  nats-kill       SIGKILL the stream leader's node, start it again after 2 s
  partition-pg    a hub loses Postgres (packets stall) for --partition-for
  partition-nats  a hub loses NATS for --partition-for
`, stdout)
	cf := addChaosFlags(fs)
	hubs := fs.Int("hubs", 3, "hub replicas (1..5)")
	faults := fs.String("faults", "all", "faults to inject, comma-separated")
	async := fs.Bool("async", false, "replicate Postgres asynchronously, to measure what that loses")
	partitionFor := fs.Duration("partition-for", 3*time.Second, "how long a partition lasts (at most 10m)")
	dir := fs.String("dir", "", "keep the topology's data and logs in this directory (default: a temporary one, removed)")
	verbose := fs.Bool("verbose", false, "log the topology's steps on stderr")
	if err := parseNoArgs(fs, args, "chaos local takes no arguments; see --help"); err != nil {
		return err
	}
	if err := cf.validate(); err != nil {
		return err
	}
	if *hubs < 1 || *hubs > 5 {
		return usageErr(fmt.Sprintf("--hubs must be within 1..5, got %d", *hubs))
	}
	if *partitionFor <= 0 || *partitionFor > 10*time.Minute {
		return usageErr(fmt.Sprintf("--partition-for must be within 0..10m, got %s", *partitionFor))
	}
	names := splitList(*faults)
	if err := checkFaultNames(names); err != nil {
		return err
	}
	var cfg service.Config
	cfg.SignatureTolerance = 5 * time.Minute
	cfg.WithDevSecrets() // public development secrets: the hubs listen on 127.0.0.1 only
	for name := range cfg.Secrets {
		if !slices.ContainsFunc(chaos.DefaultMix, func(k chaos.Kind) bool { return k.Provider == name }) {
			delete(cfg.Secrets, name) // the providers the load does not send to stay unmounted
		}
	}
	signers, err := signersOf(&cfg, chaos.DefaultMix)
	if err != nil {
		return err
	}
	var hubEnv []string
	for name, secrets := range cfg.ProviderSecrets() {
		hubEnv = append(hubEnv, service.SecretsVar(name)+"="+strings.Join(secrets, ","))
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("chaos: find the hub binary: %w", err)
	}
	d, cleanup, err := tempChaosDir(*dir)
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	defer cleanup()
	log := chaosLogger(stderr, *verbose)
	fmt.Fprintf(stderr, "starting the topology in %s\n", d)
	local, err := chaos.StartLocal(ctx, chaos.LocalOptions{Dir: d, Exe: exe, Hubs: *hubs, Synchronous: !*async,
		HubEnv: hubEnv, PartitionFor: *partitionFor, Logger: log,
		Subscribers: func(ctx context.Context, dbURL, natsURL, stream string) (func(), error) {
			return runDevSubscribers(ctx, dbURL, natsURL, stream, nil, log)
		}})
	defer func() {
		if err := local.Stop(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(stderr, "chaos: stopping the topology: %v\n", err)
		}
	}()
	if err != nil {
		return err
	}
	fl, err := local.Faults(names)
	if err != nil {
		return usageErr(err.Error())
	}
	o := cf.runOptions(local.URL(), signers, chaos.DefaultMix, fl, stderr)
	o.Check.Pool, o.Check.JetStream, o.Check.Stream = local.Pool(), local.JetStream(), "WEBHOOKS"
	o.Repair = local.Repair
	fmt.Fprintf(stderr, "topology ready: %d hubs behind %s; sending %d events at %v/s, faults: %s\n",
		*hubs, local.URL(), *cf.events, *cf.rate, strings.Join(names, ", "))
	r, err := chaos.Run(ctx, o)
	if err != nil {
		return err
	}
	return printChaosReport(r, *cf.asJSON, stdout)
}

// checkFaultNames refuses an unknown fault before anything starts.
func checkFaultNames(names []string) error {
	if len(names) == 0 {
		return usageErr("--faults names no fault; see --help")
	}
	for _, n := range names {
		if n != "all" && !slices.Contains(chaos.FaultNames, n) {
			return usageErr(fmt.Sprintf("--faults: unknown fault %q (known: %s, all)", n, strings.Join(chaos.FaultNames, ", ")))
		}
	}
	if len(names) > 1 && slices.Contains(names, "all") {
		return usageErr("--faults: all stands alone")
	}
	return nil
}
