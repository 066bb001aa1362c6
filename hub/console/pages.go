package console

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub/ops"
)

// Thresholds of the overview's attention list.
const (
	// oldPending: an outbox row older than this means publishing is stuck.
	oldPending = time.Minute
)

// flashes are the only messages a redirect can show (?flash=key).
func flashOf(q url.Values) string {
	switch q.Get("flash") {
	case "republished":
		return "Done: republished; every subscriber receives a copy and skips it if it processed the event already."
	case "bulk-cancelled":
		return "Cancelled: no more copies are published; what was published is counted below."
	case "bulk-not-running":
		return "The job had finished already."
	case "revoked":
		n, err := strconv.Atoi(q.Get("n"))
		if err != nil || n < 0 {
			return ""
		}
		return fmt.Sprintf("Done: revoked %d session(s); each is refused at its next request, on every replica.", n)
	case "redrive":
		n, err := strconv.Atoi(q.Get("n"))
		if err != nil || n < 0 {
			return ""
		}
		return "Done: " + ops.RedriveText(int64(n), q.Get("subscriber")) + "."
	}
	return ""
}

// subscriberRow is one subscriber on the overview.
type subscriberRow struct {
	Name        string
	Consumer    bool // a durable consumer of that name exists
	Pending     uint64
	AckPending  int
	Redelivered int
	DeadLetters int64
	Paused      bool
}

type attention struct {
	Level string // critical, warning
	Text  string
	Link  string
}

type overviewView struct {
	Chart         chart
	StreamState   string
	Status        ops.Status
	OldestAge     string
	Subscribers   []subscriberRow
	Attention     []attention
	DeliveriesNow string // per second over the last full minute
}

func (cn *Console) overview(c *fiber.Ctx, s *session) error {
	now := cn.cfg.Now()
	st, err := cn.cfg.Operator.Status(c.UserContext())
	if err != nil {
		return cn.failErr(c, s, err)
	}
	v := overviewView{Status: st, StreamState: "unknown"}
	if cn.cfg.StreamState != nil {
		v.StreamState = cn.cfg.StreamState()
	}
	if cn.cfg.Traffic != nil {
		mins := cn.cfg.Traffic(now)
		v.Chart = newChart(mins)
		if len(mins) >= 2 {
			m := mins[len(mins)-2]
			v.DeliveriesNow = strconv.FormatFloat(float64(m.OK+m.ClientErr+m.SrvErr)/60, 'f', 1, 64)
		}
	} else {
		v.Chart = newChart(nil)
	}
	if !st.OldestPending.IsZero() {
		v.OldestAge = age(now.Sub(st.OldestPending))
	}
	subs := map[string]*subscriberRow{}
	for name, n := range st.DeadLetters {
		subs[name] = &subscriberRow{Name: name, DeadLetters: n}
	}
	for _, cs := range st.Consumers {
		r := subs[cs.Name]
		if r == nil {
			r = &subscriberRow{Name: cs.Name}
			subs[cs.Name] = r
		}
		r.Consumer, r.Pending, r.AckPending, r.Redelivered, r.Paused = true, cs.Pending, cs.AckPending, cs.Redelivered, cs.Paused
	}
	for _, r := range subs {
		v.Subscribers = append(v.Subscribers, *r)
	}
	slices.SortFunc(v.Subscribers, func(a, b subscriberRow) int { return cmp.Compare(a.Name, b.Name) })

	// What needs attention, most urgent first: the stream, then the
	// outbox, then each subscriber.
	if v.StreamState != "ok" {
		v.Attention = append(v.Attention, attention{"critical", "Stream " + v.StreamState + ": deliveries are not being published (see /readyz and the hub's log).", ""})
	}
	if st.StreamError != "" {
		v.Attention = append(v.Attention, attention{"critical", "Stream: " + st.StreamError, ""})
	}
	if st.OutboxPending > 0 && now.Sub(st.OldestPending) > oldPending {
		v.Attention = append(v.Attention, attention{"critical", fmt.Sprintf("Outbox: %d event(s) waiting to be published, the oldest for %s.", st.OutboxPending, v.OldestAge), "/console/events?status=PENDING"})
	}
	for _, r := range v.Subscribers {
		link := "/console/dead-letters?subscriber=" + url.QueryEscape(r.Name)
		switch {
		case r.DeadLetters > 0:
			v.Attention = append(v.Attention, attention{"warning", fmt.Sprintf("%s: %d dead letter(s) waiting for a redrive.", r.Name, r.DeadLetters), link})
		}
		switch {
		case !r.Consumer && st.Stream != nil:
			v.Attention = append(v.Attention, attention{"warning", r.Name + ": no consumer on the stream (is the subscriber running?).", ""})
		case r.Paused:
			v.Attention = append(v.Attention, attention{"warning", r.Name + ": consumer paused.", ""})
		case r.Redelivered > 0:
			v.Attention = append(v.Attention, attention{"warning", fmt.Sprintf("%s: %d message(s) redelivered and not yet settled (a failing handler?).", r.Name, r.Redelivered), ""})
		}
	}
	slices.SortStableFunc(v.Attention, func(a, b attention) int {
		return cmp.Compare(levelRank(a.Level), levelRank(b.Level))
	})
	return cn.render(c, fiber.StatusOK, "overview", view{Title: "Overview", Nav: "overview", Session: s, Page: v,
		Flash: flashOf(queryOrEmpty(c))})
}

func levelRank(l string) int {
	if l == "critical" {
		return 0
	}
	return 1
}

// queryOrEmpty is the query, or nothing when it cannot be read (pages
// whose only query is a flash).
func queryOrEmpty(c *fiber.Ctx) url.Values {
	q, err := queryValues(c)
	if err != nil {
		return url.Values{}
	}
	return q
}

// age writes a duration for people: 45s, 12m, 3h20m, 2d4h.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

type eventsView struct {
	Q        eventsQuery
	Statuses []string
	Rows     []ops.EventRow
	Next     string // href of the next page; empty: none
	Filtered bool
	// Payload filters: Truncated, the page stopped at its scan
	// bound after reading Scanned rows; BulkHref starts a bulk action on
	// the filter (it needs since).
	Truncated bool
	Scanned   int
	BulkHref  string
}

var statuses = []string{"PENDING", "PROCESSED", "SKIPPED", "FAILED"}

func (cn *Console) events(c *fiber.Ctx, s *session) error {
	v := eventsView{Statuses: statuses}
	in, f, err := parseQuery(c, cn.cfg.Operator.Now(), parseEvents)
	v.Q = in
	if err != nil {
		return cn.eventsError(c, s, v, err)
	}
	v.Filtered = in != (eventsQuery{})
	if in.Since != "" {
		bulk := in.Values()
		bulk.Del("limit")
		v.BulkHref = "/console/bulk?" + bulk.Encode()
	}
	if len(f.Where) > 0 {
		// A payload filter's page says itself whether more may follow.
		page, err := cn.cfg.Operator.ListEventPage(c.UserContext(), f)
		if err != nil {
			return cn.eventsError(c, s, v, err)
		}
		v.Rows, v.Truncated, v.Scanned = page.Events, page.Truncated, page.Scanned
		if page.Next != "" {
			next := in.Values()
			next.Set("before", page.Next)
			v.Next = "/console/events?" + next.Encode()
		}
		return cn.render(c, fiber.StatusOK, "events", view{Title: "Events", Nav: "events", Session: s, Page: v})
	}
	limit := f.Limit
	if limit >= 1 && limit < ops.MaxListLimit {
		f.Limit++ // one more tells whether there is a next page
	}
	rows, err := cn.cfg.Operator.ListEvents(c.UserContext(), f)
	if err != nil {
		return cn.eventsError(c, s, v, err)
	}
	more := len(rows) > limit || (f.Limit == limit && len(rows) == limit)
	rows = rows[:min(len(rows), limit)]
	v.Rows = rows
	if more && len(rows) > 0 {
		next := in.Values()
		next.Set("before", rows[len(rows)-1].Cursor)
		v.Next = "/console/events?" + next.Encode()
	}
	return cn.render(c, fiber.StatusOK, "events", view{Title: "Events", Nav: "events", Session: s, Page: v})
}

// eventsError shows the filter form again with the error.
func (cn *Console) eventsError(c *fiber.Ctx, s *session, v eventsView, err error) error {
	code, msg := failure(cn, c, err)
	return cn.render(c, code, "events", view{Title: "Events", Nav: "events", Session: s, Page: v, Error: msg})
}

type eventView struct {
	D        ops.EventDetail
	Ref      string
	Pretty   string
	Raw      string
	RawNote  string
	BodySize int
	// StreamSeq is the stream sequence of the event's message (its
	// first delivery's); 0 while not published.
	StreamSeq uint64
}

// eventOf reads the query and the event its ref names, and the stream
// sequence of the event's message (its first delivery's; 0 while not
// published).
func (cn *Console) eventOf(c *fiber.Ctx) (url.Values, ops.EventDetail, uint64, error) {
	q, err := queryValues(c)
	if err != nil {
		return q, ops.EventDetail{}, 0, err
	}
	d, err := cn.cfg.Operator.ShowEvent(c.UserContext(), q.Get("ref"))
	if err != nil {
		return q, d, 0, err
	}
	for _, dl := range d.Deliveries {
		if dl.StreamSeq != 0 {
			return q, d, dl.StreamSeq, nil
		}
	}
	return q, d, 0, nil
}

func (cn *Console) event(c *fiber.Ctx, s *session) error {
	q, d, seq, err := cn.eventOf(c)
	if err != nil {
		return cn.failErr(c, s, err)
	}
	v := eventView{D: d, Ref: d.Provider + ":" + d.EventID, StreamSeq: seq}
	body := []byte(d.Payload)
	if d.Payload == nil {
		body = []byte(d.Body)
	}
	v.BodySize = len(body)
	v.Pretty, v.Raw = prettyBody(body), safeText(body)
	if v.Raw != string(body) {
		v.RawNote = `Bytes that are not printable UTF-8 are shown as \xNN.`
	}
	return cn.render(c, fiber.StatusOK, "event", view{Title: "Event " + v.Ref, Nav: "events", Session: s, Page: v, Flash: flashOf(q)})
}

func (cn *Console) republish(c *fiber.Ctx, s *session) error {
	ref := formOf(c).Get("ref")
	res, err := cn.cfg.Operator.Republish(actx(c, s), ops.RepublishFilter{Event: ref})
	if err != nil {
		cn.audit(c, s, "republish", "event", ref, "err", err)
		return cn.failErr(c, s, err)
	}
	cn.audit(c, s, "republish", "event", ref, "published", res.Published, "failed", res.Failed, "run_id", res.RunID)
	if res.Failed > 0 {
		return cn.fail(c, s, fiber.StatusServiceUnavailable, "The copy was not acknowledged by JetStream; try again.")
	}
	return c.Redirect("/console/event?"+url.Values{"ref": {ref}, "flash": {"republished"}}.Encode(), fiber.StatusSeeOther)
}

type deadLettersView struct {
	Subscribers []string
	Subscriber  string
	Letters     []ops.DeadLetter
	Waiting     int
}

func (cn *Console) deadLetters(c *fiber.Ctx, s *session) error {
	q, subs, err := cn.querySubscribers(c)
	if err != nil {
		return cn.failErr(c, s, err)
	}
	v := deadLettersView{Subscribers: subs, Subscriber: q.Get("subscriber")}
	if v.Subscriber == "" && len(subs) > 0 {
		v.Subscriber = subs[0]
	}
	if v.Subscriber != "" {
		if v.Letters, err = cn.cfg.Operator.DeadLetters(c.UserContext(), v.Subscriber); err != nil {
			return cn.failErr(c, s, err)
		}
	}
	for _, d := range v.Letters {
		if d.RedrivenAt == nil {
			v.Waiting++
		}
	}
	return cn.render(c, fiber.StatusOK, "deadletters", view{Title: "Dead letters", Nav: "dead-letters", Session: s, Page: v, Flash: flashOf(q)})
}

// redrive redrives one dead letter (a row's button) or the dead letters of
// a confirmed plan, each through ops.Redrive. A letter redriven since the
// plan was shown is passed over (counted, not an error).
func (cn *Console) redrive(c *fiber.Ctx, s *session) error {
	reqs, err := parseRedrive(formOf(c))
	sub := formOf(c).Get("subscriber")
	if err != nil {
		cn.audit(c, s, "redrive", "subscriber", sub, "err", err)
		return cn.failErr(c, s, err)
	}
	var requested int64
	var passed int
	for _, req := range reqs {
		res, err := cn.cfg.Operator.Redrive(actx(c, s), req)
		if len(reqs) > 1 && errors.Is(err, ops.ErrNotFound) {
			passed++
			continue
		}
		if err != nil {
			cn.audit(c, s, "redrive", "subscriber", sub, "ids", len(reqs), "requested", requested, "failed_id", req.ID, "err", err)
			return cn.failErr(c, s, err)
		}
		requested += res.Requested
	}
	cn.audit(c, s, "redrive", "subscriber", sub, "ids", len(reqs), "first_id", reqs[0].ID, "requested", requested, "passed_over", passed)
	return c.Redirect("/console/dead-letters?"+url.Values{"subscriber": {sub}, "flash": {"redrive"},
		"n": {strconv.FormatInt(requested, 10)}}.Encode(), fiber.StatusSeeOther)
}

type redrivePlanView struct {
	Subscriber string
	Letters    []ops.DeadLetter // the plan: waiting, oldest first
	IDs        string           // what the confirmation posts
	More       int              // waiting letters past ops.MaxRedrivePlan, left for a next plan
}

// redrivePlan shows the dead letters "Redrive all" would redrive, and a
// confirmation form that carries exactly their ids: nothing is redriven
// until it is posted.
func (cn *Console) redrivePlan(c *fiber.Ctx, s *session) error {
	q, err := queryValues(c)
	if err != nil {
		return cn.failErr(c, s, err)
	}
	v := redrivePlanView{Subscriber: q.Get("subscriber")}
	letters, err := cn.cfg.Operator.DeadLetters(c.UserContext(), v.Subscriber)
	if err != nil {
		return cn.failErr(c, s, err)
	}
	ids := make([]string, 0, min(len(letters), ops.MaxRedrivePlan))
	for _, d := range letters {
		if d.RedrivenAt != nil {
			continue
		}
		if len(v.Letters) == ops.MaxRedrivePlan {
			v.More++
			continue
		}
		v.Letters = append(v.Letters, d)
		ids = append(ids, strconv.FormatInt(d.ID, 10))
	}
	if len(v.Letters) == 0 {
		return cn.failErr(c, s, fmt.Errorf("%w: %s has no dead letter waiting for a redrive", ops.ErrNotFound, v.Subscriber))
	}
	v.IDs = strings.Join(ids, ",")
	return cn.render(c, fiber.StatusOK, "redriveplan", view{Title: "Redrive plan", Nav: "dead-letters", Session: s, Page: v})
}

type republishPlanView struct {
	D   ops.EventDetail
	Ref string
	Res ops.RepublishResult
	// StreamSeq is the original message's stream sequence.
	StreamSeq uint64
}

// republishPlan shows what "Republish" would publish (a dry run) and to
// whom, with a confirmation form: nothing is published until it is posted.
func (cn *Console) republishPlan(c *fiber.Ctx, s *session) error {
	_, d, seq, err := cn.eventOf(c)
	if err != nil {
		return cn.failErr(c, s, err)
	}
	v := republishPlanView{D: d, Ref: d.Provider + ":" + d.EventID, StreamSeq: seq}
	if v.Res, err = cn.cfg.Operator.Republish(c.UserContext(), ops.RepublishFilter{Event: v.Ref, DryRun: true}); err != nil {
		return cn.failErr(c, s, err)
	}
	return cn.render(c, fiber.StatusOK, "republishplan", view{Title: "Republish plan", Nav: "events", Session: s, Page: v})
}
