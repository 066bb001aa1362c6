package ops

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// planCounts sets what a replay of res.Matched events to sub will do,
// before of them processed by sub already: a subscriber skips those
// (Skipped) and processes the rest (ToProcess); a destination sends them
// all (ToProcess), those again (Resend), and skips none.
func (o *Ops) planCounts(ctx context.Context, sub string, before int, res *ReplayResult) error {
	var err error
	if res.Destination, err = o.isDestination(ctx, sub); err != nil {
		return err
	}
	if res.Destination {
		res.Skipped, res.Resend, res.ToProcess = 0, before, res.Matched
		return nil
	}
	res.Skipped, res.ToProcess = before, res.Matched-before
	return nil
}

// isDestination reports whether sub is an HTTP destination
// (subscribers/destination): its tables say so.
func (o *Ops) isDestination(ctx context.Context, sub string) (bool, error) {
	dests, err := deststate.Names(ctx, o.subs)
	if err != nil {
		return false, err
	}
	return slices.Contains(dests, sub), nil
}

// resent counts the events of before that destination dest delivered
// again since began: an attempt of theirs delivered since then (its
// attempts table), in look-ups of deststate.MaxLastAttemptsKeys.
func (o *Ops) resent(ctx context.Context, dest string, before map[subscriber.EventKey]bool, began time.Time) (int, error) {
	ks := slices.Collect(maps.Keys(before))
	n := 0
	for chunk := range slices.Chunk(ks, deststate.MaxLastAttemptsKeys) {
		last, err := deststate.LastAttempts(ctx, o.subs, dest, chunk)
		if err != nil {
			return n, err
		}
		for _, a := range last {
			if a.Outcome == deststate.OutcomeDelivered && !a.At.Before(began) {
				n++
			}
		}
	}
	return n, nil
}
