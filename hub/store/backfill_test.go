package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
)

// A provider's checkpoint: one run holds it at a time, an unfinished run
// is continued on its own window, a finished one starts over, and origin
// api is archived as given.
func TestBackfillCheckpoint(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	until := since.Add(72 * time.Hour)

	_, found, err := st.BackfillCheckpoint(ctx, "stripe")
	require.NoError(t, err)
	require.False(t, found)
	cp, err := st.AcquireBackfill(ctx, "stripe", "a", since, until, false, time.Minute)
	require.NoError(t, err)
	require.Equal(t, int64(0), cp.Pages)
	_, err = st.AcquireBackfill(ctx, "stripe", "b", since, until, false, time.Minute)
	require.ErrorIs(t, err, store.ErrBackfillBusy)

	cp.Cursor, cp.Pages, cp.Listed, cp.Already, cp.Ingested = "evt_20", 1, 20, 14, 6
	require.NoError(t, st.SaveBackfill(ctx, "a", cp, time.Minute))
	require.ErrorIs(t, st.SaveBackfill(ctx, "b", cp, time.Minute), store.ErrBackfillBusy)
	require.NoError(t, st.ReleaseBackfill(ctx, "stripe", "a"))

	// Continued by another run, on the saved window, whatever it asks.
	cp2, err := st.AcquireBackfill(ctx, "stripe", "b", since.Add(time.Hour), until.Add(time.Hour), false, time.Minute)
	require.NoError(t, err)
	require.Equal(t, "evt_20", cp2.Cursor)
	require.True(t, cp2.Since.Equal(since) && cp2.Until.Equal(until))
	require.Equal(t, int64(6), cp2.Ingested)

	// A --redeliver run's count is kept as well.
	cp2.Redelivered = 3
	require.NoError(t, st.SaveBackfill(ctx, "b", cp2, time.Minute))
	cp2b, found, err := st.BackfillCheckpoint(ctx, "stripe")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, int64(3), cp2b.Redelivered)

	// Finished: the next run starts over on its own window.
	cp2.Cursor, cp2.CompletedAt = "", time.Now()
	require.NoError(t, st.SaveBackfill(ctx, "b", cp2, time.Minute))
	cp3, err := st.AcquireBackfill(ctx, "stripe", "c", since.Add(time.Hour), until.Add(time.Hour), false, time.Minute)
	require.NoError(t, err, "a finished run released its lease")
	require.True(t, cp3.Since.Equal(since.Add(time.Hour)))
	require.Equal(t, int64(0), cp3.Pages)
	require.False(t, cp3.Done())

	// --restart drops an unfinished run.
	cp3.Cursor, cp3.Pages = "evt_9", 1
	require.NoError(t, st.SaveBackfill(ctx, "c", cp3, time.Minute))
	cp4, err := st.AcquireBackfill(ctx, "stripe", "c", since, until, true, time.Minute)
	require.NoError(t, err)
	require.Equal(t, "", cp4.Cursor)

	// KnownEvents and origin.
	_, err = st.Ingest(ctx, []hub.Delivery{
		{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "stripe", EventID: "evt_a", EventType: "invoice.paid", Body: []byte(`{}`), ReceivedAt: time.Now()},
		{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "stripe", EventID: "evt_b", EventType: "invoice.paid", Body: []byte(`{}`), ReceivedAt: time.Now(), Origin: hub.OriginAPI},
	})
	require.NoError(t, err)
	known, err := st.KnownEvents(ctx, "stripe", []string{"evt_a", "evt_b", "evt_c"})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"evt_a": true, "evt_b": true}, known)
	ds, err := st.Deliveries(ctx, "stripe", "evt_b", 0)
	require.NoError(t, err)
	require.Equal(t, hub.OriginAPI, ds[0].Origin)
	ds, err = st.Deliveries(ctx, "stripe", "evt_a", 0)
	require.NoError(t, err)
	require.Equal(t, hub.OriginWebhook, ds[0].Origin)
}

// Continuing an unfinished run counts it (Resumes), starting over resets
// the count; a lease is renewed by its owner only, and taken back by
// TakeBackfillLease whoever holds it, which names the holder.
func TestBackfillResumesAndLeases(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	since := time.Now().Add(-time.Hour)
	until := time.Now()

	_, found, err := st.TakeBackfillLease(ctx, "paddle")
	require.NoError(t, err)
	require.False(t, found)
	cp, err := st.AcquireBackfill(ctx, "paddle", "a", since, until, false, time.Minute)
	require.NoError(t, err)
	require.Equal(t, 0, cp.Resumes)
	require.Equal(t, "a", cp.LeaseOwner)
	require.True(t, cp.LeaseUntil.After(time.Now()))
	require.NoError(t, st.RenewBackfill(ctx, "paddle", "a", time.Hour))
	require.ErrorIs(t, st.RenewBackfill(ctx, "paddle", "b", time.Hour), store.ErrBackfillBusy)

	// Not a page saved yet: the next run starts over (its own window).
	require.NoError(t, st.ReleaseBackfill(ctx, "paddle", "a"))
	cp, err = st.AcquireBackfill(ctx, "paddle", "b", since.Add(time.Minute), until, false, time.Minute)
	require.NoError(t, err)
	require.True(t, cp.Since.Equal(since.Add(time.Minute).Truncate(time.Microsecond)))
	cp.Cursor, cp.Pages = "evt_1", 1
	require.NoError(t, st.SaveBackfill(ctx, "b", cp, time.Hour))

	prev, found, err := st.TakeBackfillLease(ctx, "paddle")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "b", prev.LeaseOwner)
	require.True(t, prev.LeaseUntil.After(time.Now().Add(50*time.Minute)))
	require.ErrorIs(t, st.RenewBackfill(ctx, "paddle", "b", time.Hour), store.ErrBackfillBusy, "taken back")
	for i := 1; i <= 2; i++ {
		cp, err = st.AcquireBackfill(ctx, "paddle", "c", since, until, false, time.Minute)
		require.NoError(t, err)
		require.Equal(t, i, cp.Resumes)
		require.Equal(t, "evt_1", cp.Cursor)
		require.NoError(t, st.ReleaseBackfill(ctx, "paddle", "c"))
	}
	cp, err = st.AcquireBackfill(ctx, "paddle", "c", since, until, true, time.Minute)
	require.NoError(t, err)
	require.Equal(t, 0, cp.Resumes)
	require.Empty(t, cp.Cursor)
	now, found, err := st.BackfillCheckpoint(ctx, "paddle")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "c", now.LeaseOwner)
}
