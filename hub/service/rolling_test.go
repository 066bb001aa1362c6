package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/migrations"
	"github.com/hookhub/hookhub/schema"
)

// What a hub of the previous version (schema version 3) writes: its ingest
// statement, and its relay's claim and mark, copied verbatim. The archive
// row was the outbox: PENDING, then rewritten PROCESSED.
const v3IngestSQL = `
WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[],
                         $7::text[], $8::timestamptz[], $9::timestamptz[], $10::timestamptz[], $11::text[],
                         $14::text[])
        WITH ORDINALITY AS t(id, provider, event_id, event_type, payload, body,
                             signature, signed_at, occurred_at, received_at, error_message, trace_parent, ord)
), dedup AS (
    INSERT INTO processed_webhook_events (id, provider, event_id, event_type, processed_at)
    -- Sorted by key, so concurrent batches take row locks in one order and
    -- never deadlock; within a key the earliest delivery wins.
    SELECT id, provider, event_id, event_type, received_at FROM input ORDER BY provider, event_id, ord
    ON CONFLICT ON CONSTRAINT uq_processed_webhook_events_provider_event_id DO NOTHING
    RETURNING id
)
INSERT INTO webhook_events (id, provider, event_id, event_type, payload, signature, processing_status,
                            error_message, created_at, body, signed_at, occurred_at, next_attempt_at,
                            first_attempt_at, trace_parent)
SELECT i.id, i.provider, i.event_id, i.event_type, i.payload::jsonb, NULLIF(i.signature, ''),
       CASE WHEN d.id IS NULL THEN 'SKIPPED' WHEN i.error_message <> '' THEN 'FAILED' ELSE 'PENDING' END,
       CASE WHEN d.id IS NULL THEN NULL ELSE NULLIF(i.error_message, '') END,
       i.received_at,
       CASE WHEN d.id IS NULL THEN NULL ELSE i.body END,
       NULLIF(i.signed_at, $13), NULLIF(i.occurred_at, $13),
       CASE WHEN d.id IS NOT NULL AND i.error_message = '' THEN now() + $12 * interval '1 millisecond' END,
       -- The committing process publishes right after the commit, so a
       -- first attempt may happen from now on.
       CASE WHEN d.id IS NOT NULL AND i.error_message = '' THEN now() END,
       NULLIF(i.trace_parent, '')
FROM input i LEFT JOIN dedup d ON d.id = i.id
ORDER BY i.ord
RETURNING id, processing_status`

// v3ClaimSQL is version 3's claim, narrowed to one row so that the test
// decides which row the old relay holds.
const v3ClaimSQL = `
SELECT id FROM webhook_events
WHERE processing_status = 'PENDING' AND next_attempt_at <= now() AND id = $1
ORDER BY next_attempt_at LIMIT 10 FOR UPDATE SKIP LOCKED`

const v3MarkPublishedSQL = `
UPDATE webhook_events w
SET processing_status = 'PROCESSED', published_at = COALESCE(NULLIF(u.at, $4), clock_timestamp()),
    stream_seq = u.seq, publish_attempts = w.publish_attempts + 1, next_attempt_at = NULL,
    error_message = NULL, first_attempt_at = COALESCE(w.first_attempt_at, now())
FROM unnest($1::uuid[], $2::bigint[], $3::timestamptz[]) AS u(id, seq, at)
WHERE w.id = u.id AND w.processing_status = 'PENDING'`

// v3Ingest archives one delivery the way version 3 did, with no grace (the
// row is due for a relay at once), and returns its archive id.
func v3Ingest(t *testing.T, db pgx.Tx, provider, eventID, typ, errMsg string) uuid.UUID {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	body := []byte(`{"event_id":"` + eventID + `","event_type":"` + typ + `"}`)
	now := time.Now()
	_, err := db.Exec(context.Background(), v3IngestSQL, [][16]byte{id}, []string{provider}, []string{eventID}, []string{typ},
		[]string{string(body)}, pgtype.FlatArray[[]byte]{body}, []string{"sig"}, []time.Time{now}, []time.Time{{}},
		[]time.Time{now}, []string{errMsg}, int64(0), time.Time{}, []string{})
	require.NoError(t, err)
	return id
}

// v3Publish publishes an event as version 3's relay did and marks its
// archive row PROCESSED.
func v3Publish(t *testing.T, h *testHub, db pgx.Tx, id uuid.UUID, provider, eventID, typ string) {
	t.Helper()
	ctx := context.Background()
	subject, err := schema.Subject(provider, typ)
	require.NoError(t, err)
	msg := nats.NewMsg(subject)
	msg.Data = []byte(`{}`)
	msg.Header = schema.Metadata{MsgID: schema.MsgID(provider, eventID), EventID: eventID, Provider: provider,
		EventType: typ, ArchiveID: id.String(), ReceivedAt: time.Now()}.Header()
	ack, err := h.js.PublishMsg(ctx, msg)
	require.NoError(t, err)
	_, err = db.Exec(ctx, v3MarkPublishedSQL, [][16]byte{id}, []int64{int64(ack.Sequence)}, []time.Time{time.Now()}, time.Time{})
	require.NoError(t, err)
}

// TestRollingDeployAcrossMigration4 runs hubs of the previous version and
// of this one on one database across migration 00004 (the archive written
// once, publication state on the dedup row): events archived by the old
// hub before and during the migration, published or not, claimed by an old
// relay at the very moment the new hubs start, all end up on the stream
// exactly once, with the processing_status the seed design describes; and
// the migration rolls back and forward again without losing a state.
func TestRollingDeployAcrossMigration4(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := hubtest.Pool(t)
	m, err := migrations.Hub(pool)
	require.NoError(t, err)
	defer m.Close()
	// Back to version 3, the schema the previous hubs ran on.
	for {
		down, err := m.Down(ctx)
		require.NoError(t, err)
		if down.Version == 4 {
			break
		}
	}

	n := hubtest.JetStream(t)
	_, js := n.Connect(t)
	h := &testHub{t: t, cfg: newTestConfig(t, dbURL, n.URL()), pool: pool, nats: n, js: js,
		paddle: mustSender(t, "paddle", paddleSecret), clerk: mustSender(t, "clerk", clerkSecret)}
	// The stream as the old hubs had it.
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: h.cfg.Stream, Duplicates: 2 * time.Minute,
		Subjects: []string{schema.ProviderFilter("paddle"), schema.ProviderFilter("clerk"), schema.ReplayFilter()}})
	require.NoError(t, err)

	// Before the migration, the old hub archived: a published event, its
	// duplicate, one it could not publish (its type), and one still waiting
	// for JetStream.
	v3 := func(f func(tx pgx.Tx)) {
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { f(tx); return nil }))
	}
	var published, pending uuid.UUID
	v3(func(tx pgx.Tx) {
		published = v3Ingest(t, tx, "paddle", "evt_v3_published", "subscription.created", "")
		v3Ingest(t, tx, "paddle", "evt_v3_published", "subscription.created", "")
		v3Ingest(t, tx, "paddle", "evt_v3_failed", "bad type*", "cannot publish: bad")
		pending = v3Ingest(t, tx, "paddle", "evt_v3_pending", "subscription.created", "")
	})
	v3(func(tx pgx.Tx) { v3Publish(t, h, tx, published, "paddle", "evt_v3_published", "subscription.created") })

	_, err = m.Up(ctx)
	require.NoError(t, err)

	// During the rolling deploy the old hub goes on: it archives one more
	// event, and its relay claims it (holding the row lock) just as the new
	// hub starts.
	var during uuid.UUID
	v3(func(tx pgx.Tx) { during = v3Ingest(t, tx, "paddle", "evt_v3_during", "subscription.created", "") })
	oldRelay, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer oldRelay.Rollback(ctx)
	rows, err := oldRelay.Query(ctx, v3ClaimSQL, during)
	require.NoError(t, err)
	claimed, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	require.Contains(t, claimed, during)

	h.start()
	a := h.deliver("paddle", "evt_new", "subscription.created")
	require.Equal(t, 200, a.status)
	// The new hub adopts and publishes the old hub's waiting event, but not
	// the one the old relay holds.
	require.Eventually(t, func() bool { return h.streamMsgIDs()["paddle:evt_v3_pending"] == 1 }, 30*time.Second, 20*time.Millisecond)
	require.Zero(t, h.streamMsgIDs()["paddle:evt_v3_during"], "a row an old relay holds is never taken")
	// The old relay publishes it and marks it, as version 3 did.
	v3Publish(t, h, oldRelay, during, "paddle", "evt_v3_during", "subscription.created")
	require.NoError(t, oldRelay.Commit(ctx))
	h.waitPublished()

	want := map[string]string{"evt_v3_published": "PROCESSED", "evt_v3_failed": "FAILED", "evt_v3_pending": "PROCESSED",
		"evt_v3_during": "PROCESSED", "evt_new": "PROCESSED"}
	statuses := func() map[string]string {
		rows, err := pool.Query(ctx, `SELECT event_id, processing_status FROM webhook_event_status
			WHERE processing_status <> 'SKIPPED' ORDER BY event_id`)
		require.NoError(t, err)
		got := map[string]string{}
		var id, st string
		_, err = pgx.ForEachRow(rows, []any{&id, &st}, func() error { got[id] = st; return nil })
		require.NoError(t, err)
		return got
	}
	require.Equal(t, want, statuses())
	require.Equal(t, 1, h.count(`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'SKIPPED'`))
	msgs := h.streamMsgIDs()
	for _, id := range []string{"evt_v3_published", "evt_v3_pending", "evt_v3_during", "evt_new"} {
		require.Equal(t, 1, msgs["paddle:"+id], id)
	}
	require.Len(t, msgs, 4)
	var seq *int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT stream_seq FROM webhook_event_status WHERE id = $1`, pending).Scan(&seq))
	require.NotNil(t, seq, "the adopted event's stream sequence is recorded")
	// The new hub never rewrote a row it archived itself.
	require.Equal(t, 1, h.count(`SELECT count(*) FROM webhook_events WHERE event_id = 'evt_new' AND processing_status IS NULL AND next_attempt_at IS NULL`))

	// Rolled back (an aborted deploy), every row keeps its status on the
	// archive as version 3 reads it; forward again, the same.
	h.stop()
	for {
		down, err := m.Down(ctx)
		require.NoError(t, err)
		if down.Version == 4 {
			break
		}
	}
	rows, err = pool.Query(ctx, `SELECT event_id, processing_status FROM webhook_events WHERE processing_status <> 'SKIPPED'`)
	require.NoError(t, err)
	got := map[string]string{}
	var id, st string
	_, err = pgx.ForEachRow(rows, []any{&id, &st}, func() error { got[id] = st; return nil })
	require.NoError(t, err)
	require.Equal(t, want, got)
	_, err = m.Up(ctx)
	require.NoError(t, err)
	require.Equal(t, want, statuses())
}
