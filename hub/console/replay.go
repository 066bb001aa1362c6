package console

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
)

// keptJobs is how many replay jobs the console remembers.
const keptJobs = 20

// Job states.
const (
	jobRunning = "running"
	jobDone    = "done"
	jobFailed  = "failed"
	// jobCancelled: an operator cancelled it (bulk.go).
	jobCancelled = "cancelled"
)

// Job kinds.
const (
	jobReplay = "replay"
	jobBulk   = "bulk"
)

// job is a replay running (or run) in the background.
type job struct {
	ID       string
	Who      string
	Kind     string // jobReplay or jobBulk
	Req      ops.ReplayRequest
	Started  time.Time
	Finished time.Time
	State    string
	Res      ops.ReplayResult
	Err      string
	// A bulk action's (bulk.go).
	Bulk    ops.BulkRequest
	BulkRes ops.BulkResult
	// cancel's cause says who cancelled the job (hub.CancelledBy), for
	// the action's audit entry.
	cancel context.CancelCauseFunc
}

// jobs runs one replay at a time and remembers the last keptJobs.
type jobs struct {
	mu     sync.Mutex
	list   []*job // oldest first
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
}

// errHubStopping is the cause of a job cancelled by the hub's stop.
var errHubStopping = errors.New("the hub stopped")

func newJobs() *jobs {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &jobs{ctx: ctx, cancel: cancel}
}

// stop cancels a running job and waits for it.
func (js *jobs) stop() {
	js.cancel(errHubStopping)
	js.wg.Wait()
}

// start runs j as a new job unless a job is running (then it returns
// that one and false). run gets the job's context, cancelled by cancelJob
// (a bulk job's Cancel button) or by stop, records its counts with set,
// and says whether it ended cancelled; done gets a copy of the ended job.
func (js *jobs) start(j *job, run func(ctx context.Context) (cancelled bool, err error), done func(*job)) (*job, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, r := range js.list {
		if r.State == jobRunning {
			return r, false
		}
	}
	ctx, cancel := context.WithCancelCause(js.ctx)
	j.ID, j.State, j.cancel = randomHex(8), jobRunning, cancel
	js.list = append(js.list, j)
	if len(js.list) > keptJobs {
		js.list = js.list[len(js.list)-keptJobs:]
	}
	js.wg.Add(1)
	go func() {
		defer js.wg.Done()
		defer cancel(nil)
		cancelled, err := run(ctx)
		js.mu.Lock()
		j.Finished = time.Now()
		switch {
		case cancelled:
			j.State = jobCancelled
		case err != nil:
			j.State, j.Err = jobFailed, err.Error()
		default:
			j.State = jobDone
		}
		snapshot := *j
		js.mu.Unlock()
		done(&snapshot)
	}()
	return j, true
}

// set records a running job's counts.
func (js *jobs) set(record func()) {
	js.mu.Lock()
	defer js.mu.Unlock()
	record()
}

// startReplay runs req as a new replay job (start).
func (js *jobs) startReplay(who string, req ops.ReplayRequest, now time.Time, run func(context.Context, ops.ReplayRequest) (ops.ReplayResult, error), done func(*job)) (*job, bool) {
	j := &job{Who: who, Kind: jobReplay, Req: req, Started: now}
	return js.start(j, func(ctx context.Context) (bool, error) {
		req.Progress = func(r ops.ReplayResult) { js.set(func() { j.Res = r }) }
		res, err := run(ctx, req)
		js.set(func() { j.Res = res })
		return false, err
	}, done)
}

// get returns a copy of job id.
func (js *jobs) get(id string) (job, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.list {
		if j.ID == id {
			return *j, true
		}
	}
	return job{}, false
}

// recent returns copies of the jobs of kind, newest first.
func (js *jobs) recent(kind string) []job {
	js.mu.Lock()
	defer js.mu.Unlock()
	out := make([]job, 0, len(js.list))
	for i := len(js.list) - 1; i >= 0; i-- {
		if js.list[i].Kind == kind {
			out = append(out, *js.list[i])
		}
	}
	return out
}

type replayView struct {
	Subscribers []string
	Form        replayForm
	Jobs        []job
}

func (cn *Console) replayPage(c *fiber.Ctx, s *session) error {
	subs, err := cn.cfg.Operator.Subscribers(c.UserContext())
	if err != nil {
		return cn.failErr(c, s, err)
	}
	q := queryOrEmpty(c)
	v := replayView{Subscribers: subs, Form: replayForm{Subscriber: q.Get("subscriber"), Since: "24h"}, Jobs: cn.jobs.recent(jobReplay)}
	return cn.render(c, fiber.StatusOK, "replay", view{Title: "Replay", Nav: "replay", Session: s, Page: v})
}

type planView struct {
	Form replayForm // what the confirmation posts: the range resolved
	Res  ops.ReplayResult
}

// timeField writes a resolved time for a form: RFC 3339 with nanoseconds.
func timeField(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (cn *Console) replayPlan(c *fiber.Ctx, s *session) error {
	_, req, err := parseReplay(formOf(c), cn.cfg.Operator.Now(), false)
	if err != nil {
		cn.audit(c, s, "replay dry run", "err", err)
		return cn.failErr(c, s, err)
	}
	res, err := cn.cfg.Operator.Replay(actx(c, s), req)
	attrs := []any{"subscriber", req.Subscriber, "since", timeField(req.Since), "until", timeField(req.Until), "subject", req.Subject}
	if err != nil {
		cn.audit(c, s, "replay dry run", append(attrs, "err", err)...)
		return cn.failErr(c, s, err)
	}
	cn.audit(c, s, "replay dry run", append(attrs, "matched", res.Matched, "to_process", res.ToProcess, "skipped", res.Skipped)...)
	v := planView{Form: replayForm{Subscriber: req.Subscriber, Since: timeField(req.Since), Until: timeField(req.Until), Subject: req.Subject}, Res: res}
	return cn.render(c, fiber.StatusOK, "plan", view{Title: "Replay plan", Nav: "replay", Session: s, Page: v})
}

func (cn *Console) replayRun(c *fiber.Ctx, s *session) error {
	_, req, err := parseReplay(formOf(c), cn.cfg.Operator.Now(), true)
	if err != nil {
		cn.audit(c, s, "replay", "err", err)
		return cn.failErr(c, s, err)
	}
	// Strings of the request outlive it: copy them out of fiber's buffers.
	req.Subscriber, req.Subject = utils.CopyString(req.Subscriber), utils.CopyString(req.Subject)
	attrs := []any{"subscriber", req.Subscriber, "since", timeField(req.Since), "until", timeField(req.Until), "subject", req.Subject}
	who := s.role + " " + s.name
	actor := s.actor()
	run := func(ctx context.Context, req ops.ReplayRequest) (ops.ReplayResult, error) {
		return cn.cfg.Operator.Replay(hub.WithActor(ctx, actor), req)
	}
	j, started := cn.jobs.startReplay(who, req, cn.cfg.Now(), run, func(j *job) {
		cn.log.Info("console action", "who", s.role, "token", s.tokenFP(), "name", s.name, "action", "replay finished", "job", j.ID,
			"state", j.State, "matched", j.Res.Matched, "delivered", j.Res.Delivered, "processed", j.Res.Processed,
			"skipped", j.Res.Skipped, "dead_lettered", j.Res.DeadLettered, "unsettled", j.Res.Unsettled, "err", j.Err)
	})
	if !started {
		cn.audit(c, s, "replay", append(attrs, "refused", "another replay is running", "running_job", j.ID)...)
		return cn.render(c, fiber.StatusConflict, "error", view{Title: "Replay running", Nav: "replay", Session: s,
			Error: "Another replay is running (job " + j.ID + "): wait for it to finish.", Page: nil})
	}
	cn.audit(c, s, "replay", append(attrs, "job", j.ID)...)
	return c.Redirect("/console/replay/jobs/"+j.ID, fiber.StatusSeeOther)
}

// jobView is a replay or bulk job's page (Finished: a replay's).
type jobView struct {
	J        job
	Value    int
	Max      int
	Percent  int
	Running  bool
	Finished string
}

func (cn *Console) replayJob(c *fiber.Ctx, s *session) error {
	id := c.Params("id")
	if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
		return cn.fail(c, s, fiber.StatusNotFound, "No such replay job.")
	}
	j, ok := cn.jobs.get(id)
	if !ok || j.Kind != jobReplay {
		return cn.fail(c, s, fiber.StatusNotFound, "No such replay job (the console keeps the last 20, until the hub restarts).")
	}
	v := jobView{J: j, Running: j.State == jobRunning, Max: max(2*j.Res.Matched, 1)}
	v.Value = min(j.Res.Delivered+j.Res.Processed+j.Res.Skipped+j.Res.Resent+j.Res.DeadLettered, v.Max)
	if j.State != jobRunning {
		v.Value = v.Max
	}
	v.Percent = v.Value * 100 / v.Max
	refresh := 0
	if v.Running {
		refresh = 1
	}
	return cn.render(c, fiber.StatusOK, "job", view{Title: "Replay job " + j.ID, Nav: "replay", Session: s, Page: v, Refresh: refresh})
}
