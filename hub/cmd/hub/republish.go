package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
)

func runRepublish(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("republish", `Usage: hub republish [--provider P] [--status S] [--since T] [--until T] [--event provider:event_id] [--dry-run] [--json]

Publishes archived events back into the stream: for events the stream no longer
holds (retention, a lost stream). Each copy carries the exact body and the hub's
headers under the message id <provider>:<event_id>:republish:<run>, which the
duplicate window cannot drop. Every subscriber receives it; their idempotency
skips what they already processed, so side effects stay single.
`, stdout)
	fs.String("provider", "", "only this provider")
	fs.String("status", "PROCESSED", "PROCESSED, the only status that can be republished (FAILED events cannot form a subject)")
	fs.String("since", "", "received at or after (90m, 7d, 2026-11-30, RFC 3339)")
	fs.String("until", "", "received before")
	fs.String("event", "", "just this event")
	dryRun := fs.Bool("dry-run", false, "count what would be published")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseNoArgs(fs, args, "republish takes no arguments; filters are flags"); err != nil {
		return err
	}
	f, err := ops.DecodeRepublish(flagValues(fs), time.Now())
	if err != nil {
		return flagErr(err)
	}
	mode := natsRequired
	if *dryRun {
		mode = natsOptional // a dry run counts in the database
	}
	res, nats, err := streamCall(ctx, mode, stderr, *asJSON || *dryRun, func(env *opsEnv) (ops.RepublishResult, error) { return env.ops.Republish(ctx, f) })
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, struct {
			ops.RepublishResult
			NATS natsTarget `json:"nats"`
		}{res, nats})
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
