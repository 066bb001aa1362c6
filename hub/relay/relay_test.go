package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/metrics"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
)

type bundle struct {
	store   *store.Store
	js      jetstream.JetStream
	stream  jetstream.Stream
	metrics *metrics.Metrics
}

func setup(t *testing.T, window time.Duration) *bundle {
	t.Helper()
	pool, _ := hubdb.Pool(t)
	_, js := hubtest.JetStream(t).Connect(t)
	st, err := relay.EnsureStream(context.Background(), js, relay.StreamConfig{
		Name: schema.DefaultStream, Providers: []string{"paddle"}, Replicas: 1, DuplicateWindow: window,
	})
	require.NoError(t, err)
	return &bundle{store: store.New(pool), js: js, stream: st, metrics: metrics.New(prometheus.NewRegistry())}
}

func (b *bundle) ingest(t *testing.T, eventID string) uuid.UUID {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	_, err := b.store.Ingest(context.Background(), []hub.Delivery{{
		ArchiveID: id, Provider: "paddle", EventID: eventID, EventType: "subscription.created",
		Body: []byte(`{"event_id":"` + eventID + `"}`), ReceivedAt: time.Now(),
	}})
	require.NoError(t, err)
	return id
}

func (b *bundle) msgs(t *testing.T) uint64 {
	info, err := b.stream.Info(context.Background())
	require.NoError(t, err)
	return info.State.Msgs
}

// EnsureStream merges this hub's subjects and settings into an existing
// stream: it adds and raises, never removes or lowers.
func TestEnsureStreamMerges(t *testing.T) {
	t.Parallel()
	hub := relay.StreamConfig{Name: "S", Providers: []string{"paddle", "clerk"}, Replicas: 1,
		DuplicateWindow: 2 * time.Minute, MaxAge: 720 * time.Hour}
	for _, tc := range []struct {
		name     string
		existing *jetstream.StreamConfig // nil: no stream
		subjects []string
		dups     time.Duration
		maxAge   time.Duration
	}{
		{"created with the hub's settings", nil,
			[]string{"paddle.>", "clerk.>", "_replay.>"}, 2 * time.Minute, 720 * time.Hour},
		{"subjects added, another replica's kept, settings raised",
			&jetstream.StreamConfig{Subjects: []string{"other.>", "paddle.>"}, Duplicates: time.Minute, MaxAge: time.Hour},
			[]string{"other.>", "paddle.>", "clerk.>", "_replay.>"}, 2 * time.Minute, 720 * time.Hour},
		{"larger settings never lowered",
			&jetstream.StreamConfig{Subjects: []string{"paddle.>"}, Duplicates: 5 * time.Minute},
			[]string{"paddle.>", "clerk.>", "_replay.>"}, 5 * time.Minute, 0},
		{"complete already",
			&jetstream.StreamConfig{Subjects: []string{"clerk.>", "_replay.>", "paddle.>"}, Duplicates: 2 * time.Minute, MaxAge: 720 * time.Hour},
			[]string{"clerk.>", "_replay.>", "paddle.>"}, 2 * time.Minute, 720 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, js := hubtest.JetStream(t).Connect(t)
			ctx := context.Background()
			if tc.existing != nil {
				cfg := *tc.existing
				cfg.Name, cfg.Storage = "S", jetstream.FileStorage
				_, err := js.CreateStream(ctx, cfg)
				require.NoError(t, err)
			}
			st, err := relay.EnsureStream(ctx, js, hub)
			require.NoError(t, err)
			info, err := st.Info(ctx)
			require.NoError(t, err)
			require.ElementsMatch(t, tc.subjects, info.Config.Subjects)
			require.Equal(t, tc.dups, info.Config.Duplicates)
			require.Equal(t, tc.maxAge, info.Config.MaxAge)
			require.Equal(t, jetstream.FileStorage, info.Config.Storage)
			// Again: nothing changes.
			again, err := relay.EnsureStream(ctx, js, hub)
			require.NoError(t, err)
			require.Equal(t, info.Config.Subjects, again.CachedInfo().Config.Subjects)
			require.Equal(t, info.Created, again.CachedInfo().Created)
		})
	}
}

// A row whose earlier publish attempt may have been stored, retried after
// JetStream forgot the message id: the relay must find it in the stream
// instead of storing the event a second time.
func TestRetryAfterDuplicateWindowLooksInTheStream(t *testing.T) {
	t.Parallel()
	const window = 200 * time.Millisecond
	b := setup(t, window)
	ctx := context.Background()
	id := b.ingest(t, "evt_lost_ack")

	// The earlier attempt: JetStream stored it, the PubAck never came back.
	msg := nats.NewMsg("paddle.subscription.created")
	msg.Data = []byte(`{}`)
	msg.Header = schema.Metadata{MsgID: "paddle:evt_lost_ack", EventID: "evt_lost_ack", Provider: "paddle",
		EventType: "subscription.created", ReceivedAt: time.Now()}.Header()
	ack, err := b.js.PublishMsg(ctx, msg)
	require.NoError(t, err)
	rows, err := b.store.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.NoError(t, b.store.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: rows[0].ArchiveID, Err: "timeout", RetryIn: 0}}))

	// Wait out the server's duplicate window: a plain re-publish would now
	// be stored again. (Time must pass on the server's clock; nothing can
	// signal it.)
	time.Sleep(3 * window)

	r, err := relay.New(b.store, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: window, Metrics: b.metrics})
	require.NoError(t, err)
	require.NoError(t, r.Drain(ctx))

	require.EqualValues(t, 1, b.msgs(t), "the event must not be stored twice")
	var seq uint64
	var status string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT processing_status, stream_seq FROM webhook_event_status WHERE id = $1`, id).Scan(&status, &seq))
	require.Equal(t, "PROCESSED", status)
	require.Equal(t, ack.Sequence, seq)
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.Published.WithLabelValues(metrics.PublishFound)))
}

// The same, when the earlier attempt never reached the stream: the lookup
// finds nothing and the relay publishes.
func TestRetryAfterDuplicateWindowPublishesWhenAbsent(t *testing.T) {
	t.Parallel()
	const window = 200 * time.Millisecond
	b := setup(t, window)
	ctx := context.Background()
	b.ingest(t, "evt_never_sent")
	rows, err := b.store.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.NoError(t, b.store.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: rows[0].ArchiveID, Err: "nats down"}}))
	time.Sleep(3 * window)

	r, err := relay.New(b.store, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: window, Metrics: b.metrics})
	require.NoError(t, err)
	require.NoError(t, r.Drain(ctx))
	require.EqualValues(t, 1, b.msgs(t))
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.Published.WithLabelValues(metrics.PublishOK)))
}

// Publish failures back off and leave the row PENDING with the error.
func TestPublishFailureBacksOff(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Minute)
	ctx := context.Background()
	// A stream that does not hold the subject makes the publish fail.
	require.NoError(t, b.js.DeleteStream(ctx, schema.DefaultStream))
	b.ingest(t, "evt_nostream")
	r, err := relay.New(b.store, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute, PublishTimeout: 2 * time.Second})
	require.NoError(t, err)
	require.NoError(t, r.Drain(ctx))
	var status string
	var attempts int
	var errMsg string
	var first, next time.Time
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT processing_status, publish_attempts, error_message,
		first_attempt_at, next_attempt_at FROM webhook_event_status`).Scan(&status, &attempts, &errMsg, &first, &next))
	require.Equal(t, "PENDING", status)
	require.Equal(t, 1, attempts)
	require.Contains(t, errMsg, "publish:")
	require.True(t, next.After(first.Add(100*time.Millisecond)), "the retry waits at least the minimum backoff after the attempt")
}

// runFast commits n PENDING rows, starts r and hands every row to its
// fast path (the claiming relay leaves them to it for the default grace,
// longer than the test). stop stops r and returns once the fast path
// recorded what it sent.
func (b *bundle) runFast(t *testing.T, r *relay.Relay, n int) (stop func()) {
	t.Helper()
	ds := b.commit(t, "evt_fast", n)
	require.NoError(t, r.Start(context.Background()))
	for _, d := range ds {
		r.Enqueue(d)
	}
	return func() {
		require.NoError(t, r.Stop(context.Background()))
	}
}

// fastOnly is runFast with the fast path alone: no claiming relay runs
// (a keeper's check makes every row due at once, grace or not). stop
// returns once the fast path recorded what it sent.
func (b *bundle) fastOnly(t *testing.T, r *relay.Relay, n int) (stop func()) {
	t.Helper()
	return feedFast(r, b.commit(t, "evt_fast", n))
}

// feedFast runs r's fast path alone and hands it ds. stop returns once
// the fast path recorded what it sent.
func feedFast(r *relay.Relay, ds []hub.Delivery) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		relay.RunFast(ctx, r)
	}()
	for _, d := range ds {
		r.Enqueue(d)
	}
	return func() {
		cancel()
		<-done
	}
}

// recordingOutbox is the real store, reporting the size of each
// RecordPublished statement.
type recordingOutbox struct {
	*store.Store
	records chan int
	gate    chan struct{} // when not nil, recording waits for it to close
}

func (o recordingOutbox) RecordPublished(ctx context.Context, results []hub.PublishResult) error {
	if o.gate != nil {
		<-o.gate
	}
	err := o.Store.RecordPublished(ctx, results)
	o.records <- len(results)
	return err
}

// relayClock is the relay's clock in TestFastPathPipeline: far from the
// database's, so the test tells whose time a column holds.
var relayClock = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

func TestFastPathPipeline(t *testing.T) {
	t.Parallel()
	const rows = 600
	for _, tc := range []struct {
		name      string
		markDelay time.Duration
		markBatch int
		// wait: recording completes before shutdown.
		wait bool
	}{
		// Nothing is recorded until shutdown, which records all at once.
		{"shutdown records what is gathered", time.Hour, 1 << 20, false},
		// A statement starts once MarkBatch results are gathered.
		{"batch size triggers a statement", time.Hour, 100, false},
		// The delay triggers statements however few results there are.
		{"delay triggers a statement", 20 * time.Millisecond, 1 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, time.Minute)
			out := recordingOutbox{Store: b.store, records: make(chan int, rows)}
			r, err := relay.New(out, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute,
				BatchSize: 50, MarkDelay: tc.markDelay, MarkBatch: tc.markBatch,
				Now: func() time.Time { return relayClock }})
			require.NoError(t, err)
			stop := b.runFast(t, r, rows)
			var sizes []int
			recorded := 0
			if tc.wait {
				for recorded < rows {
					n := <-out.records
					sizes = append(sizes, n)
					recorded += n
				}
			}
			// Every message reaches the stream, marked or not.
			require.Eventually(t, func() bool { return b.msgs(t) == rows }, 10*time.Second, 10*time.Millisecond)
			stop()
			close(out.records)
			for n := range out.records {
				sizes = append(sizes, n)
				recorded += n
			}
			require.Equal(t, rows, recorded, "statement sizes %v", sizes)
			switch {
			case tc.markBatch == 1<<20 && !tc.wait:
				require.Equal(t, []int{rows}, sizes)
				var stamped int
				require.NoError(t, b.store.Pool().QueryRow(context.Background(),
					`SELECT count(*) FROM webhook_event_status WHERE published_at = $1`, relayClock).Scan(&stamped))
				require.Equal(t, rows, stamped, "published_at is when the relay saw the PubAck, not when it marked the row")
			case tc.markBatch < rows:
				for _, n := range sizes[:len(sizes)-1] {
					require.GreaterOrEqual(t, n, tc.markBatch, "statement sizes %v", sizes)
				}
			}
			var processed int
			require.NoError(t, b.store.Pool().QueryRow(context.Background(),
				`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PROCESSED' AND stream_seq IS NOT NULL`).Scan(&processed))
			require.Equal(t, rows, processed)
			require.EqualValues(t, rows, b.msgs(t))
		})
	}
}

// A slow mark statement must not hold up publishing: the messages of
// later batches reach the stream while the first statement is stuck.
func TestFastPathSlowMarkDoesNotBlockPublishing(t *testing.T) {
	t.Parallel()
	const rows = 1500
	b := setup(t, time.Minute)
	out := recordingOutbox{Store: b.store, records: make(chan int, rows), gate: make(chan struct{})}
	// The fast path queues 16 batches, so all 1,500 rows fit.
	r, err := relay.New(out, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute,
		BatchSize: 100, MarkDelay: time.Millisecond, MarkBatch: 1})
	require.NoError(t, err)
	stop := b.runFast(t, r, rows)
	// The first statement is stuck at the gate; 15 batches are more than
	// the pipeline's stages and queues hold (six).
	require.Eventually(t, func() bool { return b.msgs(t) == rows }, 10*time.Second, 10*time.Millisecond)
	close(out.gate)
	stop()
	close(out.records)
	recorded := 0
	for n := range out.records {
		recorded += n
	}
	require.Equal(t, rows, recorded)
	var processed int
	require.NoError(t, b.store.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PROCESSED'`).Scan(&processed))
	require.Equal(t, rows, processed)
}

// Every path that publishes an event sets one Hookhub-Entity header per
// entity, "<kind>:<id>": the fast path (from memory), the claiming relay
// (from the outbox, the archive's entities column) and a republished copy;
// an event without entities has no such header.
func TestPublishedMessagesCarryEntities(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Minute)
	es := []hub.Entity{{Kind: "customer", ID: "cus_1"}, {Kind: "subscription", ID: "sub:2"}}
	want := []string{"customer:cus_1", "subscription:sub:2"}
	deliver := func(eventID string, es []hub.Entity) hub.Delivery {
		d := hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: eventID,
			EventType: "subscription.created", Body: []byte(`{"event_id":"` + eventID + `"}`),
			ReceivedAt: time.Now(), Entities: es}
		_, err := b.store.Ingest(ctx, []hub.Delivery{d})
		require.NoError(t, err)
		return d
	}
	header := func(eventID string) []string {
		t.Helper()
		m, err := b.stream.GetLastMsgForSubject(ctx, "paddle.subscription.created")
		require.NoError(t, err)
		require.Equal(t, eventID, m.Header.Get(schema.HeaderEventID))
		return m.Header.Values(schema.HeaderEntity)
	}

	// The claiming relay, from the outbox.
	r, err := relay.New(b.store, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	deliver("evt_claimed", es)
	require.NoError(t, r.Drain(ctx))
	require.Equal(t, want, header("evt_claimed"))
	deliver("evt_plain", nil)
	require.NoError(t, r.Drain(ctx))
	require.Empty(t, header("evt_plain"))

	// The fast path, from memory.
	fast := deliver("evt_fast", es)
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); relay.RunFast(fctx, r) }()
	r.Enqueue(fast)
	require.Eventually(t, func() bool { return b.msgs(t) == 3 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	<-done
	require.Equal(t, want, header("evt_fast"))

	// A republished copy, from the archive.
	rows, err := b.store.PublishedRows(ctx, hub.PublishedFilter{Provider: "paddle", EventID: "evt_claimed", Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	res := r.Republish(ctx, rows, "run1", 10*time.Second)
	require.Len(t, res, 1)
	require.NotZero(t, res[0].Seq, res[0].Err)
	m, err := b.stream.GetLastMsgForSubject(ctx, "paddle.subscription.created")
	require.NoError(t, err)
	require.Equal(t, "paddle:evt_claimed", m.Header.Get(schema.HeaderRepublish))
	require.Equal(t, want, m.Header.Values(schema.HeaderEntity))
}
