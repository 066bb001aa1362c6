package ops_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// loadRange is a stream WEBHOOKS holding events paddle evt_load_0..n-1
// (every 25th about 1 MB, the others small) and a subscriber "loadsub"
// (its tables and its durable consumer on paddle.>), as a hub and a
// subscriber that ran would leave them.
func loadRange(t *testing.T, n int, cfg func(*ops.Config)) (*ops.Ops, jetstream.JetStream, time.Time) {
	t.Helper()
	return loadRangeOn(t, n, jetstream.StreamConfig{}, cfg)
}

// loadRangeOn is loadRange on a stream with settings sc (zero: the hub's).
func loadRangeOn(t *testing.T, n int, sc jetstream.StreamConfig, cfg func(*ops.Config)) (*ops.Ops, jetstream.JetStream, time.Time) {
	t.Helper()
	ctx := context.Background()
	pool, _ := hubdb.Pool(t)
	_, js := hubtest.JetStream(t).Connect(t)
	var err error
	if sc.Name == "" {
		_, err = relay.EnsureStream(ctx, js, relay.StreamConfig{Name: schema.DefaultStream, Providers: []string{"paddle"},
			Replicas: 1, DuplicateWindow: 2 * time.Minute})
	} else {
		_, err = js.CreateStream(ctx, sc)
	}
	require.NoError(t, err)
	require.NoError(t, subscriber.Migrate(ctx, pool, "loadsub", nil))
	_, err = js.CreateConsumer(ctx, schema.DefaultStream, jetstream.ConsumerConfig{Durable: "loadsub",
		FilterSubjects: []string{"paddle.>"}, AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	since := time.Now().Add(-time.Second)
	big := make([]byte, 1000_000)
	var futures []jetstream.PubAckFuture
	for i := range n {
		id := fmt.Sprintf("evt_load_%d", i)
		data := []byte(`{"event_id":"` + id + `"}`)
		if i%25 == 0 {
			data = big
		}
		h := nats.Header{}
		h.Set(schema.HeaderMsgID, schema.MsgID("paddle", id))
		h.Set(schema.HeaderEventID, id)
		h.Set(schema.HeaderProvider, "paddle")
		h.Set(schema.HeaderEventType, "subscription.created")
		f, err := js.PublishMsgAsync(&nats.Msg{Subject: "paddle.subscription.created", Header: h, Data: data})
		require.NoError(t, err)
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatal(err)
		}
	}
	c := ops.Config{Archive: store.New(pool), Subscribers: pool, JetStream: js, Stream: schema.DefaultStream}
	if cfg != nil {
		cfg(&c)
	}
	return ops.New(c), js, since
}

// A replay's range read under concurrent load (1 MB and small events,
// several dry runs and runs at once) covers every event of the range, or
// fails with an error: never a success for part of it.
//
// The short form reads 620 events (25 of them about 1 MB: each read takes
// several fetches, each run several publish batches); the long form
// (HOOKHUB_SOAK=1) reads 1,240, a heavier load to hunt a rarer
// interleaving of the reads.
func TestReplayRangeUnderLoadIsWholeOrAnError(t *testing.T) {
	t.Parallel()
	events := hubtest.Scale(t, 620, 1240)
	o, _, since := loadRange(t, events, func(c *ops.Config) { c.MaxConcurrentReplays = 8 })
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var whole, failed int
	for i := range 8 {
		wg.Go(func() {
			req := ops.ReplayRequest{Subscriber: "loadsub", Since: since, DryRun: i%4 != 0, Wait: time.Second}
			res, err := o.Replay(ctx, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Logf("replay %d (dry run %v): %v", i, req.DryRun, err)
				require.NotErrorIs(t, err, ops.ErrNotFound, "the range is not empty")
				failed++
				return
			}
			require.Equal(t, events, res.Matched, "replay %d (dry run %v) answered success for part of the range", i, req.DryRun)
			if !req.DryRun {
				require.Equal(t, events, res.Delivered)
			}
			whole++
		})
	}
	wg.Wait()
	t.Logf("whole: %d, failed with an error: %d", whole, failed)
	require.Positive(t, whole, "a stream that answers is read to the end")
}

// startWaitingReplay starts a replay of loadsub from since that has read
// its range and published its copies, and waits for them (nobody consumes
// them) until cancel; done receives its error.
func startWaitingReplay(t *testing.T, o *ops.Ops, since time.Time) (cancel func(), done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	running := make(chan struct{})
	ended := make(chan error, 1)
	go func() {
		var once sync.Once
		_, err := o.Replay(ctx, ops.ReplayRequest{Subscriber: "loadsub", Since: since, Wait: time.Hour,
			Progress: func(ops.ReplayResult) { once.Do(func() { close(running) }) }})
		ended <- err
	}()
	select {
	case <-running:
	case err := <-ended:
		cancel()
		t.Fatalf("the replay ended: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the replay did not start")
	}
	return cancel, ended
}

// Replays beyond MaxConcurrentReplays are refused at once with ErrBusy,
// and a slot is free again when a replay ends. A dry run is a read, in
// the reads' pool: a running replay does not keep it out.
func TestReplayConcurrencyBound(t *testing.T) {
	t.Parallel()
	const events = 20
	o, _, since := loadRange(t, events, func(c *ops.Config) { c.MaxConcurrentReplays = 1 })
	cancel, done := startWaitingReplay(t, o, since)
	defer cancel()
	_, err := o.Replay(context.Background(), ops.ReplayRequest{Subscriber: "loadsub", Since: since, Wait: time.Second})
	require.ErrorIs(t, err, ops.ErrBusy)
	require.Contains(t, err.Error(), "1 replays and bulk actions are running")
	res, err := o.Replay(context.Background(), ops.ReplayRequest{Subscriber: "loadsub", Since: since, DryRun: true})
	require.NoError(t, err, "a dry run has the reads' pool")
	require.Equal(t, events, res.Matched)

	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	res, err = o.Replay(context.Background(), ops.ReplayRequest{Subscriber: "loadsub", Since: since, Wait: time.Second})
	require.NoError(t, err, "the slot is free again")
	require.Equal(t, events, res.Delivered)
}

// A range the stream will not deliver fails, naming how far it got,
// instead of answering "nothing matched" (here the stream refuses the
// read's consumer: it allows one consumer, the subscriber's).
func TestReplayFailsWhenTheRangeCannotBeRead(t *testing.T) {
	t.Parallel()
	sc := jetstream.StreamConfig{Name: schema.DefaultStream, Subjects: []string{"paddle.>", "_replay.>"}, MaxConsumers: 1}
	o, _, since := loadRangeOn(t, 5, sc, func(c *ops.Config) { c.ScanStall = time.Second })
	for _, op := range []struct {
		name string
		run  func() error
	}{
		{"dry run", func() error {
			_, err := o.Replay(context.Background(), ops.ReplayRequest{Subscriber: "loadsub", Since: since, DryRun: true})
			return err
		}},
		{"reconcile", func() error {
			_, err := o.Reconcile(context.Background(), since, time.Time{})
			return err
		}},
	} {
		err := op.run()
		require.ErrorIs(t, err, ops.ErrIncompleteRead, op.name)
		require.ErrorIs(t, err, relay.ErrScanStalled, op.name)
		require.NotErrorIs(t, err, ops.ErrNotFound, op.name)
		require.Contains(t, err.Error(), "read up to sequence 0 of 5", op.name)
		t.Logf("%s: %v", op.name, err)
	}
}

// While the stream stores what it is sent under another subject (a
// subject transform), republish (`hub republish` runs its own relay, which
// no keeper holds) and replay refuse to publish copies: each would be
// acknowledged, counted as published, and reach no subscriber. Dry runs
// still answer; once the transform is gone, both publish again.
func TestCopiesRefusedWhileTheStreamDiverts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const events = 5
	o, js, since := loadRange(t, events, nil)
	pool, _ := hubdb.Pool(t)
	republisher := newOps(t, pool, js)
	at := time.Now().Add(-time.Hour)
	archive(t, pool, at, "evt_re_1", "evt_re_2")
	publish(t, pool)

	st, err := js.Stream(ctx, schema.DefaultStream)
	require.NoError(t, err)
	good := st.CachedInfo().Config
	diverted := good
	diverted.SubjectTransform = &jetstream.SubjectTransformConfig{Destination: "moved.>"}
	_, err = js.UpdateStream(ctx, diverted)
	require.NoError(t, err)
	before, err := st.Info(ctx)
	require.NoError(t, err)

	_, err = republisher.Republish(ctx, ops.RepublishFilter{Since: at.Add(-time.Minute)})
	require.ErrorIs(t, err, ops.ErrStreamMisconfigured)
	require.ErrorContains(t, err, "subject_transform")
	_, err = o.Replay(ctx, ops.ReplayRequest{Subscriber: "loadsub", Since: since, Wait: time.Second})
	require.ErrorIs(t, err, ops.ErrStreamMisconfigured)
	after, err := st.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, before.State.Msgs, after.State.Msgs, "no copy published")

	dry, err := o.Replay(ctx, ops.ReplayRequest{Subscriber: "loadsub", Since: since, DryRun: true})
	require.NoError(t, err, "a dry run publishes nothing")
	require.Equal(t, events, dry.Matched)
	rdry, err := republisher.Republish(ctx, ops.RepublishFilter{Since: at.Add(-time.Minute), DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 2, rdry.Matched)

	_, err = js.UpdateStream(ctx, good)
	require.NoError(t, err)
	res, err := republisher.Republish(ctx, ops.RepublishFilter{Since: at.Add(-time.Minute)})
	require.NoError(t, err)
	require.Equal(t, 2, res.Published)
	msg, err := st.GetMsg(ctx, res.LastSeq)
	require.NoError(t, err)
	require.Equal(t, "paddle.subscription.created", msg.Subject)
}

// The replays and dry runs running at once hold at most
// MaxReplayBytesHeld of messages together: past it a read fails with
// ErrBusy (429), and what a replay held is given back when it ends.
func TestReplayBytesHeldBound(t *testing.T) {
	t.Parallel()
	const events = 50 // two of about 1 MB
	o, _, since := loadRange(t, events, func(c *ops.Config) { c.MaxReplayBytesHeld = 3 << 20 })
	cancel, done := startWaitingReplay(t, o, since)
	defer cancel()
	_, err := o.Replay(context.Background(), ops.ReplayRequest{Subscriber: "loadsub", Since: since, Wait: time.Second})
	require.ErrorIs(t, err, ops.ErrBusy, "two runs of 2 MB do not fit 3 MB")
	require.ErrorContains(t, err, "hold more than 3 MiB")
	dry, err := o.Replay(context.Background(), ops.ReplayRequest{Subscriber: "loadsub", Since: since, DryRun: true})
	require.NoError(t, err, "a dry run holds headers only")
	require.Equal(t, events, dry.Matched)

	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	for range 2 { // what the failed run and the first held was given back
		res, err := o.Replay(context.Background(), ops.ReplayRequest{Subscriber: "loadsub", Since: since, Wait: time.Second})
		require.NoError(t, err)
		require.Equal(t, events, res.Delivered)
	}
}
