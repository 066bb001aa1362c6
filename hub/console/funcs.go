package console

import (
	"html/template"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
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
		case ops.OutcomeNone:
			return "pending"
		case ops.OutcomeNotPublished:
			return "not published"
		case ops.OutcomeNoConsumer:
			return "no consumer on the stream"
		case ops.OutcomeUnknown:
			return "unknown (stream not reachable)"
		case ops.OutcomeDeadLettered:
			return "dead-lettered"
		case ops.OutcomeProcessedAfterRedrive:
			return "processed after redrive"
		case ops.OutcomeSkippedStale:
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
