package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
)

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("status", "Usage: hub status [--json]\n\nThe stream (messages, bytes, sequences, duplicate window), each consumer (pending,\nack floor, redelivered, paused), the outbox backlog and its oldest row, and the\ndead letters waiting per subscriber. Needs HUB_DATABASE_URL; for the stream, NATS: HUB_NATS_URL,\nor the running `hub dev` recorded in HUB_DATA_DIR, or 127.0.0.1:4222 (it says which).\nExits 1 when the stream (or its consumers) cannot be read, after printing the rest.\n", stdout)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	env, _, err := connectOps(ctx, natsOptional, stderr)
	if err != nil {
		return err
	}
	defer env.Close()
	st, err := env.ops.Status(ctx)
	if err != nil {
		return err
	}
	if env.nats.Problem != "" && !env.nats.StreamFound {
		st.StreamError = env.nats.Problem // which server, what is missing, the fix
	}
	if *asJSON {
		if err := printJSON(stdout, struct {
			ops.Status
			NATS natsTarget `json:"nats"`
		}{st, env.nats}); err != nil {
			return err
		}
		return streamDown(st)
	}
	if env.nats.StreamFound {
		env.announce(stderr)
	}
	if st.Stream != nil {
		s := st.Stream
		fmt.Fprintf(stdout, "stream %s: %d messages, %d bytes, seq %d..%d, duplicate window %s, replicas %d, subjects %s\n",
			s.Name, s.Messages, s.Bytes, s.FirstSeq, s.LastSeq, s.DuplicateWindow, s.Replicas, strings.Join(s.Subjects, " "))
		for _, f := range s.BrokenSettings {
			fmt.Fprintf(stdout, "  setting breaks delivery: %s\n", f)
		}
		if st.StreamError != "" {
			fmt.Fprintf(stdout, "  consumers: unavailable (%s)\n", st.StreamError)
		}
	} else {
		fmt.Fprintf(stdout, "stream: unavailable (%s)\n", st.StreamError)
	}
	if len(st.Consumers) > 0 {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\nSUBSCRIBER CONSUMER\tPENDING\tACK PENDING\tACK FLOOR\tREDELIVERED\tPAUSED")
		for _, c := range st.Consumers {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%t\n", c.Name, c.Pending, c.AckPending, c.AckFloor, c.Redelivered, c.Paused)
		}
		_ = tw.Flush()
	}
	if st.ScanConsumers > 0 {
		fmt.Fprintf(stdout, "\nscan consumers: %d (ephemeral readers of the stream, e.g. a replay or reconcile in progress; not subscribers)\n", st.ScanConsumers)
	}
	oldest := "-"
	if !st.OldestPending.IsZero() {
		oldest = fmt.Sprintf("%s (%.0fs ago)", st.OldestPending.UTC().Format(time.RFC3339), st.OldestAgeSec)
	}
	fmt.Fprintf(stdout, "\noutbox: %d PENDING, oldest %s\n", st.OutboxPending, oldest)
	fmt.Fprintln(stdout, "dead letters waiting:")
	for sub, n := range st.DeadLetters {
		fmt.Fprintf(stdout, "  %s: %d\n", sub, n)
	}
	return streamDown(st)
}

// streamDown is status's error (exit 1) when the stream could not be
// read: the hub is not healthy, whatever the database says, and a script
// or a probe must see it in the exit code. The output said why.
func streamDown(st ops.Status) error {
	switch {
	case st.Stream == nil:
		return errors.New("the stream is unreachable (see the stream line)")
	case st.StreamError != "":
		return errors.New("the stream's consumers could not be read: " + st.StreamError)
	}
	return nil
}
