package ops

import (
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
	Number             // a JSON number, in the field's own syntax (whole, or not)
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
		"since": Text, "until": Text, "where": List, "dry_run": Bool, "rate": Number, "sample": Number}
	RedriveFields = Fields{"id": Number, "all": Bool}
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
	f := EventFilter{Provider: v.Get("provider"), Type: v.Get("type"), EventID: v.Get("event_id"), Entity: v.Get("entity"),
		Before: v.Get("before"), Now: now}
	if v.Has("entity") {
		if err := CheckEntity(f.Entity); err != nil {
			return f, err
		}
	}
	var err error
	if f.Where, err = ParseWheres("where", v["where"]); err != nil {
		return f, err
	}
	if f.Limit, err = wholeField(v, "limit", DefaultListLimit, MaxListLimit); err != nil {
		return f, err
	}
	if f.Status, err = statusField(v); err != nil {
		return f, err
	}
	f.Since, f.Until, err = ParseWindow(v.Get("since"), v.Get("until"), now)
	return f, err
}

// DecodeReplay reads a replay: subscriber, since, until (absent: up to
// now), subject, dry_run and rate. Its wait is the face's (the admin API
// bounds it below its write timeout).
func DecodeReplay(v Values, now time.Time) (ReplayRequest, error) {
	req := ReplayRequest{Subscriber: v.Get("subscriber"), Subject: v.Get("subject"), Wait: DefaultReplayWait}
	var err error
	if req.DryRun, err = boolField(v, "dry_run", false); err != nil {
		return req, err
	}
	if req.Rate, err = rateField(v); err != nil {
		return req, err
	}
	req.Since, req.Until, err = ParseWindow(v.Get("since"), v.Get("until"), now)
	return req, err
}

// DecodeRepublish reads a republish: provider, status, since, until,
// event and dry_run.
func DecodeRepublish(v Values, now time.Time) (RepublishFilter, error) {
	f := RepublishFilter{Provider: v.Get("provider"), Event: v.Get("event")}
	var err error
	if f.DryRun, err = boolField(v, "dry_run", false); err != nil {
		return f, err
	}
	if f.Status, err = statusField(v); err != nil {
		return f, err
	}
	f.Since, f.Until, err = ParseWindow(v.Get("since"), v.Get("until"), now)
	return f, err
}

// DecodeBulk reads a bulk action: action, subscriber, the event filter's
// fields, dry_run (absent: a dry run), rate and sample (absent: ops.Bulk's
// defaults). A republish's subscriber is refused by ops.Bulk.
func DecodeBulk(v Values, now time.Time) (BulkRequest, error) {
	req := BulkRequest{Action: v.Get("action"), Subscriber: v.Get("subscriber"), Wait: DefaultReplayWait}
	var err error
	if req.Filter, err = DecodeEventFilter(v, now); err != nil {
		return req, err
	}
	if req.DryRun, err = boolField(v, "dry_run", true); err != nil {
		return req, err
	}
	if req.Rate, err = rateField(v); err != nil {
		return req, err
	}
	req.Sample, err = wholeField(v, "sample", 0, MaxBulkSample)
	return req, err
}

var errExactlyOne = inputErr("id", "give exactly one of id (one dead letter), ids (a plan) or all (every one waiting)")

// DecodeRedrive reads a redrive of a subscriber's dead letters: one (id),
// every one waiting (all), or the ids of a plan (ids, comma-separated, at
// most MaxRedrivePlan), one request each.
func DecodeRedrive(v Values) ([]RedriveRequest, error) {
	sub := v.Get("subscriber")
	if !v.Has("ids") {
		req := RedriveRequest{Subscriber: sub}
		var err error
		if v.Get("id") != "" {
			if req.ID, err = strconv.ParseInt(v.Get("id"), 10, 64); err != nil {
				return nil, inputErr("id", "must be a dead letter's id (a positive number)")
			}
		}
		if req.All, err = boolField(v, "all", false); err == nil && req.ID == 0 && !req.All {
			err = errExactlyOne
		}
		return []RedriveRequest{req}, err
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
	var req PurgeRequest
	var err error
	if req.OlderThan, err = ParseAge(v.Get("older_than")); err != nil {
		return req, fmt.Errorf("older_than: %w", err)
	}
	if req.DryRun, err = boolField(v, "dry_run", true); err != nil {
		return req, err
	}
	if req.IncludeFailed, err = boolField(v, "include_failed", false); err != nil {
		return req, err
	}
	req.BatchSize, err = wholeField(v, "batch", DefaultPurgeBatch, MaxPurgeBatch)
	return req, err
}

// DecodeAudit reads an audit trail query: since, until, actor, action,
// before and limit (DefaultAuditLimit).
func DecodeAudit(v Values, now time.Time) (AuditFilter, error) {
	f := AuditFilter{Actor: v.Get("actor"), Action: v.Get("action"), Before: v.Get("before")}
	var err error
	if f.Limit, err = wholeField(v, "limit", DefaultAuditLimit, MaxAuditLimit); err != nil {
		return f, err
	}
	f.Since, f.Until, err = ParseWindow(v.Get("since"), v.Get("until"), now)
	return f, err
}

// wholeField reads a whole number (absent: def); its bounds are the
// operation's to check.
func wholeField(v Values, field string, def, max int) (int, error) {
	s := v.Get(field)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, inputErr(field, "not a whole number (1..%d)", max)
	}
	return n, nil
}

// boolField reads true or false (absent: def).
func boolField(v Values, field string, def bool) (bool, error) {
	if v.Get(field) == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v.Get(field))
	if err != nil {
		return false, inputErr(field, "not true or false")
	}
	return b, nil
}

// rateField reads a rate in events a second (absent: 0, the operation's
// default).
func rateField(v Values) (float64, error) {
	if v.Get("rate") == "" {
		return 0, nil
	}
	r, err := strconv.ParseFloat(v.Get("rate"), 64)
	if err != nil {
		return 0, inputErr("rate", "not a number of events a second")
	}
	return r, nil
}

// statusField reads an archive status (empty: any).
func statusField(v Values) (hub.Status, error) {
	if s := v.Get("status"); s != "" {
		return ParseStatus("status", s)
	}
	return "", nil
}

// DecodeSessions reads a query of console sessions: name, id, before and
// limit (DefaultSessionLimit).
func DecodeSessions(v Values) (SessionFilter, error) {
	f := SessionFilter{Name: v.Get("name"), ID: v.Get("id"), Before: v.Get("before")}
	var err error
	f.Limit, err = wholeField(v, "limit", DefaultSessionLimit, MaxSessionLimit)
	return f, err
}
