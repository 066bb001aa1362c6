package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/relay"
)

func runReconcile(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reconcile", `Usage: hub reconcile --since T [--until T] [--republish] [--json]

Compares the archive with the stream: lists the events received in the range
that the archive marks PROCESSED but whose message the stream no longer holds
(a single-node stream can lose its last ~2 minutes of acknowledged messages to a
power failure before its fsync; retention removes old ones), and those it holds
where no subscriber looks: under another subject than <provider>.<event_type>
(a subject transform on the stream), or on a subject no subscriber's durable
consumer matches (counted per subject). It also names the stream's settings
that divert or refuse publishes. With --republish, publishes the missing and
misplaced events again (see `+"`hub republish`"+`), once those settings are fixed.
Exits 1 when events are missing or misplaced and were not republished, or a
setting breaks delivery.

--json prints one JSON object a line: each missing event; each misplaced event
(with "subject" and "want_subject"); each unwatched subject
({"unwatched_subject","events"}); each broken setting ({"setting","problem","fix"}).
`, stdout)
	since := fs.String("since", "", "start of the range (required)")
	until := fs.String("until", "", "end of the range (default: now)")
	republish := fs.Bool("republish", false, "republish the missing events")
	asJSON := fs.Bool("json", false, "one JSON object a line per missing or misplaced event, unwatched subject and broken setting")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *since == "" {
		return usageErr("--since is required")
	}
	s, u, err := parseWindow(*since, *until, time.Now())
	if err != nil {
		return err
	}
	env, _, err := connectOps(ctx, natsRequired, stderr)
	if err != nil {
		return err
	}
	defer env.Close()
	res, err := env.ops.Reconcile(ctx, s, u)
	env.announceUnlessMistake(stderr, err) // --json prints lines of missing events only
	if err != nil {
		return env.explain(err)
	}
	if *asJSON {
		if err := printReconcileJSON(stdout, res); err != nil {
			return err
		}
	} else {
		printReconcile(stdout, res)
	}
	if len(res.StreamFaults) > 0 {
		return fmt.Errorf("the stream's settings break delivery (%s): fix them first (`hub serve` logs how; /readyz says misconfigured); republishing now would meet the same fate", strings.Join(relay.SettingWords(res.StreamFaults), ", "))
	}
	if len(res.Missing)+len(res.Astray) == 0 {
		return nil
	}
	if !*republish {
		return fmt.Errorf("%d events missing from the stream and %d stored under another subject; run again with --republish", len(res.Missing), len(res.Astray))
	}
	ids := make([]string, 0, len(res.Missing)+len(res.Astray))
	for _, m := range res.Missing {
		ids = append(ids, m.ArchiveID)
	}
	for _, m := range res.Astray {
		ids = append(ids, m.ArchiveID)
	}
	rp, err := env.ops.Republish(ctx, ops.RepublishFilter{Since: s, Until: u, ArchiveIDs: ids})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "republished %d of %d missing or misplaced events (run %s)\n", rp.Published, len(ids), rp.RunID)
	if rp.Failed > 0 {
		return fmt.Errorf("%d events could not be republished; run again", rp.Failed)
	}
	return nil
}

func printReconcile(w io.Writer, res ops.ReconcileResult) {
	fmt.Fprintf(w, "checked %d PROCESSED events: %d missing from the stream, %d stored under another subject\n",
		res.Checked, len(res.Missing), len(res.Astray))
	for _, m := range res.Missing {
		fmt.Fprintf(w, "  %s:%s  %s  seq %d  archive %s\n", m.Provider, m.EventID, m.ReceivedAt.UTC().Format(time.RFC3339), m.StreamSeq, m.ArchiveID)
	}
	if len(res.Astray) > 0 {
		fmt.Fprintln(w, "stored under another subject (no subscriber of their type sees them):")
		for _, m := range res.Astray {
			fmt.Fprintf(w, "  %s:%s  %s  on %s, not %s  seq %d  archive %s\n", m.Provider, m.EventID, m.ReceivedAt.UTC().Format(time.RFC3339),
				m.Subject, m.WantSubject, m.StreamSeq, m.ArchiveID)
		}
	}
	if len(res.Unwatched) > 0 {
		fmt.Fprintf(w, "on subjects none of the %d subscribers' durable consumers matches:\n", res.Durables)
		for _, u := range res.Unwatched {
			fmt.Fprintf(w, "  %s  %d events\n", u.Subject, u.Events)
		}
	}
	if len(res.StreamFaults) > 0 {
		fmt.Fprintln(w, "stream settings that break delivery:")
		for _, f := range res.StreamFaults {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
}

func printReconcileJSON(w io.Writer, res ops.ReconcileResult) error {
	if err := printJSONLines(w, res.Missing); err != nil {
		return err
	}
	if err := printJSONLines(w, res.Astray); err != nil {
		return err
	}
	if err := printJSONLines(w, res.Unwatched); err != nil {
		return err
	}
	return printJSONLines(w, res.StreamFaults)
}
