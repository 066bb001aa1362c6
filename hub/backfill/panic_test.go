package backfill_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/metrics"
)

// panicSource's List panics (a parser's bug on an API's answer), with the
// key in the panic value.
type panicSource struct{}

func (panicSource) Provider() string { return "stripe" }
func (panicSource) List(context.Context, time.Time, time.Time, string) (backfill.Page, error) {
	panic("parser bug near Bearer " + stripeKey)
}

// A panic while a run lists or ingests ends that run with an error (the
// process, and `hub serve`'s other providers and webhooks, go on), counted
// as an error (never as a success), its text redacted, and the lease
// released: the next run is not refused as busy.
func TestRunPanicIsAnError(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	e, m := h.boundedEngine(nil)
	now := time.Now()
	for i := range 2 {
		var err error
		require.NotPanics(t, func() {
			_, err = e.Run(context.Background(), panicSource{}, backfill.Request{Since: now.Add(-time.Hour), Until: now})
		})
		require.ErrorIs(t, err, backfill.ErrPanic, "run %d", i)
		require.NotContains(t, err.Error(), stripeKey)
		require.Contains(t, err.Error(), "parser bug")
		require.False(t, errors.Is(err, backfill.ErrBound))
	}
	require.Equal(t, 2.0, runs(m, "stripe", metrics.BackfillError))
	require.Equal(t, 0.0, runs(m, "stripe", metrics.BackfillOK))
}
