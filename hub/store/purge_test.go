package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

// statusCounts counts the archive rows per status, as the view gives them.
func statusCounts(t *testing.T, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT processing_status, count(*) FROM webhook_event_status GROUP BY 1`)
	require.NoError(t, err)
	out := map[string]int{}
	var st string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&st, &n}, func() error { out[st] = n; return nil })
	require.NoError(t, err)
	return out
}

// purgeAll runs PurgeArchive batches until one examines fewer rows than
// its limit, and returns the rows deleted and the batches run.
func purgeAll(t *testing.T, s *store.Store, cutoff time.Time, batch int, includeFailed bool) (int64, int) {
	t.Helper()
	var deleted int64
	for batches := 1; ; batches++ {
		examined, n, err := s.PurgeArchive(context.Background(), cutoff, batch, includeFailed)
		require.NoError(t, err)
		deleted += n
		if examined < int64(batch) {
			return deleted, batches
		}
	}
}

func TestPurgeStates(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
	ctx := context.Background()
	archiveScenario(t, s, pool, time.Now().Add(-10*24*time.Hour))
	// Young rows, in every state a purge could delete.
	insertStates(t, pool, stateRow{eventID: "young_older", status: hub.Processed, at: time.Now(), seq: 1})
	young := delivery("young_new", `{}`)
	_, err := s.Ingest(ctx, []hub.Delivery{young, delivery("young_new", `{}`)})
	require.NoError(t, err)
	require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: young.ArchiveID, Seq: 99}}))
	cutoff := time.Now().Add(-24 * time.Hour)
	before := statusCounts(t, pool)
	require.Equal(t, map[string]int{"PROCESSED": 4, "PENDING": 2, "FAILED": 3, "SKIPPED": 3}, before)

	counts, err := s.PurgeCounts(ctx, cutoff)
	require.NoError(t, err)
	require.Equal(t, hub.PurgeCounts{Archived: 9, Pending: 2, Failed: 3}, counts)
	require.EqualValues(t, 4, counts.Purgeable(false))
	require.EqualValues(t, 7, counts.Purgeable(true))

	deleted, batches := purgeAll(t, s, cutoff, 2, false)
	require.EqualValues(t, 4, deleted, "SKIPPED and PROCESSED")
	require.Equal(t, 3, batches)
	require.Equal(t, map[string]int{"PROCESSED": 2, "PENDING": 2, "FAILED": 3, "SKIPPED": 1}, statusCounts(t, pool),
		"the young rows, PENDING (both in the outbox) and FAILED (all three) remain")

	counts, err = s.PurgeCounts(ctx, cutoff)
	require.NoError(t, err)
	require.Equal(t, hub.PurgeCounts{Archived: 5, Pending: 2, Failed: 3}, counts)
	require.Zero(t, counts.Purgeable(false))

	deleted, _ = purgeAll(t, s, cutoff, 2, true)
	require.EqualValues(t, 3, deleted, "FAILED when asked")
	require.Equal(t, map[string]int{"PROCESSED": 2, "PENDING": 2, "SKIPPED": 1}, statusCounts(t, pool))
	deleted, _ = purgeAll(t, s, cutoff, 2, true)
	require.Zero(t, deleted, "the events waiting for JetStream are never purged")

	var dedup int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM processed_webhook_events`).Scan(&dedup))
	require.Equal(t, 9, dedup, "dedup rows are never purged")
	// The outbox still publishes what it held.
	rows, err := s.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, rows, 1, "new_outbox (older_pending is not due for an hour)")
	require.Equal(t, "new_outbox", rows[0].EventID)

	_, _, err = s.PurgeArchive(ctx, cutoff, 0, false)
	require.Error(t, err)
}

// A published event put back into the outbox (a stream restore) is no
// longer purgeable, including when the restore commits while the purge is deciding.
func TestPurgeKeepsRequeuedEvents(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
	ctx := context.Background()
	old := time.Now().Add(-10 * 24 * time.Hour)
	cutoff := time.Now().Add(-24 * time.Hour)
	older := insertStates(t, pool, stateRow{eventID: "older", status: hub.Processed, at: old, seq: 1})
	current := deliveryAt("current", old)
	_, err := s.Ingest(ctx, []hub.Delivery{current})
	require.NoError(t, err)
	require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: current.ArchiveID, Seq: 2, PublishedAt: old}}))

	n, err := s.Requeue(ctx, []uuid.UUID{older[0], current.ArchiveID}, time.Now(), "stream restored")
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	deleted, _ := purgeAll(t, s, cutoff, 10, true)
	require.Zero(t, deleted)
	require.Equal(t, map[string]int{"PENDING": 2}, statusCounts(t, pool))
}

// The race a purge must not lose: a restore puts a published event back
// into the outbox after the purge chose its rows but before it deleted
// them. The purge waits for the restore and keeps the row.
func TestPurgeWaitsForConcurrentRequeue(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		requeue string // what Requeue writes, uncommitted while the purge runs
	}{
		{"published", `UPDATE processed_webhook_events SET next_attempt_at = now(), stream_seq = NULL, published_at = NULL
			WHERE event_id = 'evt_race'`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pool, _ := hubdb.Pool(t)
			s := store.New(pool)
			ctx := context.Background()
			old := time.Now().Add(-10 * 24 * time.Hour)
			d := deliveryAt("evt_race", old)
			_, err := s.Ingest(ctx, []hub.Delivery{d})
			require.NoError(t, err)
			require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: d.ArchiveID, Seq: 1}}))
			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			_, err = tx.Exec(ctx, c.requeue)
			require.NoError(t, err)

			type result struct {
				deleted int64
				err     error
			}
			done := make(chan result, 1)
			go func() {
				_, deleted, err := s.PurgeArchive(ctx, time.Now().Add(-24*time.Hour), 10, false)
				done <- result{deleted, err}
			}()
			// The purge waits for the restore's row lock.
			require.Eventually(t, func() bool {
				var waiting bool
				err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%WITH candidates%')`).Scan(&waiting)
				return err == nil && waiting
			}, 30*time.Second, 10*time.Millisecond)
			require.NoError(t, tx.Commit(ctx))
			r := <-done
			require.NoError(t, r.err)
			require.Zero(t, r.deleted, "the event is back in the outbox: its archive row stays")
			require.Equal(t, 1, statusCounts(t, pool)["PENDING"])
		})
	}
}
