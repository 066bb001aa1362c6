package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/hookhub/hookhub/schema"
)

// Report is what a run proved: every count is of distinct events of the
// run. An event is expected on the stream and by its subscribers when a
// 2xx acknowledged it, or when the archive holds it (a 2xx that was lost
// on the way back).
type Report struct {
	RunID    string        `json:"run_id"`
	Duration time.Duration `json:"duration_ns"`
	// Sent is the events sent; Deliveries every POST (retries and
	// duplicates included); Acknowledged the events a 2xx answered.
	Sent         int   `json:"sent"`
	Deliveries   int64 `json:"deliveries"`
	Acknowledged int   `json:"acknowledged"`
	// Unacknowledged events were never answered 2xx while the load
	// retried them: the hub may refuse during a fault; providers retry
	// for days. Not a loss unless acknowledged.
	Unacknowledged idList `json:"unacknowledged"`
	// Archived: expected events in the archive and the dedup table.
	Archived int `json:"archived"`
	// OnStream: expected events on the stream at least once.
	OnStream    int                `json:"on_stream"`
	Subscribers []SubscriberReport `json:"subscribers"`
	// Lost counts the acknowledged events missing from the archive, and
	// the expected events missing from the stream or not processed by a
	// subscriber that consumes them; Duplicated those on the stream more
	// than once or with a side effect made more than once.
	Lost       int `json:"lost"`
	Duplicated int `json:"duplicated"`
	// The lost and duplicated events by where they are missing or twice.
	// LostFromArchive: acknowledged, not in the archive; of those,
	// ArchiveOnlyLost were published (the stream has them, so the side
	// effects happened and only the archive lacks them).
	LostFromArchive  idList `json:"lost_from_archive"`
	ArchiveOnlyLost  idList `json:"lost_from_archive_but_on_stream"`
	MissingOnStream  idList `json:"missing_on_stream"`
	StreamDuplicates idList `json:"stream_duplicates"`
	// LongestGap is the longest time without any 2xx while sending.
	LongestGap time.Duration `json:"longest_gap_ns"`
	Faults     []FaultRecord `json:"faults,omitempty"`
}

// SubscriberReport is what one subscriber did of the events it consumes.
type SubscriberReport struct {
	Name      string `json:"name"`
	Expected  int    `json:"expected"`
	Processed int    `json:"processed"`
	// Missing: expected, neither processed nor dead-lettered.
	Missing      idList `json:"missing"`
	DeadLettered idList `json:"dead_lettered"`
	// EffectDuplicates: events whose side effect row exists twice.
	EffectDuplicates idList `json:"effect_duplicates"`
}

// OK reports whether nothing was lost or duplicated (and nothing
// dead-lettered: the example subscribers never refuse a sample).
func (r Report) OK() bool {
	if r.Lost != 0 || r.Duplicated != 0 {
		return false
	}
	for _, s := range r.Subscribers {
		if s.DeadLettered.N != 0 {
			return false
		}
	}
	return true
}

func report(o CheckOptions, events []Event, f findings) Report {
	r := Report{Sent: len(events)}
	lost, dup := map[string]bool{}, map[string]bool{}
	subs := make([]SubscriberReport, len(o.Subscribers))
	for i, s := range o.Subscribers {
		subs[i].Name = s.Name
	}
	for _, ev := range events {
		id := schema.MsgID(ev.Provider, ev.ID)
		r.Deliveries += int64(ev.Attempts)
		archived := f.archived[id] && f.deduped[id]
		if ev.Acked {
			r.Acknowledged++
		} else if !archived {
			r.Unacknowledged.add(id)
		}
		if !ev.Acked && !archived {
			continue // never accepted: nothing is owed
		}
		if archived {
			r.Archived++
		} else {
			r.LostFromArchive.add(id)
			lost[id] = true
			if f.stream[id] > 0 {
				r.ArchiveOnlyLost.add(id)
			}
		}
		switch n := f.stream[id]; {
		case n == 0:
			r.MissingOnStream.add(id)
			lost[id] = true
		case n > 1:
			r.StreamDuplicates.add(id)
			dup[id] = true
			fallthrough
		default:
			r.OnStream++
		}
		for i, s := range o.Subscribers {
			if !s.consumes(ev.Subject()) {
				continue
			}
			sr := &subs[i]
			sr.Expected++
			switch {
			case f.processed[s.Name][id]:
				sr.Processed++
			case f.dead[s.Name][id]:
				sr.DeadLettered.add(id)
			default:
				sr.Missing.add(id)
				lost[id] = true
			}
			if f.effects[s.Name][ev.ID] > 1 {
				sr.EffectDuplicates.add(id)
				dup[id] = true
			}
		}
	}
	r.Subscribers, r.Lost, r.Duplicated = subs, len(lost), len(dup)
	return r
}

// WriteText writes the report for a person: a summary table, then the
// ids of whatever was lost or duplicated.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "sent\tdeliveries\tacknowledged\tarchived\ton stream\tlost\tduplicated\t\n")
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.Sent, r.Deliveries, r.Acknowledged, r.Archived, r.OnStream, r.Lost, r.Duplicated)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Subscribers) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "subscriber\texpected\tprocessed\tmissing\tdead letters\tside effects twice\t\n")
		for _, s := range r.Subscribers {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", s.Name, s.Expected, s.Processed, s.Missing.N, s.DeadLettered.N, s.EffectDuplicates.N)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Faults) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "fault\tat\ttook\tresult\n")
		for _, f := range r.Faults {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, f.At.Round(100*time.Millisecond), f.Took.Round(10*time.Millisecond), f.result())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nrun %s: %s, longest time without a 2xx %s; %d events not acknowledged while retried (a provider retries for days)\n",
		r.RunID, r.Duration.Round(100*time.Millisecond), r.LongestGap.Round(10*time.Millisecond), r.Unacknowledged.N)
	for _, l := range []struct {
		what string
		ids  idList
	}{
		{"acknowledged but not archived", r.LostFromArchive},
		{"  of which on the stream (only the archive lacks them)", r.ArchiveOnlyLost},
		{"missing on the stream", r.MissingOnStream},
		{"on the stream more than once", r.StreamDuplicates},
	} {
		if l.ids.N > 0 {
			fmt.Fprintf(w, "%s: %s\n", l.what, l.ids)
		}
	}
	for _, s := range r.Subscribers {
		for _, l := range []struct {
			what string
			ids  idList
		}{{"not processed", s.Missing}, {"dead-lettered", s.DeadLettered}, {"side effect made twice", s.EffectDuplicates}} {
			if l.ids.N > 0 {
				fmt.Fprintf(w, "%s: %s: %s\n", s.Name, l.what, l.ids)
			}
		}
	}
	verdict := "OK: nothing lost, nothing duplicated"
	if !r.OK() {
		verdict = "FAILED: events lost, duplicated or dead-lettered (above)"
	}
	_, err := fmt.Fprintln(w, verdict)
	return err
}

// WriteJSON writes the report as one JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Report
		OK bool `json:"ok"`
	}{r, r.OK()})
}
