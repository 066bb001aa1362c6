package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

func TestPublishedBetweenAndRequeue(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
	ctx := context.Background()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)

	// Ten events, the i-th acknowledged at base + i minutes; one more
	// never published, one FAILED.
	var ds []hub.Delivery
	for i := range 12 {
		ds = append(ds, delivery(fmt.Sprintf("evt_%02d", i), `{}`))
	}
	ds[11].Error = "cannot publish"
	_, err := s.Ingest(ctx, ds)
	require.NoError(t, err)
	var results []hub.PublishResult
	for i := range 10 {
		results = append(results, hub.PublishResult{ArchiveID: ds[i].ArchiveID, Seq: uint64(i + 1), PublishedAt: base.Add(time.Duration(i) * time.Minute)})
	}
	require.NoError(t, s.RecordPublished(ctx, results))

	// Acknowledged in [base+2m, base+8m), read three at a time.
	page := hub.PublishedPage{ReceivedSince: base.Add(-time.Hour), From: base.Add(2 * time.Minute), Until: base.Add(8 * time.Minute), Limit: 3}
	var got []string
	for {
		events, err := s.PublishedBetween(ctx, page)
		require.NoError(t, err)
		for _, e := range events {
			require.Equal(t, "paddle", e.Provider)
			got = append(got, e.EventID)
		}
		if len(events) < page.Limit {
			break
		}
		page.After = events[len(events)-1]
	}
	require.ElementsMatch(t, []string{"evt_02", "evt_03", "evt_04", "evt_05", "evt_06", "evt_07"}, got)

	// Only the providers asked for.
	events, err := s.PublishedBetween(ctx, hub.PublishedPage{ReceivedSince: base.Add(-time.Hour), From: base, Until: base.Add(time.Hour),
		Providers: []string{"clerk"}, Limit: 100})
	require.NoError(t, err)
	require.Empty(t, events)
	events, err = s.PublishedBetween(ctx, hub.PublishedPage{ReceivedSince: base.Add(-time.Hour), From: base, Until: base.Add(time.Hour),
		Providers: []string{"clerk", "paddle"}, Limit: 100})
	require.NoError(t, err)
	require.Len(t, events, 10)

	// Received after ReceivedSince only.
	events, err = s.PublishedBetween(ctx, hub.PublishedPage{ReceivedSince: time.Now().Add(time.Hour), From: base, Until: base.Add(time.Hour), Limit: 100})
	require.NoError(t, err)
	require.Empty(t, events)

	// Requeue: only PROCESSED rows acknowledged before the cutoff.
	ids := []uuid.UUID{ds[2].ArchiveID, ds[5].ArchiveID, ds[9].ArchiveID, ds[10].ArchiveID, ds[11].ArchiveID}
	n, err := s.Requeue(ctx, ids, base.Add(6*time.Minute), "requeued: test")
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "evt_02 and evt_05; evt_09 was acknowledged after the cutoff, evt_10 and evt_11 were never published")
	n, err = s.Requeue(ctx, ids, base.Add(6*time.Minute), "requeued: test")
	require.NoError(t, err)
	require.Zero(t, n, "PENDING already")

	var status, errMsg string
	var seq *int64
	var published *time.Time
	var due time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT processing_status, error_message, stream_seq, published_at, next_attempt_at
		FROM webhook_event_status WHERE id = $1`, ds[2].ArchiveID).Scan(&status, &errMsg, &seq, &published, &due))
	require.Equal(t, "PENDING", status)
	require.Equal(t, "requeued: test", errMsg)
	require.Nil(t, seq)
	require.Nil(t, published)
	require.WithinDuration(t, time.Now(), due, time.Minute, "due now")

	// The relay claims it.
	claimed, err := claimAndRecord(ctx, s, 10, func(rows []hub.OutboxRow) []hub.PublishResult {
		var out []hub.PublishResult
		for _, r := range rows {
			out = append(out, hub.PublishResult{ArchiveID: r.ArchiveID, Seq: 100})
		}
		return out
	})
	require.NoError(t, err)
	require.Equal(t, 3, claimed, "the two re-queued rows and the one never published")
	n, err = s.Requeue(ctx, nil, time.Now(), "nothing")
	require.NoError(t, err)
	require.Zero(t, n)
}
