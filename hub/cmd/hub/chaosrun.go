package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookhub/hookhub/hub/chaos"
)

func runChaosRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chaos run", `Usage: hub chaos run --target URL [flags]

Runs the proof against a deployment: signed events (with the secrets of
HUB_<PROVIDER>_SECRETS, as the hub verifies them) POSTed to --target, the
faults you give the means for, then the check of the archive
(HUB_DATABASE_URL), the stream (HUB_NATS_URL, HUB_STREAM) and the
subscribers' tables (their schemas in the hub's database). Nothing is
injected that you did not name: --kill-pid sends SIGKILL to a process of this
machine (a hub: its supervisor restarts it), --partition stalls the
connections through a `+"`hub chaos proxy`"+` by its control URL, then heals it.
The events are real events on the target (ids evt_chaos<run>_<n>): run it
against a staging deployment, not production.
`, stdout)
	cf := addChaosFlags(fs)
	target := fs.String("target", "", "the hub's (or its load balancer's) base URL: required")
	var pids []int
	fs.Func("kill-pid", "a process to SIGKILL during the run (repeatable)", func(s string) error {
		pid, err := strconv.Atoi(s)
		if err != nil || pid <= 1 || pid == os.Getpid() {
			return fmt.Errorf("%q is not a process id of another process", s)
		}
		pids = append(pids, pid)
		return nil
	})
	var controls []string
	fs.Func("partition", "the control URL of a `hub chaos proxy` to partition for --partition-for (repeatable)", func(s string) error {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%q is not an http(s) URL", s)
		}
		controls = append(controls, strings.TrimRight(s, "/"))
		return nil
	})
	partitionFor := fs.Duration("partition-for", 3*time.Second, "how long a partition lasts (at most 10m)")
	subs := fs.String("subscribers", "credits,email,downgrade", "the subscribers to check (their schema names), comma-separated; empty: none")
	if err := parseNoArgs(fs, args, "chaos run takes no arguments; see --help"); err != nil {
		return err
	}
	if err := cf.validate(); err != nil {
		return err
	}
	if *target == "" {
		return usageErr("--target is required: name the hub to run against")
	}
	if u, err := url.Parse(*target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErr(fmt.Sprintf("--target %q is not an http(s) URL", *target))
	}
	if *partitionFor <= 0 || *partitionFor > 10*time.Minute {
		return usageErr(fmt.Sprintf("--partition-for must be within 0..10m, got %s", *partitionFor))
	}
	checked, err := chosenSubscriptions(*subs)
	if err != nil {
		return err
	}
	env, cfg, err := connectOps(ctx, natsRequired, stderr)
	if err != nil {
		return err
	}
	defer env.Close()
	signers, err := signersOf(&cfg, chaos.DefaultMix)
	if err != nil {
		return err
	}
	js, err := jetstream.New(env.nc)
	if err != nil {
		return err
	}
	faults := deploymentFaults(pids, controls, *partitionFor)
	o := cf.runOptions(*target, signers, chaos.DefaultMix, faults, stderr)
	o.Check.Pool, o.Check.JetStream, o.Check.Stream, o.Check.Subscribers = env.pool, js, env.nats.Stream, checked
	o.Repair = func(ctx context.Context) error { return healAll(ctx, controls) }
	r, err := chaos.Run(ctx, o)
	if err != nil {
		return err
	}
	return printChaosReport(r, *cf.asJSON, stdout)
}

// chosenSubscriptions returns the named example subscribers' checks.
func chosenSubscriptions(list string) ([]chaos.Subscription, error) {
	out := []chaos.Subscription{}
	for _, n := range splitList(list) {
		i := -1
		for j, s := range chaos.DefaultSubscriptions {
			if s.Name == n {
				i = j
			}
		}
		if i < 0 {
			return nil, usageErr(fmt.Sprintf("--subscribers: %q is not one of credits, email, downgrade", n))
		}
		out = append(out, chaos.DefaultSubscriptions[i])
	}
	return out, nil
}

// deploymentFaults are the faults the flags give the means for.
func deploymentFaults(pids []int, controls []string, partitionFor time.Duration) []chaos.Fault {
	var out []chaos.Fault
	for _, pid := range pids {
		out = append(out, chaos.Fault{Name: "kill-pid " + strconv.Itoa(pid), Inject: func(context.Context) error {
			return syscall.Kill(pid, syscall.SIGKILL)
		}})
	}
	for _, c := range controls {
		out = append(out, chaos.Fault{Name: "partition " + c, Inject: func(ctx context.Context) error {
			if err := proxyControl(ctx, c, "partition"); err != nil {
				return err
			}
			t := time.NewTimer(partitionFor)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			return proxyControl(context.WithoutCancel(ctx), c, "heal")
		}})
	}
	return out
}

func healAll(ctx context.Context, controls []string) error {
	var errs []error
	for _, c := range controls {
		errs = append(errs, proxyControl(ctx, c, "heal"))
	}
	return errors.Join(errs...)
}

// proxyControl POSTs action to a proxy's control URL.
func proxyControl(ctx context.Context, control, action string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, control+"/"+action, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("proxy %s: %s: %w", control, action, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("proxy %s: %s: %s %s", control, action, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func runChaosProxy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chaos proxy", `Usage: hub chaos proxy --listen ADDR --to ADDR[,ADDR...] --control ADDR

A TCP proxy to put between the hubs and Postgres or NATS (point the hubs'
HUB_DATABASE_URL or HUB_NATS_URL at --listen), so that `+"`hub chaos run\n--partition http://<control>`"+` can partition them and heal them. It forwards
each connection to the --to addresses in turn. Its control address answers
POST /partition (connections stall, nothing is refused), POST /cut (every
connection closed, new ones refused), POST /heal and GET / (its state): keep
it on a private address. It runs until SIGINT or SIGTERM.
`, stdout)
	listen := fs.String("listen", "", "address to accept connections on, e.g. 127.0.0.1:6432")
	to := fs.String("to", "", "upstream address(es), comma-separated, e.g. 10.0.0.7:5432")
	control := fs.String("control", "127.0.0.1:7001", "address of the control API")
	if err := parseNoArgs(fs, args, "chaos proxy takes no arguments; see --help"); err != nil {
		return err
	}
	ups := splitList(*to)
	switch {
	case *listen == "":
		return usageErr("--listen is required")
	case len(ups) == 0:
		return usageErr("--to is required")
	case *control == "":
		return usageErr("--control is required")
	}
	p, err := chaos.NewProxy(*listen, ups...)
	if err != nil {
		return err
	}
	defer p.Close()
	srv := &http.Server{Addr: *control, Handler: p.ControlHandler(), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Fprintf(stderr, "proxy %s -> %s; control http://%s\n", p.Addr(), strings.Join(ups, ","), *control)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
		_ = srv.Close()
		return nil
	case err := <-errc:
		return fmt.Errorf("chaos proxy: control %s: %w", *control, err)
	}
}
