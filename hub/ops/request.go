package ops

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub"
)

// Values is an operator's request in its neutral form: named strings, as
// a query string, a form and command-line flags all are (a name given more
// than once, such as where, holds each value in order). The admin API, the
// console and the command line each map their input into Values and decode
// it with the request's Decode function here, so the three accept the same
// fields with the same syntax, and refuse the same values with the same
// InputError (ErrInvalid, hub.EINVALID) naming the field.
//
// A field that is absent or empty takes the request's default, but for an
// entity: entity= is refused (an entity filter needs an id).
type Values = url.Values

// Kind is the type of a field's value where a face's input is typed (the
// admin API's JSON body).
type Kind int

// The kinds of field.
const (
	Text   Kind = iota // a JSON string
	Bool               // true or false
	Number             // a JSON number
	Whole              // a JSON number without a fraction or exponent, an int64
	List               // repeatable: a JSON array of strings
)

// Fields names the fields of a request and the kind of each.
type Fields map[string]Kind

// The fields the admin API's request bodies take. The command line and the
// console take more of each request's fields (a replay's wait, a purge's
// batch, a redrive's ids), with their own bounds.
var (
	ReplayFields    = Fields{"subscriber": Text, "since": Text, "until": Text, "subject": Text, "dry_run": Bool, "rate": Number}
	RepublishFields = Fields{"provider": Text, "status": Text, "since": Text, "until": Text, "event": Text, "dry_run": Bool}
	BulkFields      = Fields{"action": Text, "subscriber": Text, "provider": Text, "type": Text, "entity": Text, "status": Text,
		"since": Text, "until": Text, "where": List, "dry_run": Bool, "rate": Number, "sample": Whole}
	RedriveFields = Fields{"id": Whole, "all": Bool}
	PurgeFields   = Fields{"older_than": Text, "dry_run": Bool, "include_failed": Bool}
)

// MaxRedrivePlan bounds the dead letters one redrive of ids holds (the
// console's confirmation form carries them: at most ~10 KiB).
const MaxRedrivePlan = 500

// DecodeEventFilter reads an event filter: provider, type, event_id,
// entity, status, since, until, before, limit (DefaultListLimit) and where
// (repeatable, path=value). now is taken once by the caller: a since of
// "7d" is then exactly a payload filter's longest range.
func DecodeEventFilter(v Values, now time.Time) (EventFilter, error) {
	d := decoder{v: v}
	if v.Has("entity") {
		d.err = CheckEntity(v.Get("entity"))
	}
	f := EventFilter{Provider: v.Get("provider"), Type: v.Get("type"), EventID: v.Get("event_id"), Entity: v.Get("entity"),
		Before: v.Get("before"), Where: d.wheres(), Limit: d.whole("limit", DefaultListLimit, MaxListLimit), Status: d.status(), Now: now}
	f.Since, f.Until = d.window(now)
	return f, d.err
}

// DecodeReplay reads a replay: subscriber, since, until (absent: up to
// now), subject, dry_run and rate. Its wait is the face's (the admin API
// bounds it below its write timeout).
func DecodeReplay(v Values, now time.Time) (ReplayRequest, error) {
	d := decoder{v: v}
	req := ReplayRequest{Subscriber: v.Get("subscriber"), Subject: v.Get("subject"), Wait: DefaultReplayWait,
		DryRun: d.bool("dry_run", false), Rate: d.rate()}
	req.Since, req.Until = d.window(now)
	return req, d.err
}

// DecodeRepublish reads a republish: provider, status, since, until,
// event and dry_run.
func DecodeRepublish(v Values, now time.Time) (RepublishFilter, error) {
	d := decoder{v: v}
	f := RepublishFilter{Provider: v.Get("provider"), Event: v.Get("event"), DryRun: d.bool("dry_run", false), Status: d.status()}
	f.Since, f.Until = d.window(now)
	return f, d.err
}

// DecodeBulk reads a bulk action: action, subscriber, the event filter's
// fields, dry_run (absent: a dry run), rate and sample (absent: ops.Bulk's
// defaults). A republish's subscriber is refused by ops.Bulk.
func DecodeBulk(v Values, now time.Time) (BulkRequest, error) {
	f, err := DecodeEventFilter(v, now)
	d := decoder{v: v, err: err}
	req := BulkRequest{Action: v.Get("action"), Subscriber: v.Get("subscriber"), Filter: f, Wait: DefaultReplayWait,
		DryRun: d.bool("dry_run", true), Rate: d.rate(), Sample: d.whole("sample", 0, MaxBulkSample)}
	return req, d.err
}

var errExactlyOne = inputErr("id", "give exactly one of id (one dead letter), ids (a plan) or all (every one waiting)")

// DecodeRedrive reads a redrive of a subscriber's dead letters: one (id),
// every one waiting (all), or the ids of a plan (ids, comma-separated, at
// most MaxRedrivePlan), one request each.
func DecodeRedrive(v Values) ([]RedriveRequest, error) {
	sub, d := v.Get("subscriber"), decoder{v: v}
	if !v.Has("ids") {
		req := RedriveRequest{Subscriber: sub, ID: d.int64("id", "must be a dead letter's id (a positive number)"), All: d.bool("all", false)}
		if d.err == nil && (req.ID == 0) == !req.All {
			d.err = errExactlyOne
		}
		return []RedriveRequest{req}, d.err
	}
	if v.Has("id") || v.Has("all") {
		return nil, errExactlyOne
	}
	var reqs []RedriveRequest
	seen := map[int64]bool{}
	for part := range strings.SplitSeq(v.Get("ids"), ",") {
		n, err := strconv.ParseInt(part, 10, 64)
		switch {
		case err != nil || n <= 0:
			return nil, inputErr("ids", "must be dead letter ids (positive numbers) separated by commas")
		case seen[n]:
			return nil, inputErr("ids", "%d is given twice", n)
		case len(seen) == MaxRedrivePlan:
			return nil, inputErr("ids", "more than %d dead letters in one plan", MaxRedrivePlan)
		}
		seen[n] = true
		reqs = append(reqs, RedriveRequest{Subscriber: sub, ID: n})
	}
	return reqs, nil
}

// DecodePurge reads a purge: older_than (required), dry_run (absent: a dry
// run), include_failed and batch (DefaultPurgeBatch).
func DecodePurge(v Values) (PurgeRequest, error) {
	age, err := ParseAge(v.Get("older_than"))
	if err != nil {
		return PurgeRequest{}, fmt.Errorf("older_than: %w", err)
	}
	d := decoder{v: v}
	req := PurgeRequest{OlderThan: age, DryRun: d.bool("dry_run", true), IncludeFailed: d.bool("include_failed", false),
		BatchSize: d.whole("batch", DefaultPurgeBatch, MaxPurgeBatch)}
	return req, d.err
}

// DecodeAudit reads an audit trail query: since, until, actor, action,
// before and limit (DefaultAuditLimit).
func DecodeAudit(v Values, now time.Time) (AuditFilter, error) {
	d := decoder{v: v}
	f := AuditFilter{Actor: v.Get("actor"), Action: v.Get("action"), Before: v.Get("before"), Limit: d.whole("limit", DefaultAuditLimit, MaxAuditLimit)}
	f.Since, f.Until = d.window(now)
	return f, d.err
}

// DecodeSessions reads a query of console sessions: name, id, before and
// limit (DefaultSessionLimit).
func DecodeSessions(v Values) (SessionFilter, error) {
	d := decoder{v: v}
	f := SessionFilter{Name: v.Get("name"), ID: v.Get("id"), Before: v.Get("before"), Limit: d.whole("limit", DefaultSessionLimit, MaxSessionLimit)}
	return f, d.err
}

// decoder reads the fields of v, keeping the first error: once it has
// one, every field is its default. An absent or empty field is its
// default; its bounds are the operation's to check.
type decoder struct {
	v   Values
	err error
}

// parse reads field with p; a value p refuses is an InputError saying
// reason, or p's own.
func parse[T any](d *decoder, field string, def T, p func(string) (T, error), reason string) T {
	s := d.v.Get(field)
	if d.err != nil || s == "" {
		return def
	}
	x, err := p(s)
	var input *InputError
	switch {
	case errors.As(err, &input):
		d.err = err
	case err != nil:
		d.err = inputErr(field, "%s", reason)
	}
	if err != nil {
		return def
	}
	return x
}

func (d *decoder) whole(field string, def, max int) int {
	return parse(d, field, def, strconv.Atoi, fmt.Sprintf("not a whole number (1..%d)", max))
}

// int64 reads a whole number that is not negative.
func (d *decoder) int64(field, reason string) int64 {
	return parse(d, field, 0, func(s string) (int64, error) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err == nil && n < 0 {
			err = strconv.ErrRange
		}
		return n, err
	}, reason)
}

func (d *decoder) bool(field string, def bool) bool {
	return parse(d, field, def, strconv.ParseBool, "not true or false")
}

// rate reads a rate in events a second (absent: 0, the operation's default).
func (d *decoder) rate() float64 {
	return parse(d, "rate", 0, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }, "not a number of events a second")
}

// status reads an archive status (empty: any).
func (d *decoder) status() hub.Status {
	return parse(d, "status", "", func(s string) (hub.Status, error) { return ParseStatus("status", s) }, "")
}

// wheres reads the payload conditions (where, repeatable).
func (d *decoder) wheres() []PayloadMatch {
	if d.err != nil {
		return nil
	}
	ms, err := ParseWheres("where", d.v["where"])
	d.err = err
	return ms
}

// window reads since and until against now (ParseWindow).
func (d *decoder) window(now time.Time) (since, until time.Time) {
	if d.err == nil {
		since, until, d.err = ParseWindow(d.v.Get("since"), d.v.Get("until"), now)
	}
	return since, until
}
