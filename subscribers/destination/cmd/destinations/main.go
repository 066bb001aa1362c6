// Command destinations delivers the hub's events to the HTTP endpoints
// declared in a destinations file, signed with Standard Webhooks: one
// durable subscriber per destination, all in this process. It takes no
// arguments but `check` (validate the file and exit); `destinations --help`
// lists its DESTINATIONS_* variables.
// SIGHUP re-reads the file (see docs/destinations.md); SIGTERM and SIGINT
// stop it gracefully.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/service"
)

// prefix is the variables' prefix.
const prefix = "DESTINATIONS"

// Config is the process's configuration: DESTINATIONS_* variables.
type Config struct {
	service.Process
	DatabaseMaxConns int32         `split_words:"true" default:"32" desc:"Postgres connection pool size: at least the number of destinations + 2 (a delivery holds none while it POSTs; each destination records its deliveries in batches)"`
	File             string        `default:"destinations.yaml" desc:"The destinations file (YAML or JSON); SIGHUP re-reads it"`
	HTTPAddr         string        `split_words:"true" default:":8085" desc:"Address of /metrics, /healthz and /readyz (each destination's readiness)"`
	AttemptRetention time.Duration `split_words:"true" default:"168h" desc:"How long delivery attempts are kept (hub events show, the console); at least every destination's retry_for"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	var cfg Config
	check := false
	for _, a := range args {
		switch a {
		case "check":
			check = true
		case "-h", "-help", "--help", "help":
			fmt.Fprintf(stdout, "Usage: destinations [check]\n\nDelivers the hub's events to the HTTP endpoints of a destinations file. It is configured by these environment variables:\n\n")
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  VARIABLE\tDEFAULT\tDESCRIPTION")
			_ = envconfig.Usagef(prefix, &cfg, tw, "{{range .}}  {{usage_key .}}\t{{usage_default .}}\t{{usage_description .}}\n{{end}}")
			_ = tw.Flush()
			fmt.Fprintf(stdout, "\nThe secrets are read from the variables the file names (secret_env). See docs/destinations.md.\n")
			fmt.Fprintf(stdout, "\n`destinations check` validates the variables and the file (with its secrets), and the names against the database's schemas when it is reachable, lists what each destination will receive and exits: 0 when valid, 2 otherwise.\n")
			return 0
		default:
			fmt.Fprintf(stderr, "destinations: unexpected argument %q (it is configured by the environment; see --help)\n", a)
			return 2
		}
	}
	if err := load(&cfg); err != nil {
		fmt.Fprintf(stderr, "destinations: configuration: %v\n", err)
		return 2
	}
	loadFile := func() ([]destination.Destination, error) { return destination.Load(cfg.File, os.LookupEnv) }
	set, err := loadFile()
	if err != nil {
		fmt.Fprintf(stderr, "destinations: %v\n", err)
		return 2
	}
	if err := checkSet(cfg, set); err != nil {
		fmt.Fprintf(stderr, "destinations: configuration: %v\n", err)
		return 2
	}
	if check {
		if err := checkNames(context.Background(), cfg.DatabaseURL, set, stderr); err != nil {
			fmt.Fprintf(stderr, "destinations: %s: %v\n", cfg.File, err)
			return 2
		}
		fmt.Fprintf(stdout, "%s: %d destinations, valid\n", cfg.File, len(set))
		for _, d := range set {
			fmt.Fprintf(stdout, "  %s\n", d.Receives())
		}
		return 0
	}
	log := cfg.Logger(stderr).With("service", "destinations")

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal kills the process at once
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := make(chan struct{}, 1)
	go func() {
		for range hup {
			log.Info("SIGHUP: reloading the destinations file", "file", cfg.File)
			select {
			case reload <- struct{}{}:
			default:
			}
		}
	}()
	if err := serve(ctx, cfg, loadFile, reload, log); err != nil {
		log.Error("exiting", "error", err)
		return 1
	}
	log.Info("exited cleanly")
	return 0
}

// load reads and checks the variables, each error naming its variable.
func load(cfg *Config) error {
	if err := envconfig.Process(prefix, cfg); err != nil {
		return err
	}
	errs := []error{cfg.Process.Validate(prefix)}
	if cfg.File == "" {
		errs = append(errs, errors.New(prefix+"_FILE must not be empty"))
	}
	if cfg.HTTPAddr == "" {
		errs = append(errs, errors.New(prefix+"_HTTP_ADDR must not be empty"))
	}
	if cfg.AttemptRetention < time.Hour {
		errs = append(errs, fmt.Errorf("%s_ATTEMPT_RETENTION must be at least 1h, got %s", prefix, cfg.AttemptRetention))
	}
	return errors.Join(errs...)
}

// checkSet checks the set against the variables: the attempt retention
// must cover every horizon (counted from a first attempt, which must
// still be on record), and the pool must leave each destination a
// connection for its batch of deliveries being recorded, and a few for
// the workers' short reads.
func checkSet(cfg Config, set []destination.Destination) error {
	var errs []error
	for _, d := range set {
		if time.Duration(d.RetryFor) > cfg.AttemptRetention {
			errs = append(errs, fmt.Errorf("%s_ATTEMPT_RETENTION (%s) is shorter than destination %q's retry_for (%s)", prefix, cfg.AttemptRetention, d.Name, time.Duration(d.RetryFor)))
		}
	}
	if need := len(set) + 2; int(cfg.DatabaseMaxConns) < need {
		errs = append(errs, fmt.Errorf("%s_DATABASE_MAX_CONNS (%d) must be at least the number of destinations + 2 (%d): each records its deliveries in batches on a connection of its own", prefix, cfg.DatabaseMaxConns, need))
	}
	return errors.Join(errs...)
}

func serve(ctx context.Context, cfg Config, loadFile func() ([]destination.Destination, error), reload <-chan struct{}, log *slog.Logger) error {
	conns, err := service.Open(ctx, "destinations", cfg.Process, cfg.DatabaseMaxConns, log)
	if err != nil || conns == nil {
		return err
	}
	defer conns.Close()
	svc := destination.NewService(destination.Options{
		Pool:             conns.Pool,
		JetStream:        conns.JetStream,
		Stream:           cfg.Stream,
		Metrics:          destination.NewMetrics(conns.Registry),
		Registerer:       conns.Registry,
		Logger:           log,
		TracerProvider:   conns.TracerProvider,
		AttemptRetention: cfg.AttemptRetention,
		ShutdownTimeout:  cfg.ShutdownTimeout,
	}, func() ([]destination.Destination, error) {
		set, err := loadFile()
		if err == nil {
			err = checkSet(cfg, set)
		}
		return set, err
	})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(conns.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := svc.Healthy(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		// Each destination's readiness: 503 while one is not ready, with
		// its reason (hookhub_destination_ready says the same).
		rs := svc.Readiness()
		status := http.StatusOK
		for _, r := range rs {
			if !r.Ready {
				status = http.StatusServiceUnavailable
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"destinations": rs})
	})
	stopHTTP, err := service.Serve(cfg.HTTPAddr, mux, log)
	if err != nil {
		return fmt.Errorf("%s_HTTP_ADDR: %w", prefix, err)
	}
	defer stopHTTP()
	return svc.Run(ctx, reload)
}
