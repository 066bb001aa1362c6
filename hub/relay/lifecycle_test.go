package relay_test

import (
	"context"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/internal/startstop"
	"github.com/hookhub/hookhub/schema"
)

var (
	_ startstop.Service = (*relay.Relay)(nil)
	_ startstop.Service = (*relay.Keeper)(nil)
)

// commit commits n PENDING deliveries and returns them.
func (b *bundle) commit(t *testing.T, prefix string, n int) []hub.Delivery {
	t.Helper()
	ds := make([]hub.Delivery, n)
	for i := range ds {
		ds[i] = hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle",
			EventID: prefix + "_" + strconv.Itoa(i), EventType: "subscription.created",
			Body: []byte(`{}`), ReceivedAt: time.Now()}
	}
	_, err := b.store.Ingest(context.Background(), ds)
	require.NoError(t, err)
	return ds
}

func msgIDs(ds ...[]hub.Delivery) map[string]int {
	ids := map[string]int{}
	for _, d := range ds {
		for _, d := range d {
			ids[schema.MsgID(d.Provider, d.EventID)] = 1
		}
	}
	return ids
}

// Stop is safe before Start and idempotent. Start then Stop publishes
// every committed row: those handed to the fast path, and, by Stop's
// drain, those left to the claiming relay (held for its grace).
func TestRelayStartStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Minute)
	r, err := relay.New(b.store, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute, Workers: 2})
	require.NoError(t, err)
	require.NoError(t, r.Stop(ctx), "stop before start")
	require.NoError(t, r.Stop(ctx), "stop again")

	handed, left := b.commit(t, "evt_handed", 50), b.commit(t, "evt_left", 50)
	require.NoError(t, r.Start(ctx))
	require.NoError(t, r.Start(ctx), "a second start does nothing")
	for _, d := range handed {
		r.Enqueue(d)
	}
	require.NoError(t, r.Stop(ctx))
	require.Zero(t, b.pending(t))
	require.Equal(t, msgIDs(handed, left), b.streamIDs(t))
	require.NoError(t, r.Stop(ctx), "a second stop does nothing")
}

// A drain cut short by Stop's context is an error; the rows stay PENDING.
func TestRelayStopIncompleteDrain(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Minute)
	r, err := relay.New(b.store, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	b.commit(t, "evt_kept", 3)
	require.NoError(t, r.Start(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, r.Stop(ctx), context.Canceled)
	require.Equal(t, 3, b.pending(t))
	require.Zero(t, b.msgs(t))
}

// NATSUp, called before Start too, makes the rows held for the fast path
// due at once (the backlog of an outage drains) and has the keeper check
// the stream: here it recreates a deleted one, long before the grace or
// the keeper's interval has passed.
func TestRelayNATSUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Minute)
	r, err := relay.New(b.store, b.js, relay.Config{Stream: keptStream.Name, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	k, err := relay.NewKeeper(r, b.js, b.store, relay.KeeperConfig{Stream: keptStream, Interval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, k.Start(ctx))
	t.Cleanup(func() { require.NoError(t, k.Stop(ctx)) })
	held := b.commit(t, "evt_held", 5) // due after the default grace, 15 s
	require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name))
	r.NATSUp()
	r.NATSUp() // never blocks
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { require.NoError(t, r.Stop(ctx)) })
	require.Eventually(t, func() bool { return b.pending(t) == 0 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, msgIDs(held), b.streamIDs(t))
	// The keeper reports the recreated stream restoring until its restore
	// pass ends: wait for that, not for a moment.
	require.Eventually(t, func() bool { return k.State() == relay.StreamOK }, 10*time.Second, 20*time.Millisecond,
		"the keeper ends its restore: %s", k.State())
}

// Keeper.Stop is safe before Start and idempotent; Start returns nil when
// the stream cannot be checked yet (it keeps trying in the background).
func TestKeeperStartStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Minute)
	nc, js := hubtest.JetStream(t).Connect(t)
	r, err := relay.New(b.store, js, relay.Config{Stream: keptStream.Name, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	k, err := relay.NewKeeper(r, js, b.store, relay.KeeperConfig{Stream: keptStream})
	require.NoError(t, err)
	require.NoError(t, k.Stop(ctx), "stop before start")
	nc.Close() // JetStream cannot answer
	require.NoError(t, k.Start(ctx), "a stream not ready yet is no start-up error")
	require.Equal(t, relay.StreamUnknown, k.State())
	require.NoError(t, k.Start(ctx), "a second start does nothing")
	require.NoError(t, k.Stop(ctx))
	require.NoError(t, k.Stop(ctx), "a second stop does nothing")
}

// A hub that died leaves two kinds of unpublished events: committed and
// held for its fast path (it died before publishing), and claimed by its
// relay (it died holding the lease). Another hub's relay, woken by nothing
// but its poll, publishes both, once each, within the dead hub's grace or
// lease plus one poll interval (and a margin for a loaded machine).
func TestRelayPublishesWhatADeadHubLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Minute)
	const grace, lease = time.Second, 2 * time.Second

	// The dead hub: its relay never started (New holds what its store
	// commits for its fast path); it claimed a batch and died.
	dead := store.New(b.store.Pool())
	_, err := relay.New(dead, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute, Grace: grace})
	require.NoError(t, err)
	claimed := make([]hub.Delivery, 3)
	for i := range claimed {
		claimed[i] = hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle",
			EventID: "evt_dead_claimed_" + strconv.Itoa(i), EventType: "subscription.created", Body: []byte(`{}`), ReceivedAt: time.Now()}
	}
	_, err = b.store.Ingest(ctx, claimed) // not held: due at once, then claimed
	require.NoError(t, err)
	rows, err := dead.Claim(ctx, 10, lease)
	require.NoError(t, err)
	require.Len(t, rows, len(claimed))
	held := make([]hub.Delivery, 3)
	for i := range held {
		held[i] = hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle",
			EventID: "evt_dead_held_" + strconv.Itoa(i), EventType: "subscription.created", Body: []byte(`{}`), ReceivedAt: time.Now()}
	}
	_, err = dead.Ingest(ctx, held)
	require.NoError(t, err)
	died := time.Now()

	// The other hub, with the default poll interval.
	r, err := relay.New(b.store, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { _ = r.Stop(ctx) })
	bound := max(grace, lease) + relay.DefaultPollInterval + 10*time.Second
	want := msgIDs(claimed, held)
	for !maps.Equal(want, b.streamIDs(t)) {
		require.Less(t, time.Since(died), bound, "not all published within %s: %v", bound, b.streamIDs(t))
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("published %s after the hub died", time.Since(died).Round(time.Millisecond))
	require.Eventually(t, func() bool { return b.pending(t) == 0 }, 10*time.Second, 50*time.Millisecond, "the results are recorded")
	require.Equal(t, want, b.streamIDs(t), "each once")
}

// groupOutbox is the store as the service wires it for the relay: the
// publishes it records ride the group commit.
type groupOutbox struct {
	*store.Store
	g *store.GroupCommitter
}

func (o groupOutbox) RecordPublished(ctx context.Context, results []hub.PublishResult) error {
	return o.g.RecordPublished(ctx, results)
}

// groupFast is a relay's fast path alone whose publishes a group
// committer records, their marks waiting an hour for an ingest statement
// to carry them, fed the deliveries newGroupFast committed.
type groupFast struct {
	*bundle
	g    *store.GroupCommitter
	ids  []uuid.UUID // the committed deliveries' archive ids
	stop func()      // returns once the fast path handed g what it sent
}

func newGroupFast(t *testing.T, prefix string, n int) groupFast {
	t.Helper()
	b := setup(t, time.Minute)
	g := b.store.GroupCommitter(64, 1, 10*time.Second, store.MarkDelay(time.Hour))
	require.NoError(t, g.Start(context.Background()))
	r, err := relay.New(groupOutbox{Store: b.store, g: g}, b.js, relay.Config{Stream: schema.DefaultStream,
		DuplicateWindow: time.Minute, BatchSize: 50, MarkDelay: time.Millisecond})
	require.NoError(t, err)
	ds := b.commit(t, prefix, n)
	ids := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		ids[i] = d.ArchiveID
	}
	return groupFast{bundle: b, g: g, ids: ids, stop: feedFast(r, ds)}
}

// outbox is how many of f's rows are still PENDING, and the total of
// their publish attempts.
func (f groupFast) outbox(t *testing.T) (pending, attempts int) {
	t.Helper()
	require.NoError(t, f.store.Pool().QueryRow(context.Background(), `
		SELECT count(*) FILTER (WHERE next_attempt_at IS NOT NULL), coalesce(sum(publish_attempts), 0)
		FROM processed_webhook_events WHERE id = ANY($1)`, f.ids).Scan(&pending, &attempts))
	return pending, attempts
}

// The fast path's marks, handed to the group committer, ride later ingest
// statements: the published rows leave the outbox while deliveries keep
// coming, with no statement of their own (the mark delay is an hour).
func TestFastPathMarksRideTheGroupCommit(t *testing.T) {
	t.Parallel()
	const rows = 200
	ctx := context.Background()
	f := newGroupFast(t, "evt_fast", rows)

	carriers := 0
	require.Eventually(t, func() bool {
		carriers++
		_, err := f.g.Ingest(ctx, []hub.Delivery{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle",
			EventID: "evt_carrier_" + strconv.Itoa(carriers), EventType: "subscription.created",
			Body: []byte(`{}`), ReceivedAt: time.Now()}})
		require.NoError(t, err)
		pending, _ := f.outbox(t)
		return pending == 0
	}, 20*time.Second, 20*time.Millisecond)
	_, attempts := f.outbox(t)
	require.Equal(t, rows, attempts, "each row recorded once")
	require.EqualValues(t, rows, f.msgs(t))
	require.NoError(t, f.g.Stop(ctx))
	f.stop()
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
	f := newGroupFast(t, "evt_unmarked", rows)
	require.Eventually(t, func() bool { return f.msgs(t) == rows }, 10*time.Second, 10*time.Millisecond)
	// The "crash": the marks wait in the committer, nothing carries them.
	pending, attempts := f.outbox(t)
	require.Equal(t, rows, pending, "published, not yet marked")
	require.Zero(t, attempts)

	next, err := relay.New(f.store, f.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	require.NoError(t, next.Drain(ctx))
	pending, attempts = f.outbox(t)
	require.Zero(t, pending)
	require.Equal(t, rows, attempts)
	require.EqualValues(t, rows, f.msgs(t), "nothing stored twice")
	var seqs int
	require.NoError(t, f.store.Pool().QueryRow(ctx, `SELECT count(DISTINCT stream_seq) FROM processed_webhook_events
		WHERE id = ANY($1) AND stream_seq BETWEEN 1 AND $2`, f.ids, rows).Scan(&seqs))
	require.Equal(t, rows, seqs, "each row has its stored message's sequence")

	require.NoError(t, f.g.Stop(ctx)) // records the late marks
	f.stop()
	_, attempts = f.outbox(t)
	require.Equal(t, rows, attempts, "the late marks changed nothing")
}
