package console

import (
	"html/template"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
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
	// whenms is when with milliseconds: a destination's retries can be
	// milliseconds apart.
	"whenms": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	},
	"inc": func(i int) int { return i + 1 },
	// latency rounds an attempt's latency: 3.2ms, 120ms, 1.5s.
	"latency": ops.Latency,
	// snippet is text an endpoint sent (a response, an error quoting it)
	// as safeText, cut to at most n bytes: html/template escapes it.
	"snippet": func(s string, n int) string {
		return snippet(s, n)
	},
	// attemptOutcome is an HTTP attempt's outcome as the event page
	// words it.
	"attemptOutcome": wording(map[string]string{
		deststate.OutcomeDeadLettered: "dead-lettered",
		deststate.OutcomeGone:         "gone (410): destination disabled",
		deststate.OutcomeFailed:       "failed: retried",
	}),
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	// outcome is a subscriber's outcome as the event page words it.
	"outcome": wording(map[string]string{
		ops.OutcomeNone:                  "pending",
		ops.OutcomeNotPublished:          "not published",
		ops.OutcomeWaiting:               "waiting for its retry",
		ops.OutcomeNoConsumer:            "no consumer on the stream",
		ops.OutcomeUnknown:               "unknown (stream not reachable)",
		ops.OutcomeDeadLettered:          "dead-lettered",
		ops.OutcomeProcessedAfterRedrive: "processed after redrive",
		ops.OutcomeSkippedStale:          "skipped (stale)",
	}),
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

// wording is a template func that words a value as words says, and any
// other value as it is.
func wording(words map[string]string) func(string) string {
	return func(v string) string {
		if w, ok := words[v]; ok {
			return w
		}
		return v
	}
}
