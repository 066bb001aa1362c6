package ops_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
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
// newDBOps runs t in parallel, with an Ops on a database of its own and
// no stream.
func newDBOps(t *testing.T) (context.Context, *pgxpool.Pool, *ops.Ops) {
	t.Helper()
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	return context.Background(), pool, newOps(t, pool, nil)
}

// newStreamOps runs t in parallel, with an Ops on a database and a stream
// (on paddle.>) of its own.
func newStreamOps(t *testing.T) (context.Context, *pgxpool.Pool, jetstream.JetStream, jetstream.Stream, *ops.Ops) {
	t.Helper()
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	_, js := hubtest.JetStream(t).Connect(t)
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: schema.DefaultStream, Subjects: []string{"paddle.>"}})
	require.NoError(t, err)
	return ctx, pool, js, st, newOps(t, pool, js)
}

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
	ctx, pool, o := newDBOps(t)
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
	ctx, pool, o := newDBOps(t)
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
	ctx, pool, o := newDBOps(t)
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
	ctx, pool, _, st, o := newStreamOps(t)
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

func TestCursorRoundTrip(t *testing.T) {
	for _, c := range []hub.ArchiveCursor{
		{ReceivedAt: time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC), ArchiveID: uuid.Must(uuid.NewV7())},
		{ReceivedAt: time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC), ArchiveID: uuid.Max},
		{ReceivedAt: time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), ArchiveID: uuid.Nil},
		{ReceivedAt: time.Unix(0, 0).UTC(), ArchiveID: uuid.New()},
	} {
		s := ops.FormatCursor(c)
		require.Len(t, s, 32)
		got, err := ops.ParseCursor("before", s)
		require.NoError(t, err, s)
		require.True(t, c.ReceivedAt.Equal(got.ReceivedAt), "%s: %s != %s", s, got.ReceivedAt, c.ReceivedAt)
		require.Equal(t, c.ArchiveID, got.ArchiveID)
	}
	good := ops.FormatCursor(hub.ArchiveCursor{ReceivedAt: time.Now(), ArchiveID: uuid.New()})
	for _, bad := range []string{
		"", "x", good[:31], good + "A", strings.Repeat("=", 32), strings.ToUpper(good[:30]) + "+/",
		good[:31] + "\x00",
		"f_________wAAAAAAAAAAAAAAAAAAAAA", // year 294247: beyond any archive row
		"gAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", // before year 1
		"2026-11-30T12:00:00Z",
	} {
		_, err := ops.ParseCursor("before", bad)
		var input *ops.InputError
		require.ErrorAs(t, err, &input, "%q", bad)
		require.Equal(t, "before", input.Field)
		require.True(t, errors.Is(err, ops.ErrInvalid))
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add(ops.FormatCursor(hub.ArchiveCursor{ReceivedAt: time.Now(), ArchiveID: uuid.New()}))
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("f_________wAAAAAAAAAAAAAAAAAAAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ops.ParseCursor("before", s)
		if err != nil {
			if !errors.Is(err, ops.ErrInvalid) {
				t.Fatalf("%q: %v is not an input error", s, err)
			}
			if len(err.Error()) > 400 { // the bound every operation keeps (TestOperationsRefuseInputsOutOfBounds)
				t.Fatalf("%q: the message echoes the input whole: %d bytes", s, len(err.Error()))
			}
			return
		}
		if y := c.ReceivedAt.Year(); y < 1 || y > 9999 {
			t.Fatalf("%q: year %d accepted", s, y)
		}
		// A cursor that parses is one FormatCursor writes.
		if again := ops.FormatCursor(c); again != s {
			t.Fatalf("%q parsed, but formats as %q", s, again)
		}
	})
}

// An entity's timeline lists the events about it across providers, newest
// first, paged, each with the same subscriber outcomes as the event's own
// detail (a destination's last attempt only); the events list filters by
// entity too.
func TestEntityTimeline(t *testing.T) {
	ctx, pool, o := newDBOps(t)
	now := time.Now().Truncate(time.Microsecond)
	cus := hub.Entity{Kind: "customer", ID: "cus_42"}
	var ds []hub.Delivery
	for i, p := range []string{"paddle", "stripe", "paddle", "stripe", "paddle"} {
		ds = append(ds, hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: p, EventID: "evt_" + string(rune('a'+i)),
			EventType: "customer.updated", Body: []byte(`{}`), ReceivedAt: now.Add(time.Duration(i-10) * time.Minute),
			Entities: []hub.Entity{cus}})
	}
	ds = append(ds, hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: "evt_other",
		EventType: "customer.updated", Body: []byte(`{}`), ReceivedAt: now})
	_, err := store.New(pool).Ingest(ctx, ds)
	require.NoError(t, err)
	publish(t, pool, "evt_e") // evt_e waits in the outbox
	require.NoError(t, subscriber.Migrate(ctx, pool, "plain", nil))
	require.NoError(t, subscriber.Migrate(ctx, pool, "billing", destination.Migrations("billing")))
	for i, status := range []int{500, 503} {
		require.NoError(t, deststate.RecordAttempt(ctx, pool, deststate.Attempt{Destination: "billing", Provider: "stripe",
			EventID: "evt_d", StreamSeq: 4, At: now.Add(time.Duration(i) * time.Second), Status: status, Outcome: deststate.OutcomeFailed}))
	}

	var got []string
	q := ops.TimelineQuery{Entity: "cus_42", Limit: 2}
	for range 5 {
		tl, err := o.EntityTimeline(ctx, q)
		require.NoError(t, err)
		require.Equal(t, "cus_42", tl.Entity)
		for _, e := range tl.Events {
			got = append(got, e.Provider+":"+e.EventID)
			require.Equal(t, []hub.Entity{cus}, e.Entities)
			d, err := o.ShowEvent(ctx, e.Provider+":"+e.EventID)
			require.NoError(t, err)
			require.Equal(t, []hub.Entity{cus}, d.Entities)
			for j := range d.Subscribers {
				switch n := len(d.Subscribers[j].HTTPAttempts); {
				case n == 0:
					d.Subscribers[j].HTTPAttempts = nil
				case n > 1:
					d.Subscribers[j].HTTPAttempts = d.Subscribers[j].HTTPAttempts[n-1:]
				}
			}
			require.Equal(t, d.Subscribers, e.Subscribers, e.EventID)
		}
		if tl.Next == "" {
			break
		}
		q.Before = tl.Next
	}
	require.Equal(t, []string{"paddle:evt_e", "stripe:evt_d", "paddle:evt_c", "stripe:evt_b", "paddle:evt_a"}, got)

	tl, err := o.EntityTimeline(ctx, ops.TimelineQuery{Entity: "cus_42"})
	require.NoError(t, err)
	require.Len(t, tl.Events, 5)
	require.Empty(t, tl.Next)
	byEvent := map[string]map[string]ops.SubscriberOutcome{}
	for _, e := range tl.Events {
		byEvent[e.EventID] = map[string]ops.SubscriberOutcome{}
		for _, so := range e.Subscribers {
			byEvent[e.EventID][so.Subscriber] = so
		}
	}
	require.Equal(t, "PENDING", tl.Events[0].Status)
	require.Equal(t, ops.OutcomeNotPublished, byEvent["evt_e"]["plain"].Outcome)
	billing := byEvent["evt_d"]["billing"]
	require.True(t, billing.Destination)
	require.Equal(t, ops.OutcomeNone, billing.Outcome, "attempted, not settled: pending")
	require.Len(t, billing.HTTPAttempts, 1)
	require.Equal(t, 503, billing.HTTPAttempts[0].Status, "the last attempt")

	rows, err := o.ListEvents(ctx, ops.EventFilter{Entity: "cus_42", Provider: "stripe", Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, []hub.Entity{cus}, rows[0].Entities)
	tl, err = o.EntityTimeline(ctx, ops.TimelineQuery{Entity: "nobody"})
	require.NoError(t, err)
	require.Empty(t, tl.Events)
}

// A bad entity is refused with the same message wherever it is given.
func TestEntityInput(t *testing.T) {
	ctx, _, o := newDBOps(t)
	for _, c := range []struct{ entity, want string }{
		{"", "entity: required: an entity id, e.g. cus_123"},
		{strings.Repeat("x", hub.MaxEntityIDLen+1), "entity: longer than 255 bytes (256)"},
		{"cus\n1", `entity: "cus\n1" contains control characters`},
		{"cus\x001", `entity: "cus\x001" contains control characters`},
		{"\xff", `entity: "\xff" is not valid UTF-8`},
	} {
		_, err := o.EntityTimeline(ctx, ops.TimelineQuery{Entity: c.entity})
		require.ErrorIs(t, err, ops.ErrInvalid, c.entity)
		require.EqualError(t, err, c.want)
		require.EqualError(t, ops.CheckEntity(c.entity), c.want)
		if c.entity != "" {
			_, err = o.ListEvents(ctx, ops.EventFilter{Entity: c.entity, Limit: 1})
			require.EqualError(t, err, c.want)
		}
	}
	_, err := o.EntityTimeline(ctx, ops.TimelineQuery{Entity: "cus_1", Limit: ops.MaxTimelineLimit + 1})
	require.ErrorIs(t, err, ops.ErrInvalid)
	_, err = o.EntityTimeline(ctx, ops.TimelineQuery{Entity: "cus_1", Before: "nonsense"})
	require.ErrorIs(t, err, ops.ErrInvalid)
}

// End to end: a Paddle webhook POSTed to the hub is found by the ids its
// provider extraction names, with the subscriber's outcome.
func TestEntityTimelineFromWebhook(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ctx := context.Background()
	s.startCredits()
	require.False(t, s.deliver("evt_ent_http"), "a first delivery")
	s.Eventually(func() bool {
		return s.Count(`SELECT count(*) FROM credits.processed_messages WHERE event_id = 'evt_ent_http'`) == 1
	}, "credits processed evt_ent_http")
	d, err := s.ops.ShowEvent(ctx, "paddle:evt_ent_http")
	require.NoError(t, err)
	require.NotEmpty(t, d.Entities, "the paddle extraction names the subscription and its customer")
	for _, e := range d.Entities {
		tl, err := s.ops.EntityTimeline(ctx, ops.TimelineQuery{Entity: e.ID})
		require.NoError(t, err)
		require.Len(t, tl.Events, 1, e.ID)
		require.Equal(t, "evt_ent_http", tl.Events[0].EventID)
		outcomes := map[string]string{}
		for _, so := range tl.Events[0].Subscribers {
			outcomes[so.Subscriber] = so.Outcome
		}
		require.Equal(t, ops.OutcomeProcessed, outcomes["credits"], e.ID)
	}
}
