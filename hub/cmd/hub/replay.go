package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
)

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("replay", `Usage: hub replay --subscriber NAME --since T [--until T] [--subject S] [--dry-run] [--rate N] [--json]

Redelivers the messages of the stream received in [--since, --until) to one
subscriber only: copies go to the subscriber's private replay subjects, which no
other subscriber consumes. The subscriber's idempotency makes it safe: events it
already processed are skipped without side effects, so replaying a whole day
after a bug fix re-runs only what never succeeded (dead letters included).
It waits for the subscriber to settle the copies and prints the counts.
A destination (an HTTP endpoint) is the exception: it sends every copy, the
events it delivered before too, and the counts say so.

Times are durations before now (90m, 36h, 7d) or times (2026-11-30, RFC 3339).
Needs HUB_DATABASE_URL and NATS (nats-server 2.10 or newer): HUB_NATS_URL, or
the running `+"`hub dev`"+` recorded in HUB_DATA_DIR, or 127.0.0.1:4222 (it says which).
`, stdout)
	sub := fs.String("subscriber", "", "the subscriber to replay to (required)")
	since := fs.String("since", "", "start of the range (required)")
	fs.String("until", "", "end of the range (default: now)")
	fs.String("subject", "", "only this subject (wildcards * and > allowed)")
	fs.Bool("dry-run", false, "count what would be replayed and what would be skipped")
	fs.Float64("rate", 0, fmt.Sprintf("at most N copies a second, %g..%g (default: unlimited)", ops.MinReplayRate, ops.MaxReplayRate))
	wait := fs.Duration("wait", ops.DefaultReplayWait, fmt.Sprintf("how long to wait for the subscriber to settle the copies (%s..%s)", ops.MinReplayWait, ops.MaxReplayWait))
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseNoArgs(fs, args, "replay takes no arguments; the range and the subscriber are flags"); err != nil {
		return err
	}
	if *sub == "" || *since == "" {
		return usageErr("--subscriber and --since are required (see `hub replay --help`)")
	}
	// A mistake is decided before connecting, and is one line on stderr.
	req, err := ops.DecodeReplay(flagValues(fs), time.Now())
	if err != nil {
		return flagErr(err)
	}
	req.Wait = *wait
	res, nats, err := streamCall(ctx, natsRequired, stderr, *asJSON, func(env *opsEnv) (ops.ReplayResult, error) { return env.ops.Replay(ctx, req) })
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, struct {
			ops.ReplayResult
			NATS natsTarget `json:"nats"`
		}{res, nats})
	}
	switch {
	case res.DryRun && res.Destination:
		fmt.Fprintf(stdout, "would replay %d events (stream seq %d..%d) to the destination %s: %d to send, %d of them already delivered (a destination sends them again)\n",
			res.Matched, res.FirstSeq, res.LastSeq, *sub, res.ToProcess, res.Resend)
		return nil
	case res.DryRun:
		fmt.Fprintf(stdout, "would replay %d events (stream seq %d..%d) to %s: %d already processed (would be skipped), %d to process\n",
			res.Matched, res.FirstSeq, res.LastSeq, *sub, res.Skipped, res.ToProcess)
		return nil
	case res.Destination:
		fmt.Fprintf(stdout, "replayed to the destination %s: %d published (stream seq %d..%d), %s",
			*sub, res.Delivered, res.FirstSeq, res.LastSeq, ops.SettledText(true, res.Processed, res.Skipped, res.Resent, res.DeadLettered))
	default:
		fmt.Fprintf(stdout, "replayed to %s: %d delivered (stream seq %d..%d), %s again",
			*sub, res.Delivered, res.FirstSeq, res.LastSeq, ops.SettledText(false, res.Processed, res.Skipped, res.Resent, res.DeadLettered))
	}
	if res.Unsettled > 0 {
		fmt.Fprintf(stdout, ", %d not settled after %s (is the subscriber running?)\n", res.Unsettled, *wait)
		return fmt.Errorf("%d events not settled yet; check `hub status` and run the replay again if needed (it is safe)", res.Unsettled)
	}
	fmt.Fprintln(stdout)
	return nil
}
