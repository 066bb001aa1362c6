package console

import (
	"html/template"
	"time"
)

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"whenp": func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	// outcome is a subscriber's outcome as the event page words it.
	"outcome": func(o string) string {
		switch o {
		case "none":
			return "pending"
		case "dead_lettered":
			return "dead-lettered"
		case "processed_after_redrive":
			return "processed after redrive"
		case "skipped_stale":
			return "skipped (stale)"
		}
		return o
	},
	"lower": func(s string) string {
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			}
		}
		return string(b)
	},
}
