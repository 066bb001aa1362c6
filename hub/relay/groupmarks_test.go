package relay_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/schema"
)

// groupOutbox is the store as the service wires it for the relay: the
// publishes it records ride the group commit.
type groupOutbox struct {
	*store.Store
	g *store.GroupCommitter
}

func (o groupOutbox) RecordPublished(ctx context.Context, results []hub.PublishResult) error {
	return o.g.RecordPublished(ctx, results)
}

// outboxState is how many of ids are still PENDING, and the total of
// their publish attempts.
func (b *bundle) outboxState(t *testing.T, ids []uuid.UUID) (pending, attempts int) {
	t.Helper()
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `
		SELECT count(*) FILTER (WHERE next_attempt_at IS NOT NULL), coalesce(sum(publish_attempts), 0)
		FROM processed_webhook_events WHERE id = ANY($1)`, ids).Scan(&pending, &attempts))
	return pending, attempts
}

func archiveIDs(ds []hub.Delivery) []uuid.UUID {
	ids := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		ids[i] = d.ArchiveID
	}
	return ids
}

// The fast path's marks, handed to the group committer, ride later ingest
// statements: the published rows leave the outbox while deliveries keep
// coming, with no statement of their own (the mark delay is an hour).
func TestFastPathMarksRideTheGroupCommit(t *testing.T) {
	t.Parallel()
	const rows = 200
	ctx := context.Background()
	b := setup(t, time.Minute)
	g := b.store.GroupCommitter(64, 1, 10*time.Second, store.MarkDelay(time.Hour))
	require.NoError(t, g.Start(ctx))
	r, err := relay.New(groupOutbox{Store: b.store, g: g}, b.js, relay.Config{Stream: schema.DefaultStream,
		DuplicateWindow: time.Minute, BatchSize: 50, MarkDelay: time.Millisecond})
	require.NoError(t, err)
	stop := b.fastOnly(t, r, rows)
	ids, err := b.store.Pool().Query(ctx, `SELECT id FROM processed_webhook_events`)
	require.NoError(t, err)
	published := []uuid.UUID{}
	for ids.Next() {
		var id uuid.UUID
		require.NoError(t, ids.Scan(&id))
		published = append(published, id)
	}
	require.NoError(t, ids.Err())
	require.Len(t, published, rows)

	carriers := 0
	require.Eventually(t, func() bool {
		carriers++
		_, err := g.Ingest(ctx, []hub.Delivery{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle",
			EventID: "evt_carrier_" + strconv.Itoa(carriers), EventType: "subscription.created",
			Body: []byte(`{}`), ReceivedAt: time.Now()}})
		require.NoError(t, err)
		pending, _ := b.outboxState(t, published)
		return pending == 0
	}, 20*time.Second, 20*time.Millisecond)
	_, attempts := b.outboxState(t, published)
	require.Equal(t, rows, attempts, "each row recorded once")
	require.EqualValues(t, rows, b.msgs(t))
	require.NoError(t, g.Stop(ctx))
	stop()
}

// A crash after the publish but before its deferred mark is recorded
// loses nothing and stores nothing twice: the rows stay PENDING, the next
// relay publishes them again (JetStream answers each as a duplicate with
// the stored message's sequence) and records them; the marks recorded
// late (here by the first committer's Stop) change nothing.
func TestPublishedButUnmarkedIsRecordedByTheNextRelay(t *testing.T) {
	t.Parallel()
	const rows = 120
	ctx := context.Background()
	b := setup(t, time.Minute)
	g := b.store.GroupCommitter(64, 1, 10*time.Second, store.MarkDelay(time.Hour))
	require.NoError(t, g.Start(ctx))
	first, err := relay.New(groupOutbox{Store: b.store, g: g}, b.js, relay.Config{Stream: schema.DefaultStream,
		DuplicateWindow: time.Minute, BatchSize: 50, MarkDelay: time.Millisecond})
	require.NoError(t, err)
	ds := b.commit(t, "evt_unmarked", rows)
	ctxFast, cancelFast := context.WithCancel(ctx)
	fastDone := make(chan struct{})
	go func() {
		defer close(fastDone)
		relay.RunFast(ctxFast, first)
	}()
	for _, d := range ds {
		first.Enqueue(d)
	}
	require.Eventually(t, func() bool { return b.msgs(t) == rows }, 10*time.Second, 10*time.Millisecond)
	// The "crash": the marks wait in the committer, nothing carries them.
	pending, attempts := b.outboxState(t, archiveIDs(ds))
	require.Equal(t, rows, pending, "published, not yet marked")
	require.Zero(t, attempts)

	next, err := relay.New(b.store, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	require.NoError(t, next.Drain(ctx))
	pending, attempts = b.outboxState(t, archiveIDs(ds))
	require.Zero(t, pending)
	require.Equal(t, rows, attempts)
	require.EqualValues(t, rows, b.msgs(t), "nothing stored twice")
	var seqs int
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT count(DISTINCT stream_seq) FROM processed_webhook_events
		WHERE id = ANY($1) AND stream_seq BETWEEN 1 AND $2`, archiveIDs(ds), rows).Scan(&seqs))
	require.Equal(t, rows, seqs, "each row has its stored message's sequence")

	require.NoError(t, g.Stop(ctx)) // records the late marks
	cancelFast()
	<-fastDone
	_, attempts = b.outboxState(t, archiveIDs(ds))
	require.Equal(t, rows, attempts, "the late marks changed nothing")
}
