package console

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub/ops"
)

// The console turns queries and forms into hub/ops requests and leaves
// every check of their values to hub/ops; what it checks itself is only
// what it must convert (a number, a status name) and the form's shape.

// errTooLarge is a form over MaxFormBytes (answered 400 as an input error).
var errTooLarge = errors.New("form too large")

// readForm reads a POSTed urlencoded form of at most MaxFormBytes.
func readForm(c *fiber.Ctx) (url.Values, error) {
	if ct := c.Get(fiber.HeaderContentType); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != fiber.MIMEApplicationForm {
			return nil, &ops.InputError{Field: "form", Reason: "send the page's form (application/x-www-form-urlencoded)"}
		}
	}
	req := c.Request()
	if cl := req.Header.ContentLength(); cl > MaxFormBytes {
		c.Response().Header.SetConnectionClose()
		return nil, &ops.InputError{Field: "form", Reason: fmt.Sprintf("%v: more than %d bytes", errTooLarge, MaxFormBytes)}
	}
	var raw []byte
	if st := req.BodyStream(); st != nil {
		b, err := io.ReadAll(io.LimitReader(st, MaxFormBytes+1))
		if err != nil {
			c.Response().Header.SetConnectionClose()
			return nil, &ops.InputError{Field: "form", Reason: "not received whole"}
		}
		raw = b
	} else {
		raw = req.Body()
	}
	if len(raw) > MaxFormBytes {
		c.Response().Header.SetConnectionClose()
		return nil, &ops.InputError{Field: "form", Reason: fmt.Sprintf("%v: more than %d bytes", errTooLarge, MaxFormBytes)}
	}
	return parseForm(string(raw))
}

// parseForm reads an urlencoded form in which each field appears at most
// once.
func parseForm(raw string) (url.Values, error) {
	v, err := url.ParseQuery(raw)
	if err != nil {
		return nil, &ops.InputError{Field: "form", Reason: "not a form (bad percent-encoding)"}
	}
	for k, vs := range v {
		if len(vs) > 1 {
			return nil, &ops.InputError{Field: clip(k), Reason: "given more than once"}
		}
	}
	return v, nil
}

// clip shortens a field name of untrusted origin for a message.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// queryValues reads the request's query string the same way.
func queryValues(c *fiber.Ctx) (url.Values, error) {
	return parseForm(string(c.Request().URI().QueryString()))
}

// parseQuery reads the query string with parse; on an unreadable query
// the parsed values are zero.
func parseQuery[Q, F any](c *fiber.Ctx, now time.Time, parse func(url.Values, time.Time) (Q, F, error)) (Q, F, error) {
	q, err := queryValues(c)
	if err != nil {
		var in Q
		var f F
		return in, f, err
	}
	return parse(q, now)
}

// querySubscribers is the query string and the subscribers a page offers.
func (cn *Console) querySubscribers(c *fiber.Ctx) (url.Values, []string, error) {
	q, err := queryValues(c)
	if err != nil {
		return nil, nil, err
	}
	subs, err := cn.cfg.Operator.Subscribers(c.UserContext())
	return q, subs, err
}

// displayable makes text of untrusted origin fit to echo into a page:
// valid UTF-8 without control characters (each replaced by U+FFFD).
func displayable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

// eventsQuery is the events page's filter as typed, for the form.
type eventsQuery struct {
	Provider, Type, Status, Since, Until, EventID, Entity, Before, Limit string
	// Payload filters: each "path=value", as --where takes it.
	Where1, Where2 string
}

const defaultPageSize = 50

// opsValues is a query's or a form's fields as ops.Values: an empty field
// is not given (a form sends every field), and the payload filter's fields
// (where1, where2) are where.
func opsValues(q url.Values) ops.Values {
	v := ops.Values{}
	for k, vals := range q {
		for _, val := range vals {
			if val != "" && k != "where1" && k != "where2" {
				v.Add(k, val)
			}
		}
	}
	for _, w := range []string{q.Get("where1"), q.Get("where2")} {
		if w != "" {
			v.Add("where", w)
		}
	}
	return v
}

// parseEvents turns the events page's query into an ops filter, and
// returns what was typed made displayable for the form (the filter keeps
// the bytes, for ops to judge). Now is taken once, by the caller: a since
// of "7d" is then exactly a payload filter's longest range.
func parseEvents(q url.Values, now time.Time) (eventsQuery, ops.EventFilter, error) {
	in := eventsQuery{Provider: q.Get("provider"), Type: q.Get("type"), Status: q.Get("status"), Since: q.Get("since"),
		Until: q.Get("until"), EventID: q.Get("event_id"), Entity: q.Get("entity"), Before: q.Get("before"), Limit: q.Get("limit"),
		Where1: q.Get("where1"), Where2: q.Get("where2")}
	v := opsValues(q)
	if !v.Has("limit") {
		v.Set("limit", strconv.Itoa(defaultPageSize))
	}
	f, err := ops.DecodeEventFilter(v, now)
	if f.Status != "" {
		in.Status = string(f.Status)
	}
	for _, p := range []*string{&in.Provider, &in.Type, &in.Status, &in.Since, &in.Until, &in.EventID, &in.Entity, &in.Before, &in.Limit, &in.Where1, &in.Where2} {
		*p = displayable(*p)
	}
	return in, f, err
}

// replayForm is a replay's inputs as typed.
type replayForm struct {
	Subscriber, Since, Until, Subject string
}

// parseReplay turns the replay form into an ops request (a dry run unless
// run). An empty until is now: a plan and its run cover the same range.
func parseReplay(q url.Values, now time.Time, run bool) (replayForm, ops.ReplayRequest, error) {
	in := replayForm{Subscriber: q.Get("subscriber"), Since: q.Get("since"), Until: q.Get("until"), Subject: q.Get("subject")}
	v := opsValues(q)
	v.Set("dry_run", strconv.FormatBool(!run))
	req, err := ops.DecodeReplay(v, now)
	if req.Until.IsZero() {
		req.Until = now
	}
	return in, req, err
}

// parseRedrive reads a redrive form: one dead letter (id, a row's button),
// or the ids of a confirmed plan (ids, comma-separated). "Every one
// waiting" (all) is not taken: the plan (GET /console/dead-letters/redrive)
// resolves it to ids first, so that the operator sees what is redriven.
func parseRedrive(q url.Values) ([]ops.RedriveRequest, error) {
	reqs, err := ops.DecodeRedrive(opsValues(q))
	if err == nil && q.Has("all") {
		return nil, &ops.InputError{Field: "all", Reason: "redrive every dead letter waiting through its plan (the Redrive all button), which lists them first"}
	}
	return reqs, err
}

// Values is the filter as a query (the fields typed), for links.
func (in eventsQuery) Values() url.Values {
	v := url.Values{}
	for k, val := range map[string]string{"provider": in.Provider, "type": in.Type, "status": in.Status, "since": in.Since,
		"until": in.Until, "event_id": in.EventID, "entity": in.Entity, "limit": in.Limit, "where1": in.Where1, "where2": in.Where2} {
		if val != "" {
			v.Set(k, val)
		}
	}
	return v
}
