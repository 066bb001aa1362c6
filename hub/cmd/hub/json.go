package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// printJSON writes v as one JSON object on one line: a command's --json
// output (stdout then carries nothing else).
func printJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// printJSONLines writes one JSON object per line.
func printJSONLines[T any](w io.Writer, items []T) error {
	enc := json.NewEncoder(w)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}

// printRows is a list command's output: one JSON object per row with
// --json, else empty alone when there are no rows, else a table of header
// and one line per row.
func printRows[T any](w io.Writer, asJSON bool, rows []T, empty, header string, line func(io.Writer, T)) error {
	if asJSON {
		return printJSONLines(w, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, empty)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		line(tw, r)
	}
	return tw.Flush()
}
