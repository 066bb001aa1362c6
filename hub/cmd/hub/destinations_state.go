package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// maxReasonBytes is the longest --reason the destination's state keeps.
const maxReasonBytes = 256

// stateChange is what pause and resume print with --json.
type stateChange struct {
	Name           string    `json:"name"`
	State          string    `json:"state"`
	Changed        bool      `json:"changed"`
	PreviousState  string    `json:"previous_state"`
	PreviousReason string    `json:"previous_reason,omitempty"`
	PreviousSince  time.Time `json:"previous_since,omitzero"`
}

// destinationsSetState is the run of destinations pause or resume, as action says.
func destinationsSetState(action string) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, stdout, _ io.Writer) error {
		return runDestinationsSetState(ctx, action, args, stdout)
	}
}

func runDestinationsSetState(ctx context.Context, action string, args []string, stdout io.Writer) error {
	usage := `Usage: hub destinations pause NAME [--reason TEXT] [--json]

Pauses the destination: its running process takes no new event within seconds (it reads
its state every ` + destination.StatePollInterval.String() + `), the attempts under way finish, and the events wait in
the stream (its backlog grows) until ` + "`hub destinations resume NAME`" + `. Every replica obeys.
`
	want, defaultReason := destination.StatePaused, "paused with `hub destinations pause`"
	if action == "resume" {
		usage = `Usage: hub destinations resume NAME [--reason TEXT] [--json]

Makes the destination active again: after a pause, or after its endpoint answered 410 Gone
(the destination disabled itself). It prints the state it was in and why. The running
process delivers the waiting events within seconds (it reads its state every ` + destination.StatePollInterval.String() + `).
`
		want, defaultReason = destination.StateActive, "resumed with `hub destinations resume`"
	}
	fs := newFlags("destinations "+action, usage, stdout)
	reason := fs.String("reason", "", fmt.Sprintf("why (shown by status; at most %d bytes)", maxReasonBytes))
	asJSON := fs.Bool("json", false, "print one JSON object")
	name, err := destinationArg(fs, args, action)
	if err != nil {
		return err
	}
	if len(*reason) > maxReasonBytes {
		return usageErr(fmt.Sprintf("--reason: at most %d bytes, got %d", maxReasonBytes, len(*reason)))
	}
	if *reason == "" {
		*reason = defaultReason
		if u := os.Getenv("USER"); subscriber.ValidName(u) {
			*reason += " by " + u
		}
	}
	pool, st, o, err := openDestination(ctx, name)
	if err != nil {
		return err
	}
	defer pool.Close()
	set, err := o.SetDestinationState(ctx, name, want, *reason)
	if err != nil {
		return err
	}
	changed := set.Changed
	res := stateChange{Name: name, State: string(want), Changed: changed, PreviousState: string(st.State),
		PreviousReason: st.Reason, PreviousSince: st.ChangedAt}
	if !changed {
		// Another operator may have set it meanwhile: say what it is now.
		if s, r, err := destination.GetState(ctx, pool, name); err == nil && s != want {
			return fmt.Errorf("%s is %s now (%s): changed meanwhile, not by this command", name, s, r)
		}
	}
	if *asJSON {
		return printJSON(stdout, res)
	}
	was := res.PreviousState
	if !res.PreviousSince.IsZero() {
		was += " since " + res.PreviousSince.UTC().Format(time.RFC3339)
	}
	if res.PreviousReason != "" {
		was += ": " + cleanLine(res.PreviousReason, 300)
	}
	switch {
	case !changed:
		fmt.Fprintf(stdout, "%s is already %s (%s)\n", name, want, was)
	case want == destination.StatePaused:
		fmt.Fprintf(stdout, "paused %s (was %s)\nit takes no new event within %s; events wait in the stream until `hub destinations resume %s`\n",
			name, was, destination.StatePollInterval, name)
	default:
		fmt.Fprintf(stdout, "resumed %s (was %s)\nit delivers the waiting events within %s (see `hub destinations status %s`)\n",
			name, was, destination.StatePollInterval, name)
	}
	return nil
}

// connectDatabase connects to the hub's database only (pause and resume
// need no NATS).
func connectDatabase(ctx context.Context) (*pgxpool.Pool, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	pool, err := openDatabase(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to the hub's database (HUB_DATABASE_URL): %w", err)
	}
	return pool, nil
}

// retryNow is what retry-now prints with --json.
type retryNow struct {
	Name string `json:"name"`
	// Waiting is how many events waited for a later retry and are due now.
	Waiting int64 `json:"waiting"`
	// Events is how many events were parked (due now or later).
	Events int64 `json:"events"`
}

func runDestinationsRetryNow(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("destinations retry-now", `Usage: hub destinations retry-now NAME [--json]

Ends the wait of the destination's waiting events (parked for a retry: a backoff, or a
receiver's Retry-After, capped by max_retry_after): its running process sends them within
`+destination.ParkPollInterval.String()+`, at its rate limit and concurrency (an ordered destination in order). An
event refused again waits again. Recorded in the audit trail.
`, stdout)
	asJSON := fs.Bool("json", false, "print one JSON object")
	name, err := destinationArg(fs, args, "retry-now")
	if err != nil {
		return err
	}
	pool, st, o, err := openDestination(ctx, name)
	if err != nil {
		return err
	}
	defer pool.Close()
	r, err := o.RetryDestinationNow(ctx, name)
	if err != nil {
		return err
	}
	res := retryNow{Name: name, Waiting: r.Waiting, Events: st.Waiting.Events}
	if *asJSON {
		return printJSON(stdout, res)
	}
	if res.Waiting == 0 {
		fmt.Fprintf(stdout, "%s: no event waits for a later retry (%d parked)\n", name, res.Events)
		return nil
	}
	fmt.Fprintf(stdout, "%s: %d waiting event(s) due now\nthe running destination sends them within %s (see `hub destinations status %s`)\n",
		name, res.Waiting, destination.ParkPollInterval, name)
	if st.State != destination.StateActive {
		fmt.Fprintf(stdout, "it is %s: they are sent once it is resumed\n", st.State)
	}
	return nil
}

// openDestination connects to the database and reads the status of the
// destination name, for a command that changes it through hub/ops (which
// records the change in the audit trail). The caller closes the pool.
func openDestination(ctx context.Context, name string) (*pgxpool.Pool, destination.Status, *ops.Ops, error) {
	pool, err := connectDatabase(ctx)
	if err != nil {
		return nil, destination.Status{}, nil, err
	}
	st, err := destination.GetStatus(ctx, pool, name)
	if errors.Is(err, destination.ErrUnknownDestination) {
		err = unknownDestination(ctx, pool, name)
	}
	if err != nil {
		pool.Close()
		return nil, destination.Status{}, nil, err
	}
	return pool, st, ops.New(ops.Config{Archive: store.New(pool), Subscribers: pool}), nil
}
