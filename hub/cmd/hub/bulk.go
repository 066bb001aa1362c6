package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
)

func runBulk(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := `Usage: hub bulk replay --subscriber NAME --since T [filters] [--dry-run] [--rate N] [--wait D] [--json]
       hub bulk republish --since T [filters] [--dry-run] [--rate N] [--json]

Acts on every event a filter matches (first deliveries, published):
  replay     copies go to one subscriber's (or destination's) private replay subjects:
             no other subscriber sees them, and events it already processed are skipped
  republish  copies go back into the stream under new message ids: every subscriber
             receives them, and each skips what it already processed

Filters: --provider, --type, --status PROCESSED, --since (required), --until, and
--where PATH=VALUE on the payload (repeatable; needs --since within 7d of --until).
At most 10,000 events a bulk action; at --rate events a second (default 50, at most
1000) so live traffic keeps its latency. Ctrl-C stops it; running it again is safe.
--dry-run prints the plan: how many match, how many the subscriber processed, the
first events.
`
	action, args, err := parseAction(args, usage, "bulk needs replay or republish", stdout, stderr)
	if err != nil {
		return err
	}
	if action != ops.BulkReplay && action != ops.BulkRepublish {
		return usageErr(fmt.Sprintf("unknown bulk action %q: want replay or republish", action))
	}
	fs := newFlags("bulk "+action, usage, stdout)
	fs.String("subscriber", "", "replay: the subscriber or destination to replay to (required)")
	fs.String("provider", "", "only this provider")
	fs.String("type", "", "only this event type")
	fs.String("entity", "", "only the events about this entity id (exact), e.g. cus_123")
	fs.String("status", "", "PROCESSED (default: every first delivery; unpublished ones are counted and left out)")
	fs.String("since", "", "received at or after (required)")
	fs.String("until", "", "received before (default: now)")
	var where whereFlag
	fs.Var(&where, "where", fmt.Sprintf("PATH=VALUE: the payload's JSON value at PATH equals VALUE (repeatable, at most %d)", ops.MaxPayloadMatches))
	dryRun := fs.Bool("dry-run", false, "print the plan; publish nothing")
	fs.Float64("rate", ops.DefaultBulkRate, fmt.Sprintf("events a second, %g..%g", ops.MinReplayRate, ops.MaxBulkRate))
	wait := fs.Duration("wait", ops.DefaultReplayWait, fmt.Sprintf("replay: how long to wait for the subscriber to settle the copies (%s..%s)", ops.MinReplayWait, ops.MaxReplayWait))
	fs.Int("sample", 10, fmt.Sprintf("the plan lists this many events (1..%d)", ops.MaxBulkSample))
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseNoArgs(fs, args, "bulk takes no arguments; the filter is flags"); err != nil {
		return err
	}
	// A mistake is decided before connecting, and is one line on stderr.
	// Now is taken once: "--since 7d" is exactly a payload filter's longest range.
	v := flagValues(fs)
	v.Set("action", action)
	req, err := ops.DecodeBulk(v, time.Now())
	if err != nil {
		return flagErr(err)
	}
	req.Wait = *wait
	res, _, err := streamCall(ctx, natsRequired, stderr, *asJSON, func(env *opsEnv) (ops.BulkResult, error) {
		if !*asJSON && !*dryRun {
			req.Progress = bulkProgress(env, stderr)
		}
		// audit: the CLI's bulk action (actor: the OS user) is recorded by ops.Bulk's markers.
		return env.ops.Bulk(ctx, req)
	})
	if *asJSON && (err == nil || res.Cancelled) {
		if perr := printJSON(stdout, res); perr != nil {
			return perr
		}
		return err
	}
	if err != nil && !res.Cancelled {
		return err
	}
	printBulk(stdout, res, *wait)
	if err != nil {
		return fmt.Errorf("stopped: %w (running it again is safe)", err)
	}
	if res.Unsettled > 0 {
		return fmt.Errorf("%d events not settled yet; check `hub status` and run it again if needed (it is safe)", res.Unsettled)
	}
	return nil
}

// bulkProgress prints a progress line every few seconds while a bulk
// action runs, after the banner (announce: the filter was good).
func bulkProgress(env *opsEnv, stderr io.Writer) func(ops.BulkResult) {
	var mu sync.Mutex
	last := time.Now()
	return func(r ops.BulkResult) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) >= 2*time.Second {
			env.announce(stderr)
			last = time.Now()
			fmt.Fprintf(stderr, "published %d of %d\n", r.Published, r.Eligible)
		}
	}
}

func printBulk(w io.Writer, r ops.BulkResult, wait time.Duration) {
	to := "the stream (every subscriber)"
	if r.Action == ops.BulkReplay {
		to = r.Subscriber
	}
	fmt.Fprintf(w, "the filter matched %d events", r.Matched)
	if r.Scanned > 0 {
		fmt.Fprintf(w, " (%d archive rows read)", r.Scanned)
	}
	fmt.Fprintf(w, "; %d to %s to %s", r.Eligible, r.Action, to)
	var left []string
	if r.NotPublished > 0 {
		left = append(left, fmt.Sprintf("%d never published", r.NotPublished))
	}
	if r.NotConsumed > 0 {
		left = append(left, fmt.Sprintf("%d on subjects %s does not consume", r.NotConsumed, r.Subscriber))
	}
	if r.Gone > 0 {
		left = append(left, fmt.Sprintf("%d no longer on the stream (republish them)", r.Gone))
	}
	for i, l := range left {
		if i == 0 {
			fmt.Fprint(w, "; left out: ")
		} else {
			fmt.Fprint(w, ", ")
		}
		fmt.Fprint(w, l)
	}
	fmt.Fprintln(w)
	switch {
	case r.Action == ops.BulkReplay && r.Destination:
		fmt.Fprintf(w, "the destination %s sends all %d, %d of them already delivered (sent again)\n", r.Subscriber, r.ToProcess, r.AlreadyProcessed)
	case r.Action == ops.BulkReplay:
		fmt.Fprintf(w, "%s processed %d of them already (skipped), %d to process\n", r.Subscriber, r.AlreadyProcessed, r.ToProcess)
	}
	if r.DryRun {
		for _, e := range r.Sample {
			fmt.Fprintf(w, "  %s  %s:%s  %s  %s\n", e.ReceivedAt.UTC().Format(time.RFC3339), e.Provider, e.EventID, e.EventType, e.Status)
		}
		if len(r.Sample) < r.Matched {
			fmt.Fprintf(w, "  … and %d more\n", r.Matched-len(r.Sample))
		}
		fmt.Fprintf(w, "at %g a second it takes about %s; run it without --dry-run\n", r.Rate, (time.Duration(float64(r.Eligible) / r.Rate * float64(time.Second))).Round(time.Second))
		return
	}
	if r.Cancelled {
		fmt.Fprint(w, "cancelled: ")
	}
	fmt.Fprintf(w, "published %d", r.Published)
	if r.Action == ops.BulkReplay {
		fmt.Fprint(w, ", "+ops.SettledText(r.Destination, r.Processed, r.Skipped, r.Resent, r.DeadLettered))
		if r.Unsettled > 0 {
			fmt.Fprintf(w, ", %d not settled after %s", r.Unsettled, wait)
		}
	} else if r.Failed > 0 {
		fmt.Fprintf(w, ", %d not acknowledged", r.Failed)
	}
	fmt.Fprintln(w)
}
