package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
)

func runPurge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("purge", fmt.Sprintf(`Usage: hub purge --older-than AGE [--include-failed] [--yes] [--batch N] [--json]

Deletes archive rows (one per delivery) received more than AGE ago (e.g. 90d),
in batches, each followed by a pause as long as it took (at most 5 s), so that
ingest beside it keeps its latency. Without --yes it is a dry run: it counts
what it would delete.

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
	fs.Bool("include-failed", false, "delete FAILED rows too")
	fs.Int("batch", ops.DefaultPurgeBatch, fmt.Sprintf("rows per delete transaction (1..%d)", ops.MaxPurgeBatch))
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
	v := flagValues(fs)
	v.Set("dry_run", strconv.FormatBool(!*yes))
	req, err := ops.DecodePurge(v)
	if err != nil {
		return flagErr(err)
	}
	res, err := opsCall(ctx, natsOptional, stderr, func(o *ops.Ops) (ops.PurgeResult, error) { return o.Purge(ctx, req) })
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, res)
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
		fmt.Fprintln(stdout, ops.DryRunNote("run again with --yes to delete"))
	}
	return nil
}
