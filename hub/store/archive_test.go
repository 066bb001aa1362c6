package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
)

// stateRow is an event in a given publication state, with its own body
// ({"older": true}) and receipt time: PENDING after a failed attempt (due
// again in an hour), PROCESSED, or given up.
type stateRow struct {
	eventID string
	status  hub.Status // PENDING, PROCESSED or FAILED (given up by a relay)
	at      time.Time
	seq     int64 // PROCESSED
}

// insertStates ingests rows and records the relay's verdicts on them (a
// PROCESSED one published a second after its receipt, a FAILED one given
// up with "bad subject"), and returns their archive ids.
func insertStates(t *testing.T, pool *pgxpool.Pool, rows ...stateRow) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	s := store.New(pool)
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		d := deliveryAt(r.eventID, r.at)
		d.Body, d.Payload = []byte(`{"older": true}`), []byte(`{"older": true}`)
		_, err := s.Ingest(ctx, []hub.Delivery{d})
		require.NoError(t, err)
		ids[i] = d.ArchiveID
		switch r.status {
		case hub.Pending:
			require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: d.ArchiveID, Err: "nats down", RetryIn: time.Hour}}))
		case hub.Processed:
			require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: d.ArchiveID, Seq: uint64(r.seq), PublishedAt: r.at.Add(time.Second)}}))
		case hub.Failed:
			require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: d.ArchiveID, Err: "bad subject", Permanent: true}}))
		default:
			t.Fatalf("insertStates: status %s", r.status)
		}
	}
	return ids
}

// deliveryAt is a delivery received at at.
func deliveryAt(eventID string, at time.Time) hub.Delivery {
	d := delivery(eventID, `{"id":"`+eventID+`"}`)
	d.ReceivedAt = at
	return d
}

// archiveScenario fills the archive with every state, one event per state
// (the first three twice, written by insertStates), each received a minute
// after the previous one:
//
//	older_processed  PROCESSED  (dedup row, stream seq 4242)
//	older_pending    PENDING    (dedup row in the outbox, due in an hour)
//	older_failed     FAILED     (dedup row: a relay gave up, "bad subject")
//	new_published     PROCESSED  (dedup row, stream seq 7)
//	new_outbox        PENDING    (dedup row in the outbox)
//	new_failed        FAILED     (archive row: its type cannot form a subject)
//	new_given_up      FAILED     (dedup row: a relay gave up)
//	older_processed  SKIPPED    (a duplicate, through the current ingest)
//	new_published     SKIPPED    (a duplicate)
//
// Row i is received at start + i minutes. It returns the archive ids by
// event id (the duplicates as dup_<event id>).
func archiveScenario(t *testing.T, s *store.Store, pool *pgxpool.Pool, start time.Time) map[string]uuid.UUID {
	t.Helper()
	ctx := context.Background()
	at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Minute) }
	ids := map[string]uuid.UUID{}
	older := insertStates(t, pool,
		stateRow{eventID: "older_processed", status: hub.Processed, at: at(0), seq: 4242},
		stateRow{eventID: "older_pending", status: hub.Pending, at: at(1)},
		stateRow{eventID: "older_failed", status: hub.Failed, at: at(2)})
	ids["older_processed"], ids["older_pending"], ids["older_failed"] = older[0], older[1], older[2]

	failed := deliveryAt("new_failed", at(5))
	failed.EventType, failed.Error = "subscription created", "cannot form a subject"
	ds := []hub.Delivery{deliveryAt("new_published", at(3)), deliveryAt("new_outbox", at(4)), failed, deliveryAt("new_given_up", at(6)),
		deliveryAt("older_processed", at(7)), deliveryAt("new_published", at(8))}
	outs, err := s.Ingest(ctx, ds)
	require.NoError(t, err)
	require.Equal(t, []hub.Status{hub.Pending, hub.Pending, hub.Failed, hub.Pending, hub.Skipped, hub.Skipped},
		[]hub.Status{outs[0].Status, outs[1].Status, outs[2].Status, outs[3].Status, outs[4].Status, outs[5].Status})
	for _, d := range ds[:4] {
		ids[d.EventID] = d.ArchiveID
	}
	ids["dup_older_processed"], ids["dup_new_published"] = ds[4].ArchiveID, ds[5].ArchiveID
	// The relay's verdicts, recorded as the relay records them.
	require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{
		{ArchiveID: ids["new_published"], Seq: 7},
		{ArchiveID: ids["new_given_up"], Err: "publish: bad subject", Permanent: true},
	}))
	return ids
}

// newScenario runs t in parallel on a store of its own holding
// archiveScenario's rows from start.
func newScenario(t *testing.T, start time.Time) (context.Context, *store.Store, *pgxpool.Pool, map[string]uuid.UUID) {
	t.Helper()
	t.Parallel()
	s, pool := newStore(t)
	return context.Background(), s, pool, archiveScenario(t, s, pool, start)
}

func eventIDs(ds []hub.ArchivedDelivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.EventID
	}
	return out
}

func TestListArchiveStates(t *testing.T) {
	start := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	ctx, s, pool, ids := newScenario(t, start)

	cases := []struct {
		status hub.Status
		want   []string // newest first
	}{
		{"", []string{"new_given_up", "new_failed", "new_outbox", "new_published", "older_failed", "older_pending", "older_processed"}},
		{hub.Processed, []string{"new_published", "older_processed"}},
		{hub.Pending, []string{"new_outbox", "older_pending"}},
		{hub.Failed, []string{"new_given_up", "new_failed", "older_failed"}},
		{hub.Skipped, []string{"new_published", "older_processed"}},
	}
	for _, c := range cases {
		t.Run(string(c.status), func(t *testing.T) {
			got, err := s.ListArchive(ctx, hub.ArchiveFilter{Status: c.status, Limit: 100, CountDeliveries: true})
			require.NoError(t, err)
			require.Equal(t, c.want, eventIDs(got))
			for _, d := range got {
				if c.status != "" {
					require.Equal(t, c.status, d.Status, d.EventID)
				}
				// The view has the last word: the listing agrees with it.
				var viewStatus string
				require.NoError(t, pool.QueryRow(ctx, `SELECT processing_status FROM webhook_event_status WHERE id = $1`, d.ArchiveID).Scan(&viewStatus))
				require.Equal(t, viewStatus, string(d.Status), d.EventID)
				wantDeliveries := 1
				if d.EventID == "new_published" || d.EventID == "older_processed" {
					wantDeliveries = 2
				}
				require.Equal(t, wantDeliveries, d.Deliveries, d.EventID)
				require.Nil(t, d.Body, "listings do not read bodies")
			}
			// One row a page, with the cursor, gives the same rows.
			var paged []string
			f := hub.ArchiveFilter{Status: c.status, Limit: 1}
			for {
				page, err := s.ListArchive(ctx, f)
				require.NoError(t, err)
				paged = append(paged, eventIDs(page)...)
				if len(page) < f.Limit {
					break
				}
				f.Before = page[len(page)-1].Cursor()
			}
			require.Equal(t, c.want, paged)
		})
	}

	// Publication and failure details, whichever row holds them.
	all, err := s.ListArchive(ctx, hub.ArchiveFilter{Limit: 100})
	require.NoError(t, err)
	byID := map[string]hub.ArchivedDelivery{}
	for _, d := range all {
		byID[d.EventID] = d
	}
	require.EqualValues(t, 4242, byID["older_processed"].StreamSeq)
	require.True(t, byID["older_processed"].PublishedAt.Equal(start.Add(time.Second)))
	require.EqualValues(t, 7, byID["new_published"].StreamSeq)
	require.False(t, byID["new_published"].PublishedAt.IsZero())
	require.Equal(t, ids["new_published"], byID["new_published"].ArchiveID)
	require.Zero(t, byID["new_outbox"].StreamSeq)
	require.Equal(t, "cannot form a subject", byID["new_failed"].Error)
	require.Equal(t, "publish: bad subject", byID["new_given_up"].Error)
	require.Equal(t, 1, byID["new_given_up"].Attempts)
	require.Equal(t, "bad subject", byID["older_failed"].Error)
	require.Equal(t, "ts=1;h1=00", byID["new_outbox"].Signature)
	require.True(t, byID["new_outbox"].ReceivedAt.Equal(start.Add(4*time.Minute)))

	// The filters.
	filtered := []struct {
		f    hub.ArchiveFilter
		want []string
	}{
		{hub.ArchiveFilter{Since: start.Add(3 * time.Minute), Until: start.Add(5 * time.Minute)}, []string{"new_outbox", "new_published"}},
		{hub.ArchiveFilter{EventType: "subscription created"}, []string{"new_failed"}},
		{hub.ArchiveFilter{Provider: "clerk"}, []string{}},
		{hub.ArchiveFilter{Status: hub.Pending, Until: start.Add(2 * time.Minute)}, []string{"older_pending"}},
		{hub.ArchiveFilter{Status: hub.Failed, Since: start.Add(3 * time.Minute)}, []string{"new_given_up", "new_failed"}},
		{hub.ArchiveFilter{Status: hub.Processed, Since: start.Add(time.Minute)}, []string{"new_published"}},
		{hub.ArchiveFilter{Status: hub.Skipped, Limit: 1}, []string{"new_published"}},
		{hub.ArchiveFilter{Status: hub.Failed, Limit: 2}, []string{"new_given_up", "new_failed"}},
		{hub.ArchiveFilter{Status: hub.Pending, Before: byID["new_outbox"].Cursor()}, []string{"older_pending"}},
	}
	for _, c := range filtered {
		if c.f.Limit == 0 {
			c.f.Limit = 100
		}
		got, err := s.ListArchive(ctx, c.f)
		require.NoError(t, err)
		require.Equal(t, c.want, eventIDs(got), "%+v", c.f)
	}
	_, err = s.ListArchive(ctx, hub.ArchiveFilter{})
	require.Error(t, err, "a limit is required")
	_, err = s.ListArchive(ctx, hub.ArchiveFilter{Status: "DONE", Limit: 1})
	require.Error(t, err)
}

// Rows received in the same microsecond page by archive id.
func TestListArchivePagesTies(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	at := time.Now().Truncate(time.Microsecond)
	var ds []hub.Delivery
	for _, id := range []string{"evt_a", "evt_b", "evt_c", "evt_d", "evt_e"} {
		ds = append(ds, deliveryAt(id, at))
	}
	_, err := s.Ingest(ctx, ds)
	require.NoError(t, err)
	whole, err := s.ListArchive(ctx, hub.ArchiveFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, whole, 5)
	var paged []hub.ArchivedDelivery
	f := hub.ArchiveFilter{Limit: 2}
	for {
		page, err := s.ListArchive(ctx, f)
		require.NoError(t, err)
		paged = append(paged, page...)
		if len(page) < f.Limit {
			break
		}
		f.Before = page[len(page)-1].Cursor()
	}
	require.Equal(t, eventIDs(whole), eventIDs(paged))
	for i := 1; i < len(whole); i++ {
		require.Negative(t, bytes.Compare(whole[i].ArchiveID[:], whole[i-1].ArchiveID[:]), "newest first: ties by archive id, descending")
	}
}

func TestFindEventAndDeliveries(t *testing.T) {
	start := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	ctx, s, pool, ids := newScenario(t, start)

	for _, c := range []struct {
		id      uuid.UUID
		eventID string
	}{
		{ids["older_processed"], "older_processed"},
		{ids["dup_older_processed"], "older_processed"},
		{ids["new_published"], "new_published"},
		{ids["dup_new_published"], "new_published"},
	} {
		provider, eventID, found, err := s.FindEvent(ctx, c.id)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, "paddle", provider)
		require.Equal(t, c.eventID, eventID)
	}
	_, _, found, err := s.FindEvent(ctx, uuid.New())
	require.NoError(t, err)
	require.False(t, found)

	ev, found, err := s.Event(ctx, "paddle", "new_published")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, hub.EventRecord{FirstArchiveID: ids["new_published"], Provider: "paddle", EventID: "new_published",
		EventType: "subscription.created", FirstSeen: ev.FirstSeen}, ev)
	require.True(t, ev.FirstSeen.Equal(start.Add(3*time.Minute)))
	_, found, err = s.Event(ctx, "paddle", "never")
	require.NoError(t, err)
	require.False(t, found)

	for _, c := range []struct {
		eventID  string
		statuses []hub.Status
		body     string
	}{
		{"new_published", []hub.Status{hub.Processed, hub.Skipped}, `{"id":"new_published"}`},
		{"older_processed", []hub.Status{hub.Processed, hub.Skipped}, `{"older": true}`},
		{"older_pending", []hub.Status{hub.Pending}, `{"older": true}`},
		{"new_given_up", []hub.Status{hub.Failed}, `{"id":"new_given_up"}`},
	} {
		ds, err := s.Deliveries(ctx, "paddle", c.eventID, 0)
		require.NoError(t, err)
		var statuses []hub.Status
		for _, d := range ds {
			statuses = append(statuses, d.Status)
		}
		require.Equal(t, c.statuses, statuses, c.eventID)
		require.Equal(t, c.body, string(ds[0].Body), c.eventID)
		if len(ds) > 1 {
			require.Nil(t, ds[1].Body, "a duplicate keeps no body")
			require.True(t, ds[1].ReceivedAt.After(ds[0].ReceivedAt))
		}
	}
	ds, err := s.Deliveries(ctx, "paddle", "new_published", 1)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, ids["new_published"], ds[0].ArchiveID, "the first delivery first")

	// After a purge of the archive rows, the dedup row still names the
	// event by its first delivery's archive id.
	_, err = pool.Exec(ctx, `DELETE FROM webhook_events WHERE event_id = 'new_published'`)
	require.NoError(t, err)
	_, eventID, found, err := s.FindEvent(ctx, ids["new_published"])
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "new_published", eventID)
	_, _, found, err = s.FindEvent(ctx, ids["dup_new_published"])
	require.NoError(t, err)
	require.False(t, found, "a duplicate's id is the archive's only")
	ds, err = s.Deliveries(ctx, "paddle", "new_published", 0)
	require.NoError(t, err)
	require.Empty(t, ds)
}

func TestPublishedRowsStates(t *testing.T) {
	start := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	ctx, s, pool, ids := newScenario(t, start)
	more := insertStates(t, pool, stateRow{eventID: "older_processed_2", status: hub.Processed, at: start.Add(10 * time.Minute), seq: 4343})
	late := deliveryAt("new_published_2", start.Add(11*time.Minute))
	late.TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	late.OccurredAt = start.Add(-time.Hour)
	_, err := s.Ingest(ctx, []hub.Delivery{late})
	require.NoError(t, err)
	require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: late.ArchiveID, Seq: 9}}))

	all := []string{"older_processed", "new_published", "older_processed_2", "new_published_2"} // oldest first
	rows, err := s.PublishedRows(ctx, hub.PublishedFilter{Since: start, Limit: 100})
	require.NoError(t, err)
	got := make([]string, len(rows))
	for i, r := range rows {
		got[i] = r.EventID
	}
	require.Equal(t, all, got, "PROCESSED first deliveries, no duplicate, oldest first")
	last := rows[3]
	require.Equal(t, late.ArchiveID, last.ArchiveID)
	require.Equal(t, late.Body, last.Body)
	require.Equal(t, late.TraceParent, last.TraceParent)
	require.True(t, last.OccurredAt.Equal(late.OccurredAt))
	require.True(t, last.ReceivedAt.Equal(late.ReceivedAt))
	require.Equal(t, "subscription.created", last.EventType)
	require.Equal(t, `{"older": true}`, string(rows[0].Body))

	// A page at a time.
	f := hub.PublishedFilter{Since: start, Limit: 3}
	paged := pageIDs(t, f.Limit, func(last *hub.OutboxRow) ([]hub.OutboxRow, error) {
		if last != nil {
			f.After = hub.ArchiveCursor{ReceivedAt: last.ReceivedAt, ArchiveID: last.ArchiveID}
		}
		return s.PublishedRows(ctx, f)
	}, func(r hub.OutboxRow) string { return r.EventID })
	require.Equal(t, all, paged)

	for _, c := range []struct {
		f    hub.PublishedFilter
		want []string
	}{
		{hub.PublishedFilter{Provider: "paddle", EventID: "older_processed"}, []string{"older_processed"}},
		{hub.PublishedFilter{Provider: "paddle", EventID: "new_outbox"}, nil},
		{hub.PublishedFilter{Provider: "paddle", EventID: "new_given_up"}, nil},
		{hub.PublishedFilter{Provider: "paddle", EventID: "older_pending"}, nil},
		{hub.PublishedFilter{Provider: "clerk", Since: start}, nil},
		{hub.PublishedFilter{Since: start.Add(3 * time.Minute), Until: start.Add(11 * time.Minute)}, []string{"new_published", "older_processed_2"}},
		{hub.PublishedFilter{ArchiveIDs: []uuid.UUID{more[0], ids["new_outbox"], ids["dup_new_published"], late.ArchiveID}}, []string{"older_processed_2", "new_published_2"}},
		{hub.PublishedFilter{ArchiveIDs: []uuid.UUID{}}, nil},
	} {
		c.f.Limit = 100
		rows, err := s.PublishedRows(ctx, c.f)
		require.NoError(t, err)
		var got []string
		for _, r := range rows {
			got = append(got, r.EventID)
		}
		require.Equal(t, c.want, got, "%+v", c.f)
	}
	_, err = s.PublishedRows(ctx, hub.PublishedFilter{})
	require.Error(t, err, "a limit is required")
}

// A payload scan selects, for every status filter, exactly the rows the
// listing of that status has whose payload matches, newest first; a
// listing refuses payload conditions.
func TestScanArchiveStatesAndMatches(t *testing.T) {
	ctx, s, _, ids := newScenario(t, time.Now().Add(-time.Hour).Truncate(time.Second))
	// The older_* rows' payload is {"older": true}; every other row's is
	// {"id": "<event id>"}.
	older := map[uuid.UUID]bool{ids["older_processed"]: true, ids["older_pending"]: true, ids["older_failed"]: true}
	var any []json.RawMessage
	for _, id := range []string{"new_published", "new_outbox", "new_failed", "new_given_up", "older_processed"} {
		any = append(any, json.RawMessage(`"`+id+`"`))
	}
	byID := []hub.PayloadMatch{{Path: []string{"id"}, Any: any}}
	for _, st := range []hub.Status{"", hub.Skipped, hub.Processed, hub.Pending, hub.Failed} {
		all, err := s.ListArchive(ctx, hub.ArchiveFilter{Status: st, Limit: 100})
		require.NoError(t, err)
		var want []uuid.UUID
		for _, d := range all {
			if !older[d.ArchiveID] {
				want = append(want, d.ArchiveID)
			}
		}
		scan, err := s.ScanArchive(ctx, hub.ArchiveFilter{Status: st, Limit: 100, MaxScan: 1000, Where: byID})
		require.NoError(t, err, st)
		var got []uuid.UUID
		for _, d := range scan.Rows {
			got = append(got, d.ArchiveID)
		}
		require.Equal(t, want, got, "status %q", st)
		require.False(t, scan.Truncated)
		require.True(t, scan.Resume.IsZero())

		olderOnly, err := s.ScanArchive(ctx, hub.ArchiveFilter{Status: st, Limit: 100, MaxScan: 1000,
			Where: []hub.PayloadMatch{{Path: []string{"older"}, Any: []json.RawMessage{json.RawMessage(`true`)}}}})
		require.NoError(t, err)
		for _, d := range olderOnly.Rows {
			require.True(t, older[d.ArchiveID], "status %q: %s", st, d.EventID)
		}
	}
	_, err := s.ListArchive(ctx, hub.ArchiveFilter{Limit: 10, Where: byID})
	require.ErrorContains(t, err, "ScanArchive")
	_, err = s.ScanArchive(ctx, hub.ArchiveFilter{Limit: 10, Where: byID})
	require.Error(t, err, "a scan needs its bound")
}

func TestPublishedBetweenAndRequeue(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
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
