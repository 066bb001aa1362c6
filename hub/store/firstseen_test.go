package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

// FirstSeen answers with the first delivery's time of each event the hub
// accepted (a duplicate later changes nothing), leaves out the others, and
// refuses keys past its bound.
func TestFirstSeen(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	st := store.New(pool)
	ctx := context.Background()
	at := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	_, err := st.Ingest(ctx, []hub.Delivery{statsDelivery("evt_fs_1", at), statsDelivery("evt_fs_2", at.Add(time.Second))})
	require.NoError(t, err)
	_, err = st.Ingest(ctx, []hub.Delivery{statsDelivery("evt_fs_1", at.Add(time.Minute))}) // a duplicate
	require.NoError(t, err)

	got, err := st.FirstSeen(ctx, []string{"paddle", "paddle", "paddle", "clerk"}, []string{"evt_fs_1", "evt_fs_2", "evt_nope", "evt_fs_1"})
	require.NoError(t, err)
	require.Len(t, got, 2)
	byID := map[string]time.Time{}
	for _, e := range got {
		require.Equal(t, "paddle", e.Provider)
		byID[e.EventID] = e.FirstSeen
	}
	require.True(t, byID["evt_fs_1"].Equal(at), "%s", byID["evt_fs_1"])
	require.True(t, byID["evt_fs_2"].Equal(at.Add(time.Second)))

	got, err = st.FirstSeen(ctx, nil, nil)
	require.NoError(t, err)
	require.Empty(t, got)
	_, err = st.FirstSeen(ctx, []string{"paddle"}, nil)
	require.Error(t, err)
	many := make([]string, store.MaxFirstSeenKeys+1)
	_, err = st.FirstSeen(ctx, many, many)
	require.ErrorContains(t, err, "at most 10000")
}
