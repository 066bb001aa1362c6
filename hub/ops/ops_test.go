package ops_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
)

// newOps returns Ops on the hub's store and, with js, its stream WEBHOOKS
// and a relay to republish through.
func newOps(t *testing.T, pool *pgxpool.Pool, js jetstream.JetStream) *ops.Ops {
	t.Helper()
	st := store.New(pool)
	cfg := ops.Config{Archive: st, Subscribers: pool, JetStream: js, Stream: schema.DefaultStream}
	if js != nil {
		r, err := relay.New(st, js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: 2 * time.Minute})
		require.NoError(t, err)
		cfg.Republisher = r
	}
	return ops.New(cfg)
}

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

// publish marks every event in the outbox published, but those of
// eventIDs kept, as a relay does: it claims them and records their
// PubAcks. The kept ones stay in the outbox (leased for an hour).
func publish(t *testing.T, pool *pgxpool.Pool, kept ...string) {
	t.Helper()
	ctx := context.Background()
	s := store.New(pool)
	rows, err := s.Claim(ctx, 100_000, time.Hour)
	require.NoError(t, err)
	var results []hub.PublishResult
	for i, r := range rows {
		if !slices.Contains(kept, r.EventID) {
			results = append(results, hub.PublishResult{ArchiveID: r.ArchiveID, Seq: uint64(i + 1)})
		}
	}
	require.NoError(t, s.RecordPublished(ctx, results))
}

// archiveState archives an event with the body {} received at at, in
// status: PENDING (a failed attempt, due again in an hour) or PROCESSED
// (stream sequence 4242, acknowledged at at), as the relay records them.
func archiveState(t *testing.T, pool *pgxpool.Pool, at time.Time, status hub.Status, eventID string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	s := store.New(pool)
	d := hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: eventID, EventType: "subscription.created",
		Body: []byte(`{}`), Signature: "ts=1;h1=ab", ReceivedAt: at}
	_, err := s.Ingest(ctx, []hub.Delivery{d})
	require.NoError(t, err)
	switch status {
	case hub.Pending:
		require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: d.ArchiveID, Err: "nats down", RetryIn: time.Hour}}))
	case hub.Processed:
		require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: d.ArchiveID, Seq: 4242, PublishedAt: at}}))
	default:
		t.Fatalf("archiveState: status %s", status)
	}
	return d.ArchiveID
}

func TestListAndShowEvents(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	o := newOps(t, pool, nil)
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

	// By event id, with or without its provider.
	for _, f := range []ops.EventFilter{{EventID: "evt_old"}, {Provider: "paddle", EventID: "evt_old"}} {
		f.Limit = ops.DefaultListLimit
		rows, err = o.ListEvents(ctx, f)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, "evt_old", rows[0].EventID)
	}
	f := ops.EventFilter{EventID: "evt_old", Status: hub.Skipped, Limit: ops.DefaultListLimit}
	rows, err = o.ListEvents(ctx, f)
	require.NoError(t, err)
	require.Len(t, rows, 9)
	rows, err = o.ListEvents(ctx, ops.EventFilter{Provider: "clerk", EventID: "evt_old", Limit: ops.DefaultListLimit})
	require.NoError(t, err)
	require.Empty(t, rows)
	_, err = o.ListEvents(ctx, ops.EventFilter{EventID: `bad\x00`, Limit: 1})
	require.NoError(t, err, "a backslash is text")
	_, err = o.ListEvents(ctx, ops.EventFilter{EventID: "bad\x00", Limit: 1})
	require.ErrorIs(t, err, ops.ErrInvalid)

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
	pool, _ := hubdb.Pool(t)
	o := newOps(t, pool, nil)
	ctx := context.Background()
	old := time.Now().Add(-100 * 24 * time.Hour)
	var events []string
	for i := range 25 {
		events = append(events, fmt.Sprintf("evt_%d", i))
	}
	archive(t, pool, old, events...)
	archive(t, pool, old, "evt_0", "evt_1") // duplicates
	// All but one published; the PENDING one must survive the purge.
	publish(t, pool, "evt_24")
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
	pool, _ := hubdb.Pool(t)
	o := newOps(t, pool, nil)
	archive(t, pool, time.Now().Add(-time.Minute), "evt_a", "evt_b")
	st, err := o.Status(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 2, st.OutboxPending)
	require.InDelta(t, 60, st.OldestAgeSec, 10)
	require.Nil(t, st.Stream)
	require.NotEmpty(t, st.StreamError)
}

// Listing, showing, status and purge read events in every state alike,
// whichever way they got there (published by a relay at once, or after a
// failed attempt; waiting in the outbox leased, or after a failure).
func TestOperationsReadStates(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	o := newOps(t, pool, nil)
	ctx := context.Background()
	old := time.Now().Add(-40 * 24 * time.Hour).Truncate(time.Microsecond)
	archiveState(t, pool, old, hub.Processed, "evt_older_processed")
	archiveState(t, pool, old.Add(time.Minute), hub.Pending, "evt_older_pending")
	archive(t, pool, old.Add(2*time.Minute), "evt_published", "evt_waiting")
	publish(t, pool, "evt_waiting", "evt_older_pending")
	archive(t, pool, old.Add(3*time.Minute), "evt_published", "evt_older_processed") // duplicates

	list := func(f ops.EventFilter) []string {
		t.Helper()
		f.Limit = max(f.Limit, 1)
		var ids []string
		for {
			rows, err := o.ListEvents(ctx, f)
			require.NoError(t, err)
			for _, r := range rows {
				ids = append(ids, r.EventID+":"+r.Status)
			}
			if len(rows) < f.Limit {
				return ids
			}
			f.Before = rows[len(rows)-1].Cursor
		}
	}
	all := []string{"evt_waiting:PENDING", "evt_published:PROCESSED", "evt_older_pending:PENDING", "evt_older_processed:PROCESSED"}
	// archive() commits the two events of a batch at the same time: their
	// order is their archive ids'.
	got := list(ops.EventFilter{Limit: 100})
	require.ElementsMatch(t, all, got)
	require.Equal(t, got, list(ops.EventFilter{Limit: 1}), "a page at a time, the same rows in the same order")
	require.ElementsMatch(t, []string{"evt_waiting:PENDING", "evt_older_pending:PENDING"}, list(ops.EventFilter{Status: hub.Pending, Limit: 1}))
	require.ElementsMatch(t, []string{"evt_published:PROCESSED", "evt_older_processed:PROCESSED"}, list(ops.EventFilter{Status: hub.Processed, Limit: 1}))
	require.ElementsMatch(t, []string{"evt_published:SKIPPED", "evt_older_processed:SKIPPED"}, list(ops.EventFilter{Status: hub.Skipped, Limit: 1}))

	d, err := o.ShowEvent(ctx, "paddle:evt_older_processed")
	require.NoError(t, err)
	require.Equal(t, "PROCESSED", d.Status)
	require.Len(t, d.Deliveries, 2)
	require.EqualValues(t, 4242, d.Deliveries[0].StreamSeq)
	require.Equal(t, "SKIPPED", d.Deliveries[1].Status)
	d, err = o.ShowEvent(ctx, "paddle:evt_older_pending")
	require.NoError(t, err)
	require.Equal(t, "PENDING", d.Status)
	d, err = o.ShowEvent(ctx, "paddle:evt_published")
	require.NoError(t, err)
	require.Equal(t, "PROCESSED", d.Status)
	require.NotZero(t, d.Deliveries[0].StreamSeq)

	st, err := o.Status(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, st.OutboxPending, "the whole outbox")
	require.InDelta(t, 40*24*3600, st.OldestAgeSec, 3600)

	res, err := o.Purge(ctx, ops.PurgeRequest{OlderThan: 30 * 24 * time.Hour, BatchSize: 2})
	require.NoError(t, err)
	require.EqualValues(t, 4, res.Rows, "PROCESSED and SKIPPED")
	require.EqualValues(t, 2, res.PendingKept)
	require.Equal(t, []string{"evt_waiting:PENDING", "evt_older_pending:PENDING"}, list(ops.EventFilter{Limit: 100}))
	d, err = o.ShowEvent(ctx, "paddle:evt_older_processed")
	require.NoError(t, err)
	require.True(t, d.Purged)
}

// Republish reads the rows through the store and publishes them through
// the relay: the copies are the hub's messages, under their own ids, page
// after page; FAILED, PENDING and SKIPPED events are refused.
func TestRepublishThroughRelay(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	n := hubtest.JetStream(t)
	_, js := n.Connect(t)
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: schema.DefaultStream, Subjects: []string{"paddle.>"}})
	require.NoError(t, err)
	o := newOps(t, pool, js)
	at := time.Now().Add(-time.Hour)
	const events = 530 // more than a page
	ids := make([]string, events)
	for i := range ids {
		ids[i] = fmt.Sprintf("evt_%03d", i)
	}
	archiveIDs := archive(t, pool, at, ids...)
	archiveState(t, pool, at.Add(time.Minute), hub.Processed, "evt_older")
	archive(t, pool, at.Add(2*time.Minute), "evt_waiting")
	publish(t, pool, "evt_waiting")

	dry, err := o.Republish(ctx, ops.RepublishFilter{Since: at.Add(-time.Minute), DryRun: true})
	require.NoError(t, err)
	require.Equal(t, events+1, dry.Matched)
	require.Zero(t, dry.Published)
	info, err := st.Info(ctx)
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "a dry run publishes nothing")

	res, err := o.Republish(ctx, ops.RepublishFilter{Since: at.Add(-time.Minute)})
	require.NoError(t, err)
	require.Equal(t, ops.RepublishResult{Matched: events + 1, Published: events + 1, RunID: res.RunID, FirstSeq: 1, LastSeq: events + 1}, res)

	one, err := o.Republish(ctx, ops.RepublishFilter{Event: "paddle:evt_older"})
	require.NoError(t, err)
	require.Equal(t, 1, one.Published)
	msg, err := st.GetMsg(ctx, one.FirstSeq)
	require.NoError(t, err)
	require.Equal(t, "paddle.subscription.created", msg.Subject)
	require.Equal(t, `{}`, string(msg.Data), "the exact body")
	require.Equal(t, "paddle:evt_older:republish:"+one.RunID, msg.Header.Get("Nats-Msg-Id"))
	require.Equal(t, "paddle:evt_older", msg.Header.Get(schema.HeaderRepublish))
	require.Equal(t, "evt_older", msg.Header.Get(schema.HeaderEventID))

	limited, err := o.Republish(ctx, ops.RepublishFilter{Since: at.Add(-time.Minute), Limit: 3})
	require.NoError(t, err)
	require.Equal(t, 3, limited.Published)

	// What reconcile found missing: more ids than a page, one twice, one
	// of an event not published yet.
	var missing []string
	for _, id := range archiveIDs {
		missing = append(missing, id.String())
	}
	waiting, err := o.ShowEvent(ctx, "paddle:evt_waiting")
	require.NoError(t, err)
	missing = append(missing, archiveIDs[7].String(), waiting.Deliveries[0].ArchiveID)
	byID, err := o.Republish(ctx, ops.RepublishFilter{Since: at.Add(-time.Minute), ArchiveIDs: missing})
	require.NoError(t, err)
	require.Equal(t, events, byID.Matched)
	require.Equal(t, events, byID.Published, "each event once")

	for _, f := range []ops.RepublishFilter{
		{Status: hub.Failed, Since: at},
		{Status: hub.Pending, Since: at},
		{Status: hub.Skipped, Since: at},
	} {
		_, err := o.Republish(ctx, f)
		var input *ops.InputError
		require.ErrorAs(t, err, &input, "%s", f.Status)
		require.Equal(t, "status", input.Field)
	}
	_, err = o.Republish(ctx, ops.RepublishFilter{Status: hub.Failed, Since: at})
	require.ErrorContains(t, err, "FAILED events cannot be republished")
	_, err = o.Republish(ctx, ops.RepublishFilter{Event: "paddle:evt_waiting"})
	require.ErrorIs(t, err, ops.ErrNotFound, "not published yet: the relay's")

	// Without a publisher, only a dry run.
	_, err = newOps(t, pool, nil).Republish(ctx, ops.RepublishFilter{Since: at})
	require.ErrorIs(t, err, ops.ErrNoStream)
}
