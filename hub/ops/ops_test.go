package ops_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/hubtest"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
)

// archive commits deliveries the way the hub does and returns their ids.
func archive(t *testing.T, pool *pgxpool.Pool, at time.Time, eventIDs ...string) []uuid.UUID {
	t.Helper()
	var ds []hub.Delivery
	for _, id := range eventIDs {
		ds = append(ds, hub.Delivery{
			ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: id, EventType: "subscription.created",
			Body: []byte(`{"event_id":"` + id + `","event_type":"subscription.created"}`), Signature: "ts=1;h1=ab", ReceivedAt: at,
		})
	}
	_, err := store.New(pool).Ingest(context.Background(), ds)
	require.NoError(t, err)
	ids := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		ids[i] = d.ArchiveID
	}
	return ids
}

func TestListAndShowEvents(t *testing.T) {
	t.Parallel()
	pool, _ := hubtest.Pool(t)
	o := ops.New(pool, nil, "WEBHOOKS")
	ctx := context.Background()
	now := time.Now()
	ids := archive(t, pool, now.Add(-2*time.Hour), "evt_old")
	for range 9 {
		archive(t, pool, now.Add(-time.Hour), "evt_old") // 9 duplicates
	}
	archive(t, pool, now.Add(-time.Minute), "evt_new")

	rows, err := o.ListEvents(ctx, ops.EventFilter{Limit: ops.DefaultListLimit})
	require.NoError(t, err)
	require.Len(t, rows, 2, "first deliveries only by default")
	require.Equal(t, "evt_new", rows[0].EventID, "newest first")
	require.Equal(t, 10, rows[1].Deliveries)

	rows, err = o.ListEvents(ctx, ops.EventFilter{Status: hub.Skipped, Limit: ops.DefaultListLimit})
	require.NoError(t, err)
	require.Len(t, rows, 9)

	rows, err = o.ListEvents(ctx, ops.EventFilter{Since: now.Add(-90 * time.Minute), Limit: ops.DefaultListLimit})
	require.NoError(t, err)
	require.Len(t, rows, 1)

	_, err = o.ListEvents(ctx, ops.EventFilter{Since: now, Until: now.Add(-time.Hour), Limit: ops.DefaultListLimit})
	require.ErrorIs(t, err, ops.ErrInvalid)

	for _, ref := range []string{"paddle:evt_old", ids[0].String()} {
		d, err := o.ShowEvent(ctx, ref)
		require.NoError(t, err, ref)
		require.Equal(t, "evt_old", d.EventID)
		require.Len(t, d.Deliveries, 10)
		require.Equal(t, "PENDING", d.Status)
		require.JSONEq(t, `{"event_id":"evt_old","event_type":"subscription.created"}`, string(d.Payload))
		require.Equal(t, "paddle.subscription.created", d.Subject)
	}
	_, err = o.ShowEvent(ctx, "paddle:evt_missing")
	require.ErrorIs(t, err, ops.ErrNotFound)
	_, err = o.ShowEvent(ctx, "nonsense")
	require.ErrorIs(t, err, ops.ErrInvalid)
	_, err = o.ShowEvent(ctx, uuid.NewString())
	require.ErrorIs(t, err, ops.ErrNotFound)
}

func TestPurgeKeepsDedupAndPending(t *testing.T) {
	t.Parallel()
	pool, _ := hubtest.Pool(t)
	o := ops.New(pool, nil, "WEBHOOKS")
	ctx := context.Background()
	old := time.Now().Add(-100 * 24 * time.Hour)
	var events []string
	for i := range 25 {
		events = append(events, fmt.Sprintf("evt_%d", i))
	}
	archive(t, pool, old, events...)
	archive(t, pool, old, "evt_0", "evt_1") // duplicates
	// Mark all but one published; the PENDING one must survive the purge.
	_, err := pool.Exec(ctx, `UPDATE webhook_events SET processing_status = 'PROCESSED' WHERE processing_status = 'PENDING' AND event_id <> 'evt_24'`)
	require.NoError(t, err)
	archive(t, pool, time.Now(), "evt_recent")

	res, err := o.Purge(ctx, ops.PurgeRequest{OlderThan: 90 * 24 * time.Hour, BatchSize: 10, DryRun: true})
	require.NoError(t, err)
	require.EqualValues(t, 26, res.Rows)
	res, err = o.Purge(ctx, ops.PurgeRequest{OlderThan: 90 * 24 * time.Hour, BatchSize: 10})
	require.NoError(t, err)
	require.EqualValues(t, 26, res.Rows)
	require.Equal(t, 3, res.Batches)
	require.EqualValues(t, 1, res.PendingKept, "evt_24 is still the outbox's")

	var archiveRows, dedup int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_event_status`).Scan(&archiveRows))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM processed_webhook_events`).Scan(&dedup))
	require.Equal(t, 2, archiveRows, "the PENDING row and the recent one remain")
	require.Equal(t, 26, dedup, "dedup rows outlive the archive")

	// The dedup row still answers a retry of a purged event as a duplicate.
	out, err := store.New(pool).Ingest(ctx, []hub.Delivery{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle",
		EventID: "evt_3", EventType: "subscription.created", Body: []byte(`{}`), ReceivedAt: time.Now()}})
	require.NoError(t, err)
	require.True(t, out[0].Duplicate)

	// show still finds the event through its dedup row.
	d, err := o.ShowEvent(ctx, "paddle:evt_3")
	require.NoError(t, err)
	require.Len(t, d.Deliveries, 1, "only the retry after the purge")
}

func TestStatusWithoutNATS(t *testing.T) {
	t.Parallel()
	pool, _ := hubtest.Pool(t)
	o := ops.New(pool, nil, "WEBHOOKS")
	archive(t, pool, time.Now().Add(-time.Minute), "evt_a", "evt_b")
	st, err := o.Status(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 2, st.OutboxPending)
	require.InDelta(t, 60, st.OldestAgeSec, 10)
	require.Nil(t, st.Stream)
	require.NotEmpty(t, st.StreamError)
}
