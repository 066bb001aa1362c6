package relay_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/schema"
)

var keptStream = relay.StreamConfig{Name: schema.DefaultStream, Providers: []string{"paddle"}, Replicas: 1, DuplicateWindow: time.Minute}

// hubSide is one hub's relay and keeper over a bundle's database and
// stream.
type hubSide struct {
	relay   *relay.Relay
	keeper  *relay.Keeper
	metrics *metrics.Metrics
}

func (b *bundle) hub(t *testing.T, outbox relay.Outbox, now func() time.Time) hubSide {
	t.Helper()
	m := metrics.New(prometheus.NewRegistry())
	r, err := relay.New(outbox, b.js, relay.Config{Stream: keptStream.Name, DuplicateWindow: keptStream.DuplicateWindow,
		Metrics: m, Now: now, MarkDelay: time.Millisecond})
	require.NoError(t, err)
	k, err := relay.NewKeeper(r, b.js, b.store, relay.KeeperConfig{Stream: keptStream, Metrics: m, Now: now, RestoreBatch: 7})
	require.NoError(t, err)
	return hubSide{relay: r, keeper: k, metrics: m}
}

func (b *bundle) ingestN(t *testing.T, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s_%03d", prefix, i)
		b.ingest(t, ids[i])
	}
	return ids
}

// streamIDs counts the stream's messages by message id.
func (b *bundle) streamIDs(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	_, err := relay.Scan{Stream: keptStream.Name, HeadersOnly: true}.Run(context.Background(), b.js, func(m relay.ScanMsg) error {
		out[m.Msg.Headers().Get(schema.HeaderMsgID)]++
		return nil
	})
	require.NoError(t, err)
	return out
}

func (b *bundle) pending(t *testing.T) int {
	var n int
	require.NoError(t, b.store.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PENDING'`).Scan(&n))
	return n
}

func onceEach(ids ...[]string) map[string]int {
	out := map[string]int{}
	for _, list := range ids {
		for _, id := range list {
			out["paddle:"+id] = 1
		}
	}
	return out
}

// A lost stream (deleted, or replaced by another of the same name) is
// recreated and everything it held is published to it again, once.
func TestKeeperRestoresLostStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// lose loses the stream; it returns the message ids the new stream
		// holds already (not to be re-queued).
		lose func(t *testing.T, b *bundle) []string
		lost float64 // hub_stream_lost_total
	}{
		{"deleted", func(t *testing.T, b *bundle) []string {
			require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name))
			return nil
		}, 1},
		{"replaced by an operator, who republished one event", func(t *testing.T, b *bundle) []string {
			require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name))
			_, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: keptStream.Name, Subjects: []string{"paddle.>", "_replay.>"}})
			require.NoError(t, err)
			msg := nats.NewMsg("paddle.subscription.created")
			msg.Header = schema.Metadata{MsgID: "paddle:evt_old_003", EventID: "evt_old_003", Provider: "paddle",
				EventType: "subscription.created", ReceivedAt: time.Now()}.Header()
			_, err = b.js.PublishMsg(ctx, msg)
			require.NoError(t, err)
			return []string{"evt_old_003"}
		}, 1},
		{"deleted twice before the hub looked", func(t *testing.T, b *bundle) []string {
			require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name))
			_, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: keptStream.Name, Subjects: []string{"paddle.>"}})
			require.NoError(t, err)
			require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name))
			return nil
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, time.Minute)
			h := b.hub(t, b.store, nil)
			old := b.ingestN(t, "evt_old", 20)
			require.NoError(t, h.relay.Drain(ctx))
			// An event of a provider this hub does not serve, published by
			// another replica: that replica restores it, not this one.
			otherID := uuid.Must(uuid.NewV7())
			_, err := b.store.Ingest(ctx, []hub.Delivery{{ArchiveID: otherID, Provider: "clerk", EventID: "msg_other",
				EventType: "user.created", Body: []byte(`{}`), ReceivedAt: time.Now()}})
			require.NoError(t, err)
			require.NoError(t, b.store.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: otherID, Seq: 999, PublishedAt: time.Now()}}))
			require.NoError(t, h.keeper.Check(ctx))
			require.Equal(t, relay.StreamOK, h.keeper.State())
			require.Equal(t, onceEach(old), b.streamIDs(t))

			already := tc.lose(t, b)
			during := b.ingestN(t, "evt_during", 5) // committed while the stream is gone or new
			require.NoError(t, h.relay.Drain(ctx))  // fail (deleted) or succeed (replaced)

			require.NoError(t, h.keeper.Check(ctx))
			require.Equal(t, relay.StreamOK, h.keeper.State())
			require.Equal(t, tc.lost, testutil.ToFloat64(h.metrics.StreamLost))
			require.Equal(t, float64(len(old)-len(already)), testutil.ToFloat64(h.metrics.StreamRestored))
			require.NoError(t, h.relay.Drain(ctx))
			require.Zero(t, b.pending(t))
			require.Equal(t, onceEach(old, during), b.streamIDs(t))

			var otherStatus string
			require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT processing_status FROM webhook_event_status WHERE id = $1`, otherID).Scan(&otherStatus))
			require.Equal(t, "PROCESSED", otherStatus, "another provider's event is left to the replicas that serve it")

			// Nothing more to do.
			require.NoError(t, h.keeper.Check(ctx))
			require.Equal(t, tc.lost, testutil.ToFloat64(h.metrics.StreamLost))
			require.Zero(t, b.pending(t))
		})
	}
}

// Two hubs restore the same lost stream at the same time: each event is
// on the new stream once.
func TestKeeperConcurrentRestores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Minute)
	hubs := []hubSide{b.hub(t, b.store, nil), b.hub(t, b.store, nil)}
	old := b.ingestN(t, "evt_old", 50)
	require.NoError(t, hubs[0].relay.Drain(ctx))
	for _, h := range hubs {
		require.NoError(t, h.keeper.Check(ctx))
	}
	require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name))

	var wg sync.WaitGroup
	for _, h := range hubs {
		wg.Go(func() {
			// Each checks (one recreates, the other finds it replaced) and
			// publishes what is due, twice over.
			for range 2 {
				require.NoError(t, h.keeper.Check(ctx))
				require.NoError(t, h.relay.Drain(ctx))
			}
		})
	}
	wg.Wait()
	require.Zero(t, b.pending(t))
	require.Equal(t, onceEach(old), b.streamIDs(t))
	restored := testutil.ToFloat64(hubs[0].metrics.StreamRestored) + testutil.ToFloat64(hubs[1].metrics.StreamRestored)
	require.GreaterOrEqual(t, restored, float64(len(old)))
}

// What a stream with a maximum age had already dropped (or was about to)
// is not brought back.
func TestKeeperRestoreRespectsMaxAge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Minute)
	cfg := keptStream
	cfg.MaxAge = time.Hour
	require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name)) // setup's has no maximum age
	_, err := relay.EnsureStream(ctx, b.js, cfg)
	require.NoError(t, err)
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	h := b.hub(t, b.store, now)
	k, err := relay.NewKeeper(h.relay, b.js, b.store, relay.KeeperConfig{Stream: cfg, Metrics: h.metrics, Now: now})
	require.NoError(t, err)
	b.ingestN(t, "evt_old", 5)
	require.NoError(t, h.relay.Drain(ctx))
	require.Zero(t, b.pending(t))
	require.NoError(t, k.Check(ctx))
	require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name))

	offset.Store(int64(time.Hour)) // the events are an hour old: retention would drop them
	require.NoError(t, k.Check(ctx))
	require.Equal(t, relay.StreamOK, k.State())
	require.Equal(t, 1.0, testutil.ToFloat64(h.metrics.StreamLost))
	require.Zero(t, testutil.ToFloat64(h.metrics.StreamRestored))
	require.Zero(t, b.pending(t))
	require.Empty(t, b.streamIDs(t))
}

// A PubAck the lost stream sent just before it was deleted, whose row is
// not yet recorded PROCESSED when the loss is noticed: the restore waits
// for the record, then re-queues the row.
func TestKeeperRestoreWaitsForUnrecordedPubAcks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const rows = 30
	b := setup(t, time.Minute)
	out := recordingOutbox{Store: b.store, records: make(chan int, rows), gate: make(chan struct{})}
	h := b.hub(t, out, nil)
	require.NoError(t, h.keeper.Check(ctx))
	stop := b.fastOnly(t, h.relay, rows) // marks wait at the gate
	require.Eventually(t, func() bool { return b.msgs(t) == rows }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, rows, b.pending(t), "acknowledged, not yet recorded")

	require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name))
	checked := make(chan error, 1)
	go func() { checked <- h.keeper.Check(ctx) }()
	require.Eventually(t, func() bool { return h.keeper.State() == relay.StreamRestoring }, 10*time.Second, time.Millisecond)
	select {
	case err := <-checked:
		t.Fatalf("the restore finished (%v) while acknowledged rows were not recorded", err)
	default:
	}
	close(out.gate)
	require.NoError(t, <-checked)
	stop()
	require.Equal(t, float64(rows), testutil.ToFloat64(h.metrics.StreamRestored))
	require.NoError(t, h.relay.Drain(ctx))
	require.Zero(t, b.pending(t))
	ids := b.streamIDs(t)
	require.Len(t, ids, rows)
	for id, n := range ids {
		require.Equal(t, 1, n, id)
	}
}

// A stream missing and impossible to create (another stream holds the
// subjects) is "missing", and /readyz's verdict follows; once the way is
// clear the hub creates it.
func TestKeeperMissingStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Minute)
	h := b.hub(t, b.store, nil)
	require.Equal(t, relay.StreamUnknown, h.keeper.State())
	require.True(t, h.keeper.State().Ready())
	require.NoError(t, h.keeper.Check(ctx))
	require.Equal(t, 1.0, testutil.ToFloat64(h.metrics.StreamPresent))

	require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name))
	_, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: "BLOCKER", Subjects: []string{"paddle.>"}})
	require.NoError(t, err)
	requireBlockedUntilCleared(t, b, h, relay.StreamMissing, "")
	require.Equal(t, 1.0, testutil.ToFloat64(h.metrics.StreamLost))
}

// requireBlockedUntilCleared checks that the stream BLOCKER holds h's
// keeper in state (its check failing with an error containing msg), and
// that the keeper's stream is back once BLOCKER goes.
func requireBlockedUntilCleared(t *testing.T, b *bundle, h hubSide, state relay.StreamState, msg string) {
	t.Helper()
	ctx := context.Background()
	require.ErrorContains(t, h.keeper.Check(ctx), msg)
	require.Equal(t, state, h.keeper.State())
	require.False(t, h.keeper.State().Ready())
	require.Zero(t, testutil.ToFloat64(h.metrics.StreamPresent))

	require.NoError(t, b.js.DeleteStream(ctx, "BLOCKER"))
	require.NoError(t, h.keeper.Check(ctx))
	require.Equal(t, relay.StreamOK, h.keeper.State())
	require.Equal(t, 1.0, testutil.ToFloat64(h.metrics.StreamPresent))
}

// Another stream holding the hub's subjects (two creations raced through
// JetStream's overlap check) is a conflict: /readyz fails until it goes,
// and the events refused meanwhile are published once after it.
func TestKeeperSubjectConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Minute)
	h := b.hub(t, b.store, nil)
	require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name))
	// Race the keeper's creation against another stream's until both
	// exist (most attempts do on one server).
	for attempt := 0; ; attempt++ {
		require.Less(t, attempt, 500, "two overlapping streams never both created")
		var wg sync.WaitGroup
		var blockErr error
		wg.Add(2)
		go func() { defer wg.Done(); _ = h.keeper.Check(ctx) }()
		go func() {
			defer wg.Done()
			_, blockErr = b.js.CreateStream(ctx, jetstream.StreamConfig{Name: "BLOCKER", Subjects: []string{"paddle.>"}})
		}()
		wg.Wait()
		_, ourErr := b.js.Stream(ctx, keptStream.Name)
		if blockErr == nil && ourErr == nil {
			break // (the keeper's check may have looked for others before BLOCKER existed)
		}
		_ = b.js.DeleteStream(ctx, "BLOCKER")
		_ = b.js.DeleteStream(ctx, keptStream.Name)
	}
	requireBlockedUntilCleared(t, b, h, relay.StreamConflict, "BLOCKER")
}

// Publishes failing for want of the stream wake the keeper: it recreates
// the stream without waiting for its interval.
func TestKeeperWokenByPublishFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Minute)
	// A short grace: the claiming relay takes the rows the test commits at
	// its next poll.
	r, err := relay.New(b.store, b.js, relay.Config{Stream: keptStream.Name, DuplicateWindow: time.Minute,
		Grace: 10 * time.Millisecond, PollInterval: 20 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	require.NoError(t, err)
	k, err := relay.NewKeeper(r, b.js, b.store, relay.KeeperConfig{Stream: keptStream, Interval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, k.Start(ctx)) // its first check; the next one is an hour away
	t.Cleanup(func() { require.NoError(t, k.Stop(ctx)) })
	require.Equal(t, relay.StreamOK, k.State())
	require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name))
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { require.NoError(t, r.Stop(ctx)) })
	ids := b.ingestN(t, "evt_wake", 3)
	require.Eventually(t, func() bool { return b.pending(t) == 0 }, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, onceEach(ids), b.streamIDs(t))
}

// fastOutbox counts which path published rows: the claiming relay
// (Claim) or the fast path (recorded without a claim).
type fastOutbox struct {
	*store.Store
	recorded, claimed atomic.Int64
}

func (o *fastOutbox) RecordPublished(ctx context.Context, results []hub.PublishResult) error {
	o.recorded.Add(int64(len(results)))
	return o.Store.RecordPublished(ctx, results)
}

func (o *fastOutbox) Claim(ctx context.Context, limit int, lease time.Duration) ([]hub.OutboxRow, error) {
	rows, err := o.Store.Claim(ctx, limit, lease)
	o.claimed.Add(int64(len(rows)))
	return rows, err
}

// fast is how many results the fast path recorded.
func (o *fastOutbox) fast() int64 { return o.recorded.Load() - o.claimed.Load() }

// A row the fast path still holds when it is nearly as old as the relay's
// grace is not published from memory: the claiming relay publishes it,
// once, after the grace. (The relay's clock is moved, not waited for.)
func TestFastPathLeavesAgedRowsToTheRelay(t *testing.T) {
	t.Parallel()
	const grace = 2 * time.Second // the relay publishes from memory up to 1.6s
	for _, tc := range []struct {
		name    string
		age     time.Duration // added to the relay's clock
		expired bool
	}{
		{"fresh: the fast path publishes it", 0, false},
		{"inside the grace less the margin: the fast path publishes it", grace / 2, false},
		{"past the grace less the margin: left to the relay", grace*4/5 + 100*time.Millisecond, true},
		{"held for minutes: left to the relay", 3 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, time.Minute)
			out := &fastOutbox{Store: store.New(b.store.Pool())}
			r, err := relay.New(out, b.js, relay.Config{Stream: keptStream.Name, DuplicateWindow: time.Minute,
				Grace: grace, Metrics: b.metrics, PollInterval: 20 * time.Millisecond, MarkDelay: time.Millisecond,
				Now: func() time.Time { return time.Now().Add(tc.age) }})
			require.NoError(t, err)
			d := hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: "evt_aged",
				EventType: "subscription.created", Body: []byte(`{}`), ReceivedAt: time.Now()}
			_, err = out.Ingest(context.Background(), []hub.Delivery{d})
			require.NoError(t, err)

			// The claiming relay runs too, but takes the row only once the
			// grace has passed on the database's clock (the relay's is the
			// one moved).
			require.NoError(t, r.Start(context.Background()))
			t.Cleanup(func() { require.NoError(t, r.Stop(context.Background())) })
			r.Enqueue(d)
			expired := b.metrics.Published.WithLabelValues(metrics.PublishExpired)
			if tc.expired {
				require.Eventually(t, func() bool { return testutil.ToFloat64(expired) == 1 }, 10*time.Second, 5*time.Millisecond)
				require.Zero(t, b.msgs(t), "not published from memory")
				var attempts int
				require.NoError(t, out.Pool().QueryRow(context.Background(),
					`SELECT publish_attempts FROM webhook_event_status WHERE processing_status = 'PENDING'`).Scan(&attempts))
				require.Zero(t, attempts, "nothing recorded: the row waits for the relay")
			}
			require.Eventually(t, func() bool { return b.pending(t) == 0 }, 20*time.Second, 10*time.Millisecond)
			require.Equal(t, map[string]int{"paddle:evt_aged": 1}, b.streamIDs(t))
			require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.Published.WithLabelValues(metrics.PublishOK)))
			if tc.expired {
				require.Equal(t, 1.0, testutil.ToFloat64(expired))
				require.EqualValues(t, 0, out.fast(), "the fast path recorded nothing")
				require.EqualValues(t, 1, out.claimed.Load(), "the relay published it")
			} else {
				require.Zero(t, testutil.ToFloat64(expired))
				require.EqualValues(t, 1, out.fast(), "the fast path published it")
				require.EqualValues(t, 0, out.claimed.Load())
			}
		})
	}
}
