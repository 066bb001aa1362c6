package ops

import (
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/hookhub/hookhub/internal/backoff"
)

// job runs what a replay, a bulk replay and a bulk republish share, the
// action giving it a plan and steps: the counts (res) and the progress
// callback that sees them (report); the pace (steps: chunk items a step,
// at most perSecond items a second, golang.org/x/time/rate, the first at
// once); the cancellation (a step waits for its turn or ctx's end); and
// the one audit record of a run (auditedResult).
type job[R any] struct {
	res      R
	progress func(R)
	limit    *rate.Limiter // nil: unpaced
	chunk    int
}

// newJob returns a job counting into res, reporting to progress (nil:
// nobody watches), stepping one item at a time, unpaced.
func newJob[R any](res R, progress func(R)) *job[R] {
	return &job[R]{res: res, progress: progress, chunk: 1}
}

// at paces the job's steps: chunk items a step, at most perSecond items a
// second (0: as fast as the steps go).
func (j *job[R]) at(perSecond float64, chunk int) *job[R] {
	j.chunk, j.limit = max(chunk, 1), nil
	if perSecond > 0 {
		j.limit = rate.NewLimiter(rate.Limit(perSecond), j.chunk)
	}
	return j
}

// report hands the progress callback the counts so far.
func (j *job[R]) report() {
	if j.progress != nil {
		j.progress(j.res)
	}
}

// steps runs step on the items [lo, hi) of n, a chunk at a time at the
// job's pace, and reports after each step.
func (j *job[R]) steps(ctx context.Context, n int, step func(lo, hi int) error) error {
	for lo := 0; lo < n; lo += j.chunk {
		hi := min(lo+j.chunk, n)
		if err := j.wait(ctx, hi-lo); err != nil {
			return err
		}
		if err := step(lo, hi); err != nil {
			return err
		}
		j.report()
	}
	return nil
}

// wait waits until the pace lets k more items go, or for ctx's end. Unlike
// rate.Limiter.Wait, which fails at once a wait past ctx's deadline, it
// waits for the deadline: the run ends cancelled, as any other.
func (j *job[R]) wait(ctx context.Context, k int) error {
	if j.limit == nil {
		return ctx.Err()
	}
	return backoff.Sleep(ctx, j.limit.ReserveN(time.Now(), k).Delay())
}

// auditedResult runs run under one audit record of action on target with
// params (Ops.audited), whose result is run's.
func auditedResult[R any](ctx context.Context, o *Ops, action, target string, params any, run func() (R, error)) (R, error) {
	var res R
	err := o.audited(ctx, action, target, params, func() (any, error) {
		var err error
		res, err = run()
		return res, err
	})
	return res, err
}
