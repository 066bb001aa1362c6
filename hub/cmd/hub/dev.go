package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/migrations"
)

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newEnvFlags("dev", devUsage, stdout)
	noSubscribers := fs.Bool("no-subscribers", false, "do not run the credits, email and downgrade subscribers (nor the destinations) in-process")
	destFile := fs.String("destinations", defaultDestinationsFile(), "the destinations file to run when it exists (default: HUB_DESTINATIONS_FILE, else destinations.yaml)")
	if err := parseNoArgs(fs, args, "dev takes no arguments"); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	// One `hub dev` per data directory: refused before anything is opened.
	unlock, err := lockDevDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	var public bool
	cfg.HTTPAddr, public = devListenAddr(cfg.HTTPAddr, envSet("HTTP_ADDR"))
	var dests *devDestinations
	if !*noSubscribers {
		if dests, err = loadDevDestinations(*destFile); err != nil {
			return err
		}
	}
	if !envSet("LOG_FORMAT") {
		cfg.LogFormat = "text"
	}
	log := newLogger(cfg, stderr)

	devToken := cfg.AdminToken == ""
	if err := devPrepare(ctx, &cfg, stdout, log); err != nil {
		return err
	}
	svc, err := service.New(ctx, cfg, service.Deps{Logger: log})
	if err != nil {
		return err
	}
	// Shutdown order: the subscribers finish and ack first, then the hub
	// (which owns the embedded NATS server) drains and stops.
	subsCtx, stopSubs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSubs()
	waitSubs := func() {}
	if !*noSubscribers {
		if waitSubs, err = runDevSubscribers(subsCtx, cfg.DatabaseURL, svc.NATSURL(), cfg.Stream, dests, log); err != nil {
			return err
		}
		if dests != nil {
			defer reloadOnSIGHUP(dests.reload)()
		}
	}
	consoleAddr := svc.Addr()
	if a := svc.AdminAddr(); a != nil {
		consoleAddr = a
	}
	// The record and the banner come once the hub is ready (its stream
	// exists): a command run as soon as they appear finds what they say.
	hubCtx, stopHub := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHub()
	done := make(chan error, 1)
	go func() { done <- svc.Run(hubCtx) }()
	if err := waitReady(ctx, "http://"+service.DisplayAddr(svc.Addr().String())+"/readyz", done, log); err != nil {
		stopSubs()
		waitSubs()
		if ctx.Err() != nil { // interrupted while starting: stop the hub
			stopHub()
			return <-done
		}
		return err
	}
	// The other commands (hub status, replay, ...) find this run's NATS
	// server through this record while it runs.
	removeRecord, err := writeDevRecord(cfg.DataDir, devRecord{
		PID:         os.Getpid(),
		NATSURL:     withoutUserinfo(svc.NATSURL()),
		Stream:      cfg.Stream,
		WebhooksURL: "http://" + service.DisplayAddr(svc.Addr().String()) + "/webhooks/",
		ConsoleURL:  "http://" + service.DisplayAddr(consoleAddr.String()) + "/console/",
		StartedAt:   time.Now().UTC(),
	})
	if err != nil {
		return err
	}
	defer removeRecord()
	printDevBanner(stdout, cfg, svc, consoleAddr.String(), devToken, public, dests, *noSubscribers, *destFile)
	select {
	case err := <-done:
		stopSubs()
		waitSubs()
		return err
	case <-ctx.Done():
	}
	stopSubs()
	waitSubs()
	stopHub()
	return <-done
}

// devUsage is the help of `hub dev`.
const devUsage = `Usage: hub dev [--no-subscribers] [--destinations FILE]

The quick start: runs the whole hub on embedded defaults.
  - creates the database named in HUB_DATABASE_URL if it is missing, and migrates it;
  - listens on 127.0.0.1:8080 (loopback only: its development secrets are public);
    set HUB_HTTP_ADDR to listen elsewhere;
  - refuses to start while another hub dev runs with the same HUB_DATA_DIR
    (it names its pid);
  - with HUB_NATS_URL empty, embeds a JetStream server on 127.0.0.1:4222
    (or a free port when 4222 is taken; the URL is logged), store in HUB_DATA_DIR;
  - records its NATS URL in HUB_DATA_DIR/dev.json while it runs, so that the other
    commands (status, replay, reconcile, republish, dlq) find it without
    HUB_NATS_URL (removed on exit; a record left by a killed run is ignored);
  - uses public development secrets for providers without one (printed);
  - logs as text unless HUB_LOG_FORMAT is set;
  - runs the credits, email and downgrade subscribers in-process (emails go to the
    log unless EMAIL_SMTP_ADDR names an SMTP server), so an event flows from the
    POST to its side effects;
  - runs the destinations of a destinations file (--destinations, default
    HUB_DESTINATIONS_FILE or ./destinations.yaml) when it exists: each event of their
    subjects is POSTed to their URL, signed (docs/destinations.md); SIGHUP re-reads it;
  - opens the web console at /console/ (a fresh admin token is made for the run
    when HUB_ADMIN_TOKEN is not set; the URL and the token are printed);
  - prints a command that sends a first signed event.
Stop it with Ctrl-C.

Environment:
`

// devPrepare creates and migrates the database, says which providers use
// the public development secrets, and makes an admin token for the run
// when none is set.
func devPrepare(ctx context.Context, cfg *service.Config, stdout io.Writer, log *slog.Logger) error {
	created, err := service.CreateDatabase(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	if created {
		log.Info("created database", "url", cfg.DatabaseURL)
	}
	if err := migrateUp(ctx, cfg.DatabaseURL, stdout); err != nil {
		return err
	}
	for _, name := range cfg.WithDevSecrets() {
		secrets := cfg.ProviderSecrets()[name]
		fmt.Fprintf(stdout, "dev: HUB_%s_SECRETS not set; using the public development secret %s\n", strings.ToUpper(name), secrets[0])
	}
	if cfg.AdminToken == "" {
		// The console and /admin/ need a token: one for this run only.
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("make a development admin token: %w", err)
		}
		cfg.AdminToken = hex.EncodeToString(b[:])
	}
	return nil
}

// reloadOnSIGHUP asks for a reload on reload at every SIGHUP (one pending
// at most) until the returned function is called.
func reloadOnSIGHUP(reload chan<- struct{}) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			default:
			}
		}
	}()
	return func() { signal.Stop(hup) }
}

// devReadyTimeout bounds how long `hub dev` waits for its hub's /readyz
// before it prints the banner anyway (with a warning).
const devReadyTimeout = 15 * time.Second

// waitReady polls readyz until it answers 200, the hub's Run ends (its
// error is returned), ctx ends, or devReadyTimeout passes (then it warns
// and returns nil: the hub keeps trying in the background).
func waitReady(ctx context.Context, readyz string, done <-chan error, log *slog.Logger) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(devReadyTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if resp, err := client.Get(readyz); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			log.Warn("the hub is not ready yet; it keeps trying in the background", "readyz", readyz)
			return nil
		}
		select {
		case err := <-done:
			if err == nil {
				err = errors.New("the hub stopped before it was ready")
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func migrateUp(ctx context.Context, url string, stdout io.Writer) error {
	pool, err := openDatabase(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	rs, err := migrations.Up(ctx, pool)
	for _, r := range rs {
		fmt.Fprintf(stdout, "dev: applied migration %d %s\n", r.Version, r.Name)
	}
	return err
}

// printDevBanner prints what `hub dev` runs, where, and how to send a
// first event.
func printDevBanner(stdout io.Writer, cfg service.Config, svc *service.Service, consoleAddr string, devToken, public bool,
	dests *devDestinations, noSubscribers bool, destFile string) {
	token := "the value of HUB_ADMIN_TOKEN"
	if devToken {
		token = cfg.AdminToken + " (made for this run; set HUB_ADMIN_TOKEN to choose one)"
	}
	fmt.Fprintf(stdout, `
hookhub is running: webhooks at http://%[1]s/webhooks/{%[3]s}, NATS at %[2]s
Web console: http://%[4]s/console/ (sign in with %[5]s)
Other hub commands (status, replay, dlq, ...) find this NATS server through %[6]s.
Send a first signed event from another shell:

    go run ./hub/cmd/hub send paddle subscription.created
    go run ./hub/cmd/hub send clerk user.created --repeat 3

`, service.DisplayAddr(svc.Addr().String()), withoutUserinfo(svc.NATSURL()), strings.Join(svc.Providers(), ","),
		service.DisplayAddr(consoleAddr), token, devRecordPath(cfg.DataDir))
	if public {
		fmt.Fprintf(stdout, "Warning: HUB_HTTP_ADDR=%s reaches beyond this machine, and the development secrets above are public.\n\n", cfg.HTTPAddr)
	} else {
		fmt.Fprintf(stdout, "Listening on this machine only (loopback); set HUB_HTTP_ADDR=:8080 to accept other machines' requests.\n\n")
	}
	switch {
	case dests != nil:
		fmt.Fprintf(stdout, "Destinations from %s: %s (SIGHUP re-reads the file).\n\n", dests.file, strings.Join(dests.names, ", "))
	case !noSubscribers:
		fmt.Fprintf(stdout, "No destinations file (%s): see docs/destinations.md to POST events to your own endpoint.\n\n", destFile)
	}
}
