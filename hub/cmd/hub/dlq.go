package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
)

func runDLQ(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	action, args, err := parseAction(args, `Usage: hub dlq list --subscriber NAME [--json]
       hub dlq redrive --subscriber NAME (--id ID | --all) [--json]

  list     the subscriber's dead letters: messages its handler failed on too often
  redrive  ask the running subscriber to process them again (after a fix); an event it
           processed meanwhile is skipped
`, "dlq needs list or redrive", stdout, stderr)
	if err != nil {
		return err
	}
	fs := newFlags("dlq "+action, "Usage: hub dlq "+action+" --subscriber NAME ...\n", stdout)
	sub := fs.String("subscriber", "", "the subscriber (credits, email, downgrade, ...)")
	fs.Int64("id", 0, "redrive: this dead letter")
	fs.Bool("all", false, "redrive: every dead letter not yet redriven")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if err := parseFlags(fs, args); err != nil {
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
	env, _, err := connectOps(ctx, natsOptional, stderr)
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
		return printRows(stdout, *asJSON, dls, *sub+" has no dead letters", "ID\tCREATED\tEVENT\tSUBJECT\tATTEMPTS\tSTATE\tERROR", func(tw io.Writer, r ops.DeadLetter) {
			state := "waiting"
			switch {
			case r.RedrivenAt != nil:
				state = "redriven"
			case r.RedriveRequestedAt != nil:
				state = "redrive requested"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s:%s\t%s\t%d\t%s\t%s\n", r.ID, r.CreatedAt.UTC().Format(time.RFC3339), r.Provider, r.EventID, r.Subject, r.Attempts, state, oneLine(r.Error, 70))
		})
	default: // redrive
		reqs, err := ops.DecodeRedrive(flagValues(fs))
		if err != nil {
			return err
		}
		res, err := env.ops.Redrive(ctx, reqs[0])
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, res)
		}
		fmt.Fprintf(stdout, "%s (see `hub dlq list --subscriber %s`)\n", ops.RedriveText(res.Requested, *sub), *sub)
		return nil
	}
}
