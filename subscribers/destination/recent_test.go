package destination_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
)

// RecentAttempts keeps the destination's newest attempts whatever their
// event, oldest first, bounded; an unknown destination is
// ErrUnknownDestination.
func TestStoreRecentAttempts(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := storeDB(t, "billing", "crm")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Microsecond)

	got, err := deststate.RecentAttempts(ctx, pool, "billing", 10)
	require.NoError(t, err)
	require.Empty(t, got)

	for i, ev := range []string{"evt_a", "evt_b", "evt_a", "evt_c", "evt_d"} {
		require.NoError(t, deststate.RecordAttempt(ctx, pool, destination.Attempt{Destination: "billing", Provider: "paddle", EventID: ev,
			At: t0.Add(time.Duration(i) * time.Minute), Status: 500 + i, Latency: time.Duration(i+1) * time.Millisecond, Outcome: destination.OutcomeFailed}))
	}
	require.NoError(t, deststate.RecordAttempt(ctx, pool, destination.Attempt{Destination: "crm", Provider: "paddle", EventID: "evt_x",
		At: t0.Add(time.Hour), Status: 200, Outcome: destination.OutcomeDelivered}))

	got, err = deststate.RecentAttempts(ctx, pool, "billing", 3)
	require.NoError(t, err)
	require.Len(t, got, 3)
	var ids []string
	for _, a := range got {
		ids = append(ids, a.EventID)
		require.Equal(t, "billing", a.Destination)
	}
	require.Equal(t, []string{"evt_a", "evt_c", "evt_d"}, ids, "the newest three, oldest first")
	require.Equal(t, 504, got[2].Status)
	require.Equal(t, 5*time.Millisecond, got[2].Latency)

	got, err = deststate.RecentAttempts(ctx, pool, "billing", 0)
	require.NoError(t, err)
	require.Len(t, got, 5, "the default limit")

	_, err = deststate.RecentAttempts(ctx, pool, "nobody", 3)
	require.ErrorIs(t, err, destination.ErrUnknownDestination)
	_, err = deststate.RecentAttempts(ctx, pool, "no body", 3)
	require.ErrorIs(t, err, destination.ErrUnknownDestination)
}
