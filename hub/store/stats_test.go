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
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
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
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
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
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
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
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
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
