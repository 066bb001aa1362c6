package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
)

func runEvents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		w := stdout // asked for; a mistake's usage goes with the message
		if len(args) == 0 {
			w = stderr
		}
		io.WriteString(w, `Usage: hub events list [flags]
       hub events show [--json] <archive-id | provider:event_id>

  list   the archive, newest first: one line per first delivery (add --status SKIPPED
         for the duplicates), with how many deliveries the event had
  show   every delivery of one event (first and duplicates), its body, signature
         headers, status, error, stream sequence, and what each subscriber did with it

Run `+"`hub events list --help`"+` for the filters.
`)
		if len(args) == 0 {
			return usageErr("events needs list or show")
		}
		return nil
	}
	switch args[0] {
	case "list":
		return runEventsList(ctx, args[1:], stdout)
	case "show":
		return runEventsShow(ctx, args[1:], stdout)
	}
	return usageErr(fmt.Sprintf("unknown events action %q: want list or show", args[0]))
}

func runEventsList(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("events list", "Usage: hub events list [--provider P] [--type T] [--status S] [--since T] [--until T] [--limit N] [--before CURSOR] [--json]\n\nNewest first. Times are durations before now (90m, 36h, 7d) or times (2026-11-30, 2026-11-30T08:00:00Z).\nA full page ends with the --before cursor of the next one (with --json, every row has its \"cursor\").\n", stdout)
	provider := fs.String("provider", "", "only this provider")
	typ := fs.String("type", "", "only this event type, e.g. subscription.created")
	status := fs.String("status", "", "PENDING, PROCESSED, SKIPPED or FAILED (default: all but SKIPPED)")
	since := fs.String("since", "", "received at or after")
	until := fs.String("until", "", "received before")
	limit := fs.Int("limit", ops.DefaultListLimit, fmt.Sprintf("at most this many rows (1..%d)", ops.MaxListLimit))
	before := fs.String("before", "", "the next page: rows listed after the row of this cursor (printed at the end of a full page)")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("events list takes no arguments; filters are flags")
	}
	env, _, err := connectOps(ctx, false)
	if err != nil {
		return err
	}
	defer env.Close()
	f := ops.EventFilter{Provider: *provider, Type: *typ, Limit: *limit, Before: *before}
	if *status != "" {
		if f.Status, err = ops.ParseStatus("status", *status); err != nil {
			return err
		}
	}
	if f.Since, f.Until, err = parseWindow(env.ops, *since, *until); err != nil {
		return err
	}
	rows, err := env.ops.ListEvents(ctx, f)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSONLines(stdout, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(stdout, "no events match")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RECEIVED\tPROVIDER\tEVENT ID\tTYPE\tSTATUS\tDELIVERIES\tSEQ\tARCHIVE ID\tERROR")
	for _, r := range rows {
		seq := "-"
		if r.StreamSeq > 0 {
			seq = fmt.Sprint(r.StreamSeq)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.ReceivedAt.UTC().Format(time.RFC3339), r.Provider, r.EventID, r.EventType, r.Status, r.Deliveries, seq, r.ArchiveID, oneLine(r.Error, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rows) == f.Limit {
		fmt.Fprintf(stdout, "\nmore may follow: add --before %s\n", rows[len(rows)-1].Cursor)
	}
	return nil
}

func runEventsShow(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("events show", "Usage: hub events show [--json] <archive-id | provider:event_id>\n", stdout)
	asJSON := fs.Bool("json", false, "print the whole record as one JSON object")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("events show needs exactly one archive id or provider:event_id")
	}
	env, _, err := connectOps(ctx, false)
	if err != nil {
		return err
	}
	defer env.Close()
	d, err := env.ops.ShowEvent(ctx, pos[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(d)
	}
	fmt.Fprintf(stdout, "event      %s:%s\ntype       %s\nsubject    %s\nfirst seen %s\nstatus     %s\norigin     %s\n",
		d.Provider, d.EventID, d.EventType, orDash(d.Subject), d.FirstSeen.UTC().Format(time.RFC3339Nano), orDash(d.Status), originText(d.Origin))
	if d.Purged {
		fmt.Fprintln(stdout, "archive    purged (the dedup row remains: retries are still answered as duplicates)")
	}
	fmt.Fprintf(stdout, "\ndeliveries (%d):\n", len(d.Deliveries))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  RECEIVED\tSTATUS\tORIGIN\tSEQ\tATTEMPTS\tARCHIVE ID\tSIGNATURE\tERROR")
	for _, dl := range d.Deliveries {
		seq := "-"
		if dl.StreamSeq > 0 {
			seq = fmt.Sprint(dl.StreamSeq)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", dl.ReceivedAt.UTC().Format(time.RFC3339Nano), dl.Status, orDash(dl.Origin), seq, dl.Attempts, dl.ArchiveID, oneLine(dl.Signature, 40), oneLine(dl.Error, 60))
	}
	_ = tw.Flush()
	fmt.Fprintf(stdout, "\nsubscribers:\n")
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SUBSCRIBER\tOUTCOME\tAT\tSEQ\tDEAD LETTER\tERROR")
	for _, s := range d.Subscribers {
		at, seq, dl := "-", "-", "-"
		if !s.At.IsZero() {
			at = s.At.UTC().Format(time.RFC3339)
		}
		if s.StreamSeq > 0 {
			seq = fmt.Sprint(s.StreamSeq)
		}
		if s.DeadLetter > 0 {
			dl = fmt.Sprint(s.DeadLetter)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", s.Subscriber, s.Outcome, at, seq, dl, oneLine(s.Error, 60))
	}
	_ = tw.Flush()
	switch {
	case d.Payload != nil:
		fmt.Fprintf(stdout, "\nbody (exact bytes of the first delivery):\n%s\n", d.Payload)
	case d.Body != "":
		fmt.Fprintf(stdout, "\nbody (exact bytes of the first delivery):\n%s\n", d.Body)
	}
	return nil
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("status", "Usage: hub status [--json]\n\nThe stream (messages, bytes, sequences, duplicate window), each consumer (pending,\nack floor, redelivered, paused), the outbox backlog and its oldest row, and the\ndead letters waiting per subscriber. Needs HUB_DATABASE_URL; HUB_NATS_URL for the stream.\n", stdout)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	env, _, err := connectOps(ctx, false)
	if err != nil {
		return err
	}
	defer env.Close()
	st, err := env.ops.Status(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(st)
	}
	if st.Stream != nil {
		s := st.Stream
		fmt.Fprintf(stdout, "stream %s: %d messages, %d bytes, seq %d..%d, duplicate window %s, replicas %d, subjects %s\n",
			s.Name, s.Messages, s.Bytes, s.FirstSeq, s.LastSeq, s.DuplicateWindow, s.Replicas, strings.Join(s.Subjects, " "))
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
	return nil
}

func runPurge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("purge", fmt.Sprintf(`Usage: hub purge --older-than AGE [--include-failed] [--yes] [--batch N] [--json]

Deletes archive rows (one per delivery) received more than AGE ago (e.g. 90d),
in batches. Without --yes it is a dry run: it counts what it would delete.

  - AGE is at least %s (or the stream's duplicate window, if longer): the archive
    is the only source for repairing a stream that lost messages (hub reconcile
    --republish) and for the last day's forensics.
  - PENDING rows (events not yet on the stream, in the outbox) are never deleted.
  - FAILED rows (never published: the archive is their only copy) are kept
    unless --include-failed.
  - The dedup rows (one per event, kept forever) are never touched: a
    provider's retry of a purged event is still answered as a duplicate.
`, ops.MinPurgeAge), stdout)
	olderThan := fs.String("older-than", "", "age of the rows to delete: 90d, 12w, 2160h (required)")
	yes := fs.Bool("yes", false, "delete; without it the purge is a dry run")
	dryRun := fs.Bool("dry-run", false, "count the rows without deleting them (the default; contradicts --yes)")
	includeFailed := fs.Bool("include-failed", false, "delete FAILED rows too")
	batch := fs.Int("batch", ops.DefaultPurgeBatch, fmt.Sprintf("rows per delete transaction (1..%d)", ops.MaxPurgeBatch))
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("purge takes no arguments; did you mean --older-than " + fs.Arg(0) + "?")
	}
	if *olderThan == "" {
		return usageErr("--older-than is required (e.g. --older-than 90d)")
	}
	if *yes && *dryRun {
		return usageErr("--yes and --dry-run contradict each other")
	}
	age, err := ops.ParseAge(*olderThan)
	if err != nil {
		return usageErr("--older-than: " + err.Error())
	}
	env, _, err := connectOps(ctx, false)
	if err != nil {
		return err
	}
	defer env.Close()
	res, err := env.ops.Purge(ctx, ops.PurgeRequest{OlderThan: age, BatchSize: *batch, DryRun: !*yes, IncludeFailed: *includeFailed})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	verb := "deleted"
	if res.DryRun {
		verb = "dry run: would delete"
	}
	fmt.Fprintf(stdout, "%s %d archive rows received before %s (dedup rows kept", verb, res.Rows, res.Cutoff.UTC().Format(time.RFC3339))
	if res.PendingKept > 0 {
		fmt.Fprintf(stdout, "; %d PENDING rows kept: the outbox, check `hub status`", res.PendingKept)
	}
	if res.FailedKept > 0 {
		fmt.Fprintf(stdout, "; %d FAILED rows kept, add --include-failed to delete them", res.FailedKept)
	}
	fmt.Fprintln(stdout, ")")
	if res.DryRun {
		fmt.Fprintln(stdout, "nothing deleted; run again with --yes to delete")
	}
	return nil
}

func runRepublish(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("republish", `Usage: hub republish [--provider P] [--status S] [--since T] [--until T] [--event provider:event_id] [--dry-run] [--json]

Publishes archived events back into the stream: for events the stream no longer
holds (retention, a lost stream). Each copy carries the exact body and the hub's
headers under the message id <provider>:<event_id>:republish:<run>, which the
duplicate window cannot drop. Every subscriber receives it; their idempotency
skips what they already processed, so side effects stay single.
`, stdout)
	provider := fs.String("provider", "", "only this provider")
	status := fs.String("status", "PROCESSED", "PROCESSED, the only status that can be republished (FAILED events cannot form a subject)")
	since := fs.String("since", "", "received at or after (90m, 7d, 2026-11-30, RFC 3339)")
	until := fs.String("until", "", "received before")
	event := fs.String("event", "", "just this event")
	dryRun := fs.Bool("dry-run", false, "count what would be published")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("republish takes no arguments; filters are flags")
	}
	env, _, err := connectOps(ctx, !*dryRun)
	if err != nil {
		return err
	}
	defer env.Close()
	f := ops.RepublishFilter{Provider: *provider, Event: *event, DryRun: *dryRun}
	if f.Status, err = ops.ParseStatus("status", *status); err != nil {
		return err
	}
	if f.Since, f.Until, err = parseWindow(env.ops, *since, *until); err != nil {
		return err
	}
	res, err := env.ops.Republish(ctx, f)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	if res.DryRun {
		fmt.Fprintf(stdout, "would republish %d events\n", res.Matched)
		return nil
	}
	fmt.Fprintf(stdout, "republished %d of %d events (stream seq %d..%d, run %s); %d failed\n", res.Published, res.Matched, res.FirstSeq, res.LastSeq, res.RunID, res.Failed)
	if res.Failed > 0 {
		return fmt.Errorf("%d events could not be republished; run the same command again (copies already published are skipped by subscribers)", res.Failed)
	}
	return nil
}

func runDLQ(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		w := stdout // asked for; a mistake's usage goes with the message
		if len(args) == 0 {
			w = stderr
		}
		io.WriteString(w, `Usage: hub dlq list --subscriber NAME [--json]
       hub dlq redrive --subscriber NAME (--id ID | --all) [--json]

  list     the subscriber's dead letters: messages its handler failed on too often
  redrive  ask the running subscriber to process them again (after a fix); an event it
           processed meanwhile is skipped
`)
		if len(args) == 0 {
			return usageErr("dlq needs list or redrive")
		}
		return nil
	}
	action := args[0]
	fs := newFlags("dlq "+action, "Usage: hub dlq "+action+" --subscriber NAME ...\n", stdout)
	sub := fs.String("subscriber", "", "the subscriber (credits, email, downgrade, ...)")
	id := fs.Int64("id", 0, "redrive: this dead letter")
	all := fs.Bool("all", false, "redrive: every dead letter not yet redriven")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fmt.Sprintf("dlq %s takes no arguments (%q): the subscriber and the dead letter are flags", action, fs.Arg(0)))
	}
	if action != "list" && action != "redrive" {
		return usageErr(fmt.Sprintf("unknown dlq action %q: want list or redrive", action))
	}
	if *sub == "" {
		return usageErr("--subscriber is required")
	}
	env, _, err := connectOps(ctx, false)
	if err != nil {
		return err
	}
	defer env.Close()
	switch action {
	case "list":
		dls, err := env.ops.DeadLetters(ctx, *sub)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSONLines(stdout, dls)
		}
		if len(dls) == 0 {
			fmt.Fprintf(stdout, "%s has no dead letters\n", *sub)
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tCREATED\tEVENT\tSUBJECT\tATTEMPTS\tSTATE\tERROR")
		for _, r := range dls {
			state := "waiting"
			switch {
			case r.RedrivenAt != nil:
				state = "redriven"
			case r.RedriveRequestedAt != nil:
				state = "redrive requested"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s:%s\t%s\t%d\t%s\t%s\n", r.ID, r.CreatedAt.UTC().Format(time.RFC3339), r.Provider, r.EventID, r.Subject, r.Attempts, state, oneLine(r.Error, 70))
		}
		return tw.Flush()
	default: // redrive
		res, err := env.ops.Redrive(ctx, ops.RedriveRequest{Subscriber: *sub, ID: *id, All: *all})
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(res)
		}
		fmt.Fprintf(stdout, "requested a redrive of %d dead letter(s) of %s; the running subscriber picks them up within seconds (see `hub dlq list --subscriber %s`)\n", res.Requested, *sub, *sub)
		return nil
	}
}

// originText explains an event's origin.
func originText(o string) string {
	switch o {
	case "api":
		return "api (ingested by a backfill from the provider's API: its webhook never arrived)"
	case "":
		return "-"
	}
	return o
}

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
	env, _, err := connectOps(ctx, true)
	if err != nil {
		return err
	}
	defer env.Close()
	s, u, err := parseWindow(env.ops, *since, *until)
	if err != nil {
		return err
	}
	res, err := env.ops.Reconcile(ctx, s, u)
	if err != nil {
		return err
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
