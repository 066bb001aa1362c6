package ops

import (
	"context"

	"github.com/hookhub/hookhub/subscribers/destination/deststate"
)

// DestinationStateResult reports a change of a destination's state.
type DestinationStateResult struct {
	Destination string `json:"destination"`
	State       string `json:"state"`
	// Changed is false when the destination was in that state already.
	Changed bool `json:"changed"`
}

// SetDestinationState pauses (deststate.StatePaused) or resumes
// (deststate.StateActive) a destination, with reason saying why
// (deststate.SetState), and records it in the audit trail (actions
// "destination.pause" and "destination.resume").
func (o *Ops) SetDestinationState(ctx context.Context, name string, state deststate.State, reason string) (DestinationStateResult, error) {
	res := DestinationStateResult{Destination: name, State: string(state)}
	action := ActionDestinationResume
	if state == deststate.StatePaused {
		action = ActionDestinationPause
	}
	params := map[string]any{"destination": clip(name, maxAuditParam), "state": clip(string(state), maxAuditParam),
		"reason": clip(reason, maxAuditParam)}
	err := o.audited(ctx, action, "destination "+name, params, func() (any, error) {
		if state != deststate.StatePaused && state != deststate.StateActive {
			return nil, inputErr("state", "must be %s or %s, got %s", deststate.StatePaused, deststate.StateActive, quote(string(state)))
		}
		changed, err := deststate.SetState(ctx, o.subs, name, state, reason)
		if err != nil {
			return nil, err
		}
		res.Changed = changed
		return res, nil
	})
	return res, err
}

// RetryNowResult reports a retry-now of a destination's waiting events.
type RetryNowResult struct {
	Destination string `json:"destination"`
	// Waiting is how many parked events were waiting for a later time and
	// are due now.
	Waiting int64 `json:"waiting"`
}

// RetryDestinationNow ends the wait of every parked event of a
// destination (deststate.RetryNow: waiting for a retry, a receiver's
// Retry-After included): its running process sends them within
// deststate.ParkPollInterval, at its rate limit and concurrency. It is
// recorded in the audit trail (action "destination.retry_now").
func (o *Ops) RetryDestinationNow(ctx context.Context, name string) (RetryNowResult, error) {
	res := RetryNowResult{Destination: name}
	params := map[string]any{"destination": clip(name, maxAuditParam)}
	err := o.audited(ctx, ActionDestinationRetryNow, "destination "+name, params, func() (any, error) {
		n, err := deststate.RetryNow(ctx, o.subs, name)
		if err != nil {
			return nil, err
		}
		res.Waiting = n
		return res, nil
	})
	return res, err
}

// subscribersAndDestinations lists the subscribers (Subscribers) and the
// destinations among them: those whose tables say so (deststate.Names).
func (o *Ops) subscribersAndDestinations(ctx context.Context) (subs, dests []string, err error) {
	if subs, err = o.Subscribers(ctx); err != nil {
		return nil, nil, err
	}
	dests, err = deststate.Names(ctx, o.subs)
	return subs, dests, err
}
