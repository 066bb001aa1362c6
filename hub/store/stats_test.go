package store_test

import (
	"context"
	"fmt"
	"slices"
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

func statsDelivery(eventID string, at time.Time) hub.Delivery {
	return hub.Delivery{
		ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: eventID,
		EventType: "subscription.created", Body: []byte(`{"event_id":"` + eventID + `"}`), Signature: "ts=1;h1=00",
		ReceivedAt: at,
	}
}

// statsFromView counts what the view webhook_event_status says, the
// definition of every row's status, in the shape of store.Counts.
func statsFromView(t *testing.T, pool *pgxpool.Pool, since time.Time) store.Counts {
	t.Helper()
	var c store.Counts
	require.NoError(t, pool.QueryRow(context.Background(), `
		SELECT count(*),
		       count(*) FILTER (WHERE processing_status = 'SKIPPED'),
		       count(*) FILTER (WHERE processing_status = 'PENDING'),
		       count(*) FILTER (WHERE processing_status = 'PROCESSED'),
		       count(*) FILTER (WHERE processing_status = 'FAILED')
		FROM webhook_event_status WHERE created_at >= $1`, since).
		Scan(&c.ArchiveRows, &c.Duplicates, &c.Pending, &c.Published, &c.Failed))
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM processed_webhook_events WHERE processed_at >= $1`, since).Scan(&c.DedupRows))
	return c
}

// TestStatsCounts counts events in every state, whose state is on the
// dedup row or (FAILED at ingest) on the archive row, and agrees with the
// view.
func TestStatsCounts(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	now := time.Now()

	published, pending, gaveUp := statsDelivery("evt_published", now), statsDelivery("evt_pending", now), statsDelivery("evt_gave_up", now)
	unpublishable := statsDelivery("evt_unpublishable", now)
	unpublishable.Error = "type cannot form a subject"
	_, err := s.Ingest(ctx, []hub.Delivery{published, pending, gaveUp, unpublishable, statsDelivery("evt_published", now)})
	require.NoError(t, err)
	require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{
		{ArchiveID: published.ArchiveID, Seq: 1},
		{ArchiveID: pending.ArchiveID, Err: "nats down", RetryIn: time.Hour},
		{ArchiveID: gaveUp.ArchiveID, Err: "rejected", Permanent: true},
	}))
	c, err := s.Counts(ctx, time.Time{})
	require.NoError(t, err)
	require.Equal(t, store.Counts{ArchiveRows: 5, Duplicates: 1, DedupRows: 4, Pending: 1, Published: 1, Failed: 2}, c)
	require.Equal(t, statsFromView(t, pool, time.Time{}), c, "the view says the same")
	b, err := s.OutboxBacklog(ctx)
	require.NoError(t, err)
	require.Equal(t, b.Pending, c.Pending, "pending is the outbox")
	require.Equal(t, c.DedupRows, c.Pending+c.Published+c.Failed, "every event in exactly one state")
}

func TestStatsSince(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	now := time.Now()
	old, recent := statsDelivery("evt_old", now.Add(-time.Hour)), statsDelivery("evt_recent", now)
	_, err := s.Ingest(ctx, []hub.Delivery{old, recent, statsDelivery("evt_old", now)})
	require.NoError(t, err)
	require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: old.ArchiveID, Seq: 1}, {ArchiveID: recent.ArchiveID, Seq: 2}}))

	since := now.Add(-time.Minute)
	c, err := s.Counts(ctx, since)
	require.NoError(t, err)
	require.Equal(t, store.Counts{ArchiveRows: 2, Duplicates: 1, DedupRows: 1, Published: 1}, c,
		"a later delivery of an older event counts as an archive row, not as an event")
	require.Equal(t, statsFromView(t, pool, since), c)

	ids, err := s.EventIDs(ctx, "paddle", since)
	require.NoError(t, err)
	require.Equal(t, []string{"evt_recent"}, ids)
	ids, err = s.EventIDs(ctx, "paddle", time.Time{})
	require.NoError(t, err)
	slices.Sort(ids)
	require.Equal(t, []string{"evt_old", "evt_recent"}, ids)
	ids, err = s.EventIDs(ctx, "clerk", time.Time{})
	require.NoError(t, err)
	require.Empty(t, ids)
}

// statsEvents makes n imported events received from start, a second apart,
// event i with i%3 duplicates.
func statsEvents(prefix string, n int, start time.Time) []store.ImportedEvent {
	var evs []store.ImportedEvent
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second)
		ev := store.ImportedEvent{First: statsDelivery(fmt.Sprintf("%s%d", prefix, i), at), StreamSeq: uint64(i + 1), PublishedAt: at.Add(time.Millisecond)}
		for j := range i % 3 {
			dup := statsDelivery(ev.First.EventID, at.Add(time.Duration(j+1)*time.Millisecond))
			ev.Duplicates = append(ev.Duplicates, dup)
		}
		evs = append(evs, ev)
	}
	return evs
}

func TestStatsImportPublished(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	start := time.Now().Add(-24 * time.Hour).Truncate(time.Microsecond)
	evs := statsEvents("evt_imported_", 5000, start) // several COPY chunks
	evs[7].PublishedAt = time.Time{}                 // unknown: taken as the receipt
	rows := 0
	for _, ev := range evs {
		rows += 1 + len(ev.Duplicates)
	}

	archived, recorded, err := s.ImportPublished(ctx, slices.Values(evs))
	require.NoError(t, err)
	require.EqualValues(t, rows, archived)
	require.EqualValues(t, len(evs), recorded)

	c, err := s.Counts(ctx, time.Time{})
	require.NoError(t, err)
	require.Equal(t, store.Counts{ArchiveRows: int64(rows), Duplicates: int64(rows - len(evs)), DedupRows: int64(len(evs)), Published: int64(len(evs))}, c)
	require.Equal(t, statsFromView(t, pool, time.Time{}), c)
	b, err := s.OutboxBacklog(ctx)
	require.NoError(t, err)
	require.Zero(t, b.Pending, "nothing left in the outbox")
	claimed, err := s.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, claimed)

	// One event as the hub records it: the first delivery with its body,
	// PROCESSED through the dedup row; the later ones SKIPPED, without.
	ev := evs[5]
	type row struct {
		ID        uuid.UUID
		Status    string
		Seq       *int64
		Published *time.Time
		Created   time.Time
		Body      []byte
	}
	got, err := pgx.CollectRows(statsMust(pool.Query(ctx, `SELECT id, processing_status, stream_seq, published_at, created_at, body
		FROM webhook_event_status WHERE event_id = $1 ORDER BY created_at`, ev.First.EventID)), pgx.RowToStructByPos[row])
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, ev.First.ArchiveID, got[0].ID)
	require.Equal(t, "PROCESSED", got[0].Status)
	require.EqualValues(t, ev.StreamSeq, *got[0].Seq)
	require.True(t, ev.PublishedAt.Equal(*got[0].Published))
	require.True(t, ev.First.ReceivedAt.Equal(got[0].Created))
	require.Equal(t, ev.First.Body, got[0].Body)
	for i, dup := range ev.Duplicates {
		require.Equal(t, dup.ArchiveID, got[i+1].ID)
		require.Equal(t, "SKIPPED", got[i+1].Status)
		require.Nil(t, got[i+1].Body)
	}

	var publishedAt time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT published_at FROM webhook_event_status WHERE id = $1`, evs[7].First.ArchiveID).Scan(&publishedAt))
	require.True(t, evs[7].First.ReceivedAt.Equal(publishedAt), "%s", publishedAt)

	// The dedup knows the imported events: a new delivery of one is a
	// duplicate.
	outs, err := s.Ingest(ctx, []hub.Delivery{statsDelivery(ev.First.EventID, time.Now())})
	require.NoError(t, err)
	require.Equal(t, hub.Skipped, outs[0].Status)

	// An event already there fails the whole import: nothing is written.
	again := append(statsEvents("evt_new_", 3000, start), evs[4999])
	_, _, err = s.ImportPublished(ctx, slices.Values(again))
	require.Error(t, err)
	after, err := s.Counts(ctx, time.Time{})
	require.NoError(t, err)
	require.Equal(t, c.DedupRows, after.DedupRows)
	require.Equal(t, c.ArchiveRows+1, after.ArchiveRows, "only the ingested duplicate")
}

func TestStatsImportRefuses(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	failed := statsEvents("evt_failed_", 1, time.Now())
	failed[0].First.Error = "cannot publish"
	noSeq := statsEvents("evt_noseq_", 1, time.Now())
	noSeq[0].StreamSeq = 0
	huge := statsEvents("evt_huge_", 1, time.Now())
	huge[0].StreamSeq = 1 << 63
	for name, evs := range map[string][]store.ImportedEvent{"failed": failed, "no stream sequence": noSeq, "sequence past int64": huge} {
		t.Run(name, func(t *testing.T) {
			_, _, err := s.ImportPublished(ctx, slices.Values(append(statsEvents("evt_ok_"+name, 2, time.Now()), evs...)))
			require.ErrorIs(t, err, store.ErrImport)
		})
	}
	c, err := s.Counts(ctx, time.Time{})
	require.NoError(t, err)
	require.Zero(t, c)
}

func statsMust[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
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
	ctx, s, pool, _ := newScenario(t, time.Now().Add(-10*24*time.Hour))
	// Young rows, in every state a purge could delete.
	insertStates(t, pool, stateRow{eventID: "young_older", status: hub.Processed, at: time.Now(), seq: 1})
	young := delivery("young_new", `{}`)
	_, err := s.Ingest(ctx, []hub.Delivery{young, delivery("young_new", `{}`)})
	require.NoError(t, err)
	require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: young.ArchiveID, Seq: 99}}))
	cutoff := time.Now().Add(-24 * time.Hour)
	before := hubdb.StatusCounts(t, pool)
	require.Equal(t, map[string]int{"PROCESSED": 4, "PENDING": 2, "FAILED": 3, "SKIPPED": 3}, before)

	counts, err := s.PurgeCounts(ctx, cutoff)
	require.NoError(t, err)
	require.Equal(t, hub.PurgeCounts{Archived: 9, Pending: 2, Failed: 3}, counts)
	require.EqualValues(t, 4, counts.Purgeable(false))
	require.EqualValues(t, 7, counts.Purgeable(true))

	deleted, batches := purgeAll(t, s, cutoff, 2, false)
	require.EqualValues(t, 4, deleted, "SKIPPED and PROCESSED")
	require.Equal(t, 3, batches)
	require.Equal(t, map[string]int{"PROCESSED": 2, "PENDING": 2, "FAILED": 3, "SKIPPED": 1}, hubdb.StatusCounts(t, pool),
		"the young rows, PENDING (both in the outbox) and FAILED (all three) remain")

	counts, err = s.PurgeCounts(ctx, cutoff)
	require.NoError(t, err)
	require.Equal(t, hub.PurgeCounts{Archived: 5, Pending: 2, Failed: 3}, counts)
	require.Zero(t, counts.Purgeable(false))

	deleted, _ = purgeAll(t, s, cutoff, 2, true)
	require.EqualValues(t, 3, deleted, "FAILED when asked")
	require.Equal(t, map[string]int{"PROCESSED": 2, "PENDING": 2, "SKIPPED": 1}, hubdb.StatusCounts(t, pool))
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
	s, pool := newStore(t)
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
	require.Equal(t, map[string]int{"PENDING": 2}, hubdb.StatusCounts(t, pool))
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
			require.Equal(t, 1, hubdb.StatusCounts(t, pool)["PENDING"])
		})
	}
}
