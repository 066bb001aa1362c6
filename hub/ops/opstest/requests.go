// Package opstest holds the operator requests every face of the hub (the
// admin API, the console, the command line) must decode alike: each face's
// test feeds these values through its own input (a query or JSON body, a
// form, flags) and compares what it decoded with Decode's.
package opstest

import (
	"time"

	"github.com/hookhub/hookhub/hub/ops"
)

// Case is one request in the neutral form, and the error its decoding
// gives (a substring; empty: none).
type Case struct {
	Kind   string // events, replay, republish, bulk, purge, audit
	Values ops.Values
	Err    string
}

// Cases are the requests each face decodes. Their times are absolute, so
// that faces reading the clock at different moments decode the same.
var Cases = []Case{
	{"events", ops.Values{"provider": {"paddle"}, "type": {"subscription.created"}, "status": {"processed"}, "since": {"2026-11-30T08:00:00Z"},
		"until": {"2026-12-01"}, "limit": {"20"}, "where": {"data.customer=cus_1", "items[0].id=x"}}, ""},
	{"events", ops.Values{"entity": {"cus_123"}, "since": {"2026-11-30"}}, ""},
	{"events", ops.Values{"status": {"DONE"}}, `status: "DONE" is not a status`},
	{"events", ops.Values{"since": {"2026-12-01"}, "until": {"2026-11-30"}}, "until"},
	{"events", ops.Values{"since": {"yesterday"}}, "since"},
	{"events", ops.Values{"where": {"no-equals"}}, "where"},
	{"events", ops.Values{"limit": {"many"}}, "limit: not a whole number"},
	{"replay", ops.Values{"subscriber": {"credits"}, "since": {"2026-11-30"}, "until": {"2026-11-30T12:00:00Z"}, "subject": {"paddle.>"},
		"rate": {"25.5"}, "dry_run": {"true"}}, ""},
	{"replay", ops.Values{"subscriber": {"credits"}, "since": {"2026-11-31"}}, "since"},
	{"republish", ops.Values{"provider": {"stripe"}, "status": {"PROCESSED"}, "since": {"2026-11-30"}, "event": {"stripe:evt_1"}, "dry_run": {"false"}}, ""},
	{"republish", ops.Values{"status": {"SOMETIMES"}}, "status"},
	{"bulk", ops.Values{"action": {"replay"}, "subscriber": {"credits"}, "provider": {"paddle"}, "type": {"a.b"}, "entity": {"cus_1"},
		"status": {"PROCESSED"}, "since": {"2026-11-30"}, "until": {"2026-12-01"}, "where": {"a=b"}, "dry_run": {"false"}, "rate": {"20"}, "sample": {"5"}}, ""},
	{"bulk", ops.Values{"action": {"republish"}, "since": {"2026-11-30"}, "dry_run": {"true"}}, ""},
	{"bulk", ops.Values{"action": {"replay"}, "subscriber": {"credits"}, "since": {"2026-11-30"}, "rate": {"fast"}}, "rate"},
	{"purge", ops.Values{"older_than": {"90d"}, "dry_run": {"false"}, "include_failed": {"true"}}, ""},
	{"purge", ops.Values{"older_than": {"213504d"}}, "older_than"},
	{"audit", ops.Values{"since": {"2026-11-30"}, "until": {"2026-12-01T00:00:00Z"}, "actor": {"alice@ops-1"}, "action": {"replay"}}, ""},
	{"audit", ops.Values{"until": {"soon"}}, "until"},
}

// Decode decodes v as a request of kind, as hub/ops does for every face.
// The event filter's Now is left out: each face reads its own clock.
func Decode(kind string, v ops.Values, now time.Time) (any, error) {
	switch kind {
	case "events":
		f, err := ops.DecodeEventFilter(v, now)
		f.Now = time.Time{}
		return f, err
	case "replay":
		return ops.DecodeReplay(v, now)
	case "republish":
		return ops.DecodeRepublish(v, now)
	case "bulk":
		req, err := ops.DecodeBulk(v, now)
		req.Filter.Now = time.Time{}
		return req, err
	case "purge":
		return ops.DecodePurge(v)
	case "audit":
		return ops.DecodeAudit(v, now)
	}
	panic("opstest: unknown kind " + kind)
}
