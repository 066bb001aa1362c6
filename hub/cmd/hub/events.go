package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/subscribers/destination"
)

func runEvents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runAction(ctx, args, "events", `Usage: hub events list [flags]
       hub events show [--json] <archive-id | provider:event_id>

  list   the archive, newest first: one line per first delivery (add --status SKIPPED
         for the duplicates), with how many deliveries the event had
  show   every delivery of one event (first and duplicates), its body, signature
         headers, status, error, stream sequence, and what each subscriber did with it

Run `+"`hub events list --help`"+` for the filters.
`, []command{{name: "list", run: runEventsList}, {name: "show", run: runEventsShow}}, stdout, stderr)
}

func runEventsList(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("events list", "Usage: hub events list [--provider P] [--type T] [--entity ID] [--status S] [--since T] [--until T] [--where PATH=VALUE]... [--limit N] [--before CURSOR] [--json]\n\nNewest first. Times are durations before now (90m, 36h, 7d) or times (2026-11-30, 2026-11-30T08:00:00Z).\nA full page ends with the --before cursor of the next one (with --json, every row has its \"cursor\").\n--where filters on the payload (data.object.customer=cus_1, items[0].id=x): it needs --since within 7d\nof --until (or now), and reads at most 20,000 archive rows a page; a page that stopped there says so.\n", stdout)
	fs.String("provider", "", "only this provider")
	fs.String("type", "", "only this event type, e.g. subscription.created")
	fs.String("entity", "", fmt.Sprintf("only the events about this entity id (exact), e.g. cus_123, across providers, each with what every subscriber and destination did with it (--limit at most %d)", ops.MaxTimelineLimit))
	fs.String("status", "", "PENDING, PROCESSED, SKIPPED or FAILED (default: all but SKIPPED)")
	fs.String("since", "", "received at or after")
	fs.String("until", "", "received before")
	limit := fs.Int("limit", ops.DefaultListLimit, fmt.Sprintf("at most this many rows (1..%d)", ops.MaxListLimit))
	fs.String("before", "", "the next page: rows listed after the row of this cursor (printed at the end of a full page)")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	var where whereFlag
	fs.Var(&where, "where", fmt.Sprintf("PATH=VALUE: the payload's JSON value at PATH equals VALUE (repeatable, at most %d)", ops.MaxPayloadMatches))
	if err := parseNoArgs(fs, args, "events list takes no arguments; filters are flags"); err != nil {
		return err
	}
	withOutcomes := flagGiven(fs, "entity")
	if withOutcomes && *limit > ops.MaxTimelineLimit {
		return usageErr(fmt.Sprintf("--limit: at most %d with --entity (each event's outcomes are read), got %d", ops.MaxTimelineLimit, *limit))
	}
	// Now is taken once: "--since 7d" is exactly a payload filter's longest range.
	f, err := ops.DecodeEventFilter(flagValues(fs), time.Now())
	if err != nil {
		return flagErr(err)
	}
	var outcomes []ops.TimelineEvent
	page, err := opsCall(ctx, natsOptional, io.Discard, func(o *ops.Ops) (ops.EventPage, error) {
		page, err := o.ListEventPage(ctx, f)
		if err == nil && withOutcomes {
			outcomes, err = o.EventOutcomes(ctx, page.Events)
		}
		return page, err
	})
	if err != nil {
		return err
	}
	rows := page.Events
	if *asJSON {
		var err error
		if withOutcomes {
			err = printJSONLines(stdout, outcomes)
		} else {
			err = printJSONLines(stdout, rows)
		}
		if err != nil {
			return err
		}
		if page.Truncated {
			// The last line says the page stopped at its scan bound.
			return printJSONLines(stdout, []any{map[string]any{"truncated": true, "scanned": page.Scanned, "next": page.Next}})
		}
		return nil
	}
	if len(rows) == 0 && !page.Truncated {
		fmt.Fprintln(stdout, "no events match")
		return nil
	}
	if err := printEventRows(stdout, rows, outcomes); err != nil {
		return err
	}
	switch {
	case page.Truncated:
		fmt.Fprintf(stdout, "\nthe payload filter read %d archive rows (%d MiB of payloads), its bound for a page, and found %d: older rows are not searched yet; continue with --before %s\n",
			page.Scanned, page.ScannedBytes>>20, len(rows), page.Next)
	case page.Next != "":
		fmt.Fprintf(stdout, "\nmore may follow: add --before %s\n", page.Next)
	}
	return nil
}

// printEventRows prints rows as a table, with each subscriber's outcome
// of each (outcomes, in the same order) when there are outcomes.
func printEventRows(w io.Writer, rows []ops.EventRow, outcomes []ops.TimelineEvent) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "RECEIVED\tPROVIDER\tEVENT ID\tTYPE\tSTATUS\tDELIVERIES\tSEQ\tARCHIVE ID\tERROR"
	if outcomes != nil {
		head += "\tSUBSCRIBERS"
	}
	fmt.Fprintln(tw, head)
	for i, r := range rows {
		seq := "-"
		if r.StreamSeq > 0 {
			seq = fmt.Sprint(r.StreamSeq)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s", r.ReceivedAt.UTC().Format(time.RFC3339), r.Provider, r.EventID, r.EventType, r.Status, r.Deliveries, seq, r.ArchiveID, oneLine(r.Error, 60))
		if outcomes != nil {
			fmt.Fprintf(tw, "\t%s", outcomesText(outcomes[i].Subscribers))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// outcomesText is each subscriber's outcome, "credits processed, email
// dead_lettered", or "-" when none takes the event.
func outcomesText(subs []ops.SubscriberOutcome) string {
	parts := make([]string, len(subs))
	for i, s := range subs {
		parts[i] = s.Subscriber + " " + s.Outcome
	}
	return orDash(strings.Join(parts, ", "))
}

// whereFlag collects repeated --where flags.
type whereFlag []string

func (w *whereFlag) String() string { return strings.Join(*w, " ") }

func (w *whereFlag) Set(s string) error {
	if len(*w) >= ops.MaxPayloadMatches {
		return fmt.Errorf("at most %d --where conditions", ops.MaxPayloadMatches)
	}
	*w = append(*w, s)
	return nil
}

func runEventsShow(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("events show", "Usage: hub events show [--json] <archive-id | provider:event_id>\n", stdout)
	asJSON := fs.Bool("json", false, "print the whole record as one JSON object")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("events show needs exactly one archive id or provider:event_id")
	}
	d, err := opsCall(ctx, natsOptional, io.Discard, func(o *ops.Ops) (ops.EventDetail, error) { return o.ShowEvent(ctx, pos[0]) })
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, d)
	}
	fmt.Fprintf(stdout, "event      %s:%s\ntype       %s\nsubject    %s\nfirst seen %s\nstatus     %s\norigin     %s\n",
		d.Provider, d.EventID, d.EventType, orDash(d.Subject), d.FirstSeen.UTC().Format(time.RFC3339Nano), orDash(d.Status), originText(d.Origin))
	if len(d.Entities) > 0 {
		fmt.Fprintf(stdout, "entities   %s\n", entitiesText(d.Entities))
	}
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
	switch {
	case len(d.Subscribers) > 0:
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
	case d.Published:
		fmt.Fprintln(stdout, "  none takes this subject")
	default:
		fmt.Fprintln(stdout, "  none: the event is not published, no subscriber has received it")
	}
	printAttemptTimelines(stdout, d.Subscribers)
	switch {
	case d.Payload != nil:
		fmt.Fprintf(stdout, "\nbody (the first delivery's bytes; control characters escaped, --json for the exact text):\n%s\n", d.Payload)
	case d.Body != "":
		fmt.Fprintf(stdout, "\nbody (the first delivery's bytes; control characters escaped, --json for the exact text):\n%s\n", d.Body)
	}
	return nil
}

// printAttemptTimelines prints each destination's HTTP attempts of the
// event, oldest first: when, the answer (status or error), latency,
// outcome and the start of the response.
func printAttemptTimelines(w io.Writer, subs []ops.SubscriberOutcome) {
	for _, s := range subs {
		if !s.Destination {
			continue
		}
		fmt.Fprintf(w, "\ndestination %s: %d attempt(s)", s.Subscriber, len(s.HTTPAttempts))
		if s.HTTPAttemptsTruncated {
			fmt.Fprintf(w, " (the last %d; older ones are not shown)", len(s.HTTPAttempts))
		}
		fmt.Fprintln(w)
		if len(s.HTTPAttempts) == 0 {
			fmt.Fprintln(w, "  none yet")
			continue
		}
		printAttempts(w, s.HTTPAttempts, false)
	}
}

// printAttempts prints attempts as a table, with the event of each when
// withEvent (a destination's recent attempts, whatever their event).
func printAttempts(w io.Writer, attempts []destination.Attempt, withEvent bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "  AT\tANSWER\tLATENCY\tOUTCOME\tRESPONSE"
	if withEvent {
		head = "  AT\tEVENT\tANSWER\tLATENCY\tOUTCOME\tRESPONSE"
	}
	fmt.Fprintln(tw, head)
	for _, a := range attempts {
		answer := fmt.Sprint(a.Status)
		if a.Status == 0 {
			answer = "no answer"
		}
		if a.Error != "" {
			answer += ": " + a.Error
		}
		event := ""
		if withEvent {
			event = cleanLine(a.Provider+":"+a.EventID, 60) + "\t"
		}
		fmt.Fprintf(tw, "  %s\t%s%s\t%s\t%s\t%s\n", a.At.UTC().Format(time.RFC3339Nano), event, cleanLine(answer, 60),
			formatLatency(a.Latency), a.Outcome, cleanLine(a.Response, 60))
	}
	_ = tw.Flush()
}

// formatLatency rounds d for a table (ops.Latency), "-" for none.
func formatLatency(d time.Duration) string { return orDash(ops.Latency(d)) }

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

// flagGiven reports whether flag name was given on the command line (also
// as an empty value).
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// entitiesText shows entities as "<kind>:<id>", comma-separated.
func entitiesText(es []hub.Entity) string {
	ss := make([]string, len(es))
	for i, e := range es {
		ss[i] = e.String()
	}
	return strings.Join(ss, ", ")
}
