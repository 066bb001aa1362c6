package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
)

func runReconcile(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reconcile", `Usage: hub reconcile --since T [--until T] [--republish] [--json]

Compares the archive with the stream: lists the events received in the range
that the archive marks PROCESSED but whose message the stream no longer holds
(a single-node stream can lose its last ~2 minutes of acknowledged messages to a
power failure before its fsync; retention removes old ones). With --republish,
publishes them again (see `+"`hub republish`"+`). Exits 1 when events are missing
and were not republished.
`, stdout)
	since := fs.String("since", "", "start of the range (required)")
	until := fs.String("until", "", "end of the range (default: now)")
	republish := fs.Bool("republish", false, "republish the missing events")
	asJSON := fs.Bool("json", false, "one JSON object per missing event")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *since == "" {
		return usageErr("--since is required")
	}
	env, _, err := connectOps(ctx, natsRequired, stderr)
	if err != nil {
		return err
	}
	defer env.Close()
	env.announce(stderr) // --json prints lines of missing events only
	s, u, err := parseWindow(*since, *until, env.ops.Now())
	if err != nil {
		return err
	}
	res, err := env.ops.Reconcile(ctx, s, u)
	if err != nil {
		return env.explain(err)
	}
	if *asJSON {
		if err := printJSONLines(stdout, res.Missing); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "checked %d PROCESSED events: %d missing from the stream\n", res.Checked, len(res.Missing))
		for _, m := range res.Missing {
			fmt.Fprintf(stdout, "  %s:%s  %s  seq %d  archive %s\n", m.Provider, m.EventID, m.ReceivedAt.UTC().Format(time.RFC3339), m.StreamSeq, m.ArchiveID)
		}
	}
	if len(res.Missing) == 0 {
		return nil
	}
	if !*republish {
		return fmt.Errorf("%d events missing from the stream; run again with --republish", len(res.Missing))
	}
	ids := make([]string, len(res.Missing))
	for i, m := range res.Missing {
		ids[i] = m.ArchiveID
	}
	rp, err := env.ops.Republish(ctx, ops.RepublishFilter{Since: s, Until: u, ArchiveIDs: ids})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "republished %d of %d missing events (run %s)\n", rp.Published, len(ids), rp.RunID)
	if rp.Failed > 0 {
		return fmt.Errorf("%d events could not be republished; run again", rp.Failed)
	}
	return nil
}
