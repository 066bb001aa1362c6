package main

import (
	"encoding/json"
	"io"
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
