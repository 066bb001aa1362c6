package console

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
)

// Bulk actions: from the Events page's filter, "Bulk action…"
// (GET /console/bulk: choose replay to one subscriber or republish, and
// see the plan: a dry run), then confirm (POST /console/bulk/run, admin),
// then the job page with its progress and a Cancel button (POST). A bulk
// job is one of the console's jobs (replay.go): one runs at a time.

// bulkForm is a bulk action's choices as typed.
type bulkForm struct {
	Action, Subscriber, Rate string
}

// parseBulk turns the filter and the choices into an ops request (a dry
// run unless run).
func parseBulk(q url.Values, now time.Time, run bool) (eventsQuery, bulkForm, ops.BulkRequest, error) {
	in, _, _ := parseEvents(q, now)
	form := bulkForm{Action: displayable(q.Get("action")), Subscriber: displayable(q.Get("subscriber")), Rate: displayable(q.Get("rate"))}
	v := opsValues(q)
	v.Set("dry_run", strconv.FormatBool(!run))
	if v.Get("action") == ops.BulkRepublish {
		v.Del("subscriber") // the form's select is for a replay
	}
	req, err := ops.DecodeBulk(v, now)
	return in, form, req, err
}

type bulkView struct {
	Q eventsQuery
	// EventsHref is the Events page of the filter: a whole URL, so that
	// the template escapes it once (a query interpolated after "?" would
	// be escaped again, its & and = included).
	EventsHref  string
	Form        bulkForm
	Subscribers []string
	Plan        *ops.BulkResult
	// Run is the confirmation's fields: the filter with its range
	// resolved, so that the run covers what the plan counted.
	Run     url.Values
	Where   []ops.PayloadMatch
	Jobs    []job
	Actions []string
}

func (cn *Console) bulkPage(c *fiber.Ctx, s *session) error {
	q, subs, err := cn.querySubscribers(c)
	if err != nil {
		return cn.failErr(c, s, err)
	}
	now := cn.cfg.Operator.Now()
	in, form, req, err := parseBulk(q, now, false)
	v := bulkView{Q: in, Form: form, Subscribers: subs, Where: req.Filter.Where, Jobs: cn.jobs.recent(jobBulk),
		Actions: []string{ops.BulkReplay, ops.BulkRepublish}, EventsHref: "/console/events?" + in.Values().Encode()}
	render := func(code int, msg string) error {
		return cn.render(c, code, "bulkplan", view{Title: "Bulk action", Nav: "events", Session: s, Page: v, Error: msg})
	}
	if err != nil {
		code, msg := failure(cn, c, err)
		return render(code, msg)
	}
	if form.Action == "" {
		return render(fiber.StatusOK, "") // choose the action first
	}
	res, err := cn.cfg.Operator.Bulk(c.UserContext(), req)
	attrs := []any{"action", req.Action, "subscriber", req.Subscriber, "since", timeField(req.Filter.Since), "where", ops.FormatWheres(req.Filter.Where)}
	if err != nil {
		cn.audit(c, s, "bulk dry run", append(attrs, "err", err)...)
		code, msg := failure(cn, c, err)
		return render(code, msg)
	}
	cn.audit(c, s, "bulk dry run", append(attrs, "matched", res.Matched, "eligible", res.Eligible)...)
	v.Plan = &res
	run := in.Values()
	run.Del("limit")
	run.Set("since", timeField(req.Filter.Since))
	until := req.Filter.Until
	if until.IsZero() {
		until = now // the run covers what the plan counted
	}
	run.Set("until", timeField(until))
	run.Set("action", req.Action)
	if req.Subscriber != "" {
		run.Set("subscriber", req.Subscriber)
	}
	if form.Rate != "" {
		run.Set("rate", form.Rate)
	}
	v.Run = run
	return render(fiber.StatusOK, "")
}

func (cn *Console) bulkRun(c *fiber.Ctx, s *session) error {
	_, _, req, err := parseBulk(formOf(c), cn.cfg.Operator.Now(), true)
	if err != nil {
		cn.audit(c, s, "bulk", "err", err)
		return cn.failErr(c, s, err)
	}
	// Strings of the request outlive it: copy them out of fiber's buffers.
	req.Action, req.Subscriber = utils.CopyString(req.Action), utils.CopyString(req.Subscriber)
	f := &req.Filter
	f.Provider, f.Type, f.EventID, f.Entity = utils.CopyString(f.Provider), utils.CopyString(f.Type), utils.CopyString(f.EventID), utils.CopyString(f.Entity)
	for i, w := range f.Where {
		f.Where[i] = ops.PayloadMatch{Path: utils.CopyString(w.Path), Value: utils.CopyString(w.Value)}
	}
	attrs := []any{"action", req.Action, "subscriber", req.Subscriber, "since", timeField(f.Since), "until", timeField(f.Until), "where", ops.FormatWheres(f.Where)}
	who := s.role + " " + s.name
	actor := s.actor()
	run := func(ctx context.Context, req ops.BulkRequest) (ops.BulkResult, error) {
		return cn.cfg.Operator.Bulk(hub.WithActor(ctx, actor), req)
	}
	j, started := cn.jobs.startBulk(who, req, cn.cfg.Now(), run, func(j *job) {
		r := j.BulkRes
		cn.log.Info("console action", "who", s.role, "token", s.tokenFP(), "name", s.name, "action", "bulk finished", "job", j.ID, "state", j.State,
			"matched", r.Matched, "eligible", r.Eligible, "published", r.Published, "processed", r.Processed, "skipped", r.Skipped,
			"dead_lettered", r.DeadLettered, "unsettled", r.Unsettled, "err", j.Err)
	})
	if !started {
		cn.audit(c, s, "bulk", append(attrs, "refused", "another job is running", "running_job", j.ID)...)
		c.Locals(refusalKey{}, &hub.Error{Code: hub.ECONFLICT, Message: "another replay or bulk action is running (job " + j.ID + ")"})
		return cn.render(c, fiber.StatusConflict, "error", view{Title: "Job running", Nav: "events", Session: s,
			Error: "Another replay or bulk action is running (job " + j.ID + "): wait for it to finish, or cancel it."})
	}
	cn.audit(c, s, "bulk", append(attrs, "job", j.ID)...)
	return c.Redirect("/console/bulk/jobs/"+j.ID, fiber.StatusSeeOther)
}

// bulkJobOf reads the job the path names.
func (cn *Console) bulkJobOf(c *fiber.Ctx) (job, bool) {
	id := c.Params("id")
	if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
		return job{}, false
	}
	j, ok := cn.jobs.get(id)
	return j, ok && j.Kind == jobBulk
}

func (cn *Console) bulkJob(c *fiber.Ctx, s *session) error {
	j, ok := cn.bulkJobOf(c)
	if !ok {
		return cn.fail(c, s, fiber.StatusNotFound, "No such bulk job (the console keeps the last 20 jobs, until the hub restarts).")
	}
	r := j.BulkRes
	v := jobView{J: j, Running: j.State == jobRunning, Max: max(r.Eligible, 1), Value: min(r.Published, max(r.Eligible, 1))}
	if j.State == jobDone {
		v.Value = v.Max
	}
	v.Percent = v.Value * 100 / v.Max
	refresh := 0
	if v.Running {
		refresh = 1
	}
	q := queryOrEmpty(c)
	return cn.render(c, fiber.StatusOK, "bulkjob", view{Title: "Bulk job " + j.ID, Nav: "events", Session: s, Page: v, Refresh: refresh, Flash: flashOf(q)})
}

func (cn *Console) bulkCancel(c *fiber.Ctx, s *session) error {
	j, ok := cn.bulkJobOf(c)
	if !ok {
		return cn.fail(c, s, fiber.StatusNotFound, "No such bulk job.")
	}
	cancelled := cn.jobs.cancelJob(j.ID, s.actor())
	cn.audit(c, s, "bulk cancel", "job", j.ID, "cancelled", cancelled)
	flash := "bulk-not-running"
	if cancelled {
		flash = "bulk-cancelled"
	}
	return c.Redirect("/console/bulk/jobs/"+j.ID+"?flash="+flash, fiber.StatusSeeOther)
}

// startBulk runs req as a new bulk job (start): its Cancel button
// cancels it.
func (js *jobs) startBulk(who string, req ops.BulkRequest, now time.Time, run func(context.Context, ops.BulkRequest) (ops.BulkResult, error), done func(*job)) (*job, bool) {
	j := &job{Who: who, Kind: jobBulk, Bulk: req, Started: now}
	j.Bulk.Progress = nil
	return js.start(j, func(ctx context.Context) (bool, error) {
		req.Progress = func(r ops.BulkResult) { js.set(func() { j.BulkRes = r }) }
		res, err := run(ctx, req)
		js.set(func() { j.BulkRes = res })
		return res.Cancelled || errors.Is(err, context.Canceled), err
	}, done)
}

// cancelJob cancels job id if it is running, by who (the cause its
// action's audit entry records); false if it is not.
func (js *jobs) cancelJob(id string, who hub.Actor) bool {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.list {
		if j.ID == id && j.State == jobRunning && j.cancel != nil {
			j.cancel(&hub.CancelledBy{Actor: who})
			return true
		}
	}
	return false
}
