package relay

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
)

func TestMergeStreamConfig(t *testing.T) {
	t.Parallel()
	want := jetstream.StreamConfig{Subjects: []string{"paddle.>", "_replay.>"}, Replicas: 3,
		Duplicates: 2 * time.Minute, MaxAge: 720 * time.Hour, Storage: jetstream.FileStorage}
	for _, tc := range []struct {
		name   string
		have   jetstream.StreamConfig
		merged jetstream.StreamConfig
		added  []string
		raised int
		kept   int
	}{
		{"identical: nothing to do", want, want, nil, 0, 0},
		{"another replica's subjects kept, ours added",
			jetstream.StreamConfig{Subjects: []string{"other.>"}, Replicas: 3, Duplicates: 2 * time.Minute, MaxAge: 720 * time.Hour, Storage: jetstream.MemoryStorage},
			jetstream.StreamConfig{Subjects: []string{"other.>", "paddle.>", "_replay.>"}, Replicas: 3, Duplicates: 2 * time.Minute, MaxAge: 720 * time.Hour, Storage: jetstream.MemoryStorage},
			[]string{"paddle.>", "_replay.>"}, 0, 1}, // storage differs (memory)
		{"smaller settings raised",
			jetstream.StreamConfig{Subjects: []string{"paddle.>", "_replay.>"}, Replicas: 1, Duplicates: time.Minute, MaxAge: time.Hour, Storage: jetstream.FileStorage},
			want, nil, 3, 0},
		{"larger settings kept; unlimited age is the largest",
			jetstream.StreamConfig{Subjects: []string{"paddle.>", "_replay.>"}, Replicas: 5, Duplicates: time.Hour, Storage: jetstream.FileStorage},
			jetstream.StreamConfig{Subjects: []string{"paddle.>", "_replay.>"}, Replicas: 5, Duplicates: time.Hour, Storage: jetstream.FileStorage},
			nil, 0, 3},
		{"a wildcard that covers a subject is enough",
			jetstream.StreamConfig{Subjects: []string{">"}, Replicas: 3, Duplicates: 2 * time.Minute, MaxAge: 720 * time.Hour, Storage: jetstream.FileStorage},
			jetstream.StreamConfig{Subjects: []string{">"}, Replicas: 3, Duplicates: 2 * time.Minute, MaxAge: 720 * time.Hour, Storage: jetstream.FileStorage},
			nil, 0, 0},
		{"a narrower pattern is not",
			jetstream.StreamConfig{Subjects: []string{"paddle.*", "_replay.>"}, Replicas: 3, Duplicates: 2 * time.Minute, MaxAge: 720 * time.Hour, Storage: jetstream.FileStorage},
			jetstream.StreamConfig{Subjects: []string{"paddle.*", "_replay.>", "paddle.>"}, Replicas: 3, Duplicates: 2 * time.Minute, MaxAge: 720 * time.Hour, Storage: jetstream.FileStorage},
			[]string{"paddle.>"}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			merged, e := mergeStreamConfig(tc.have, want)
			require.Equal(t, tc.merged, merged)
			require.Equal(t, tc.added, e.added)
			require.Len(t, e.raised, tc.raised, "%v", e.raised)
			require.Len(t, e.kept, tc.kept, "%v", e.kept)
		})
	}
}

func TestRecordBarrier(t *testing.T) {
	t.Parallel()
	b := newRecordBarrier()
	ctx := context.Background()
	require.NoError(t, b.wait(ctx), "nothing in flight")

	before := b.enter()
	waited := make(chan error, 1)
	go func() { waited <- b.wait(ctx) }()
	// Wait until the waiter has started its epoch: entries from now on are
	// not waited for.
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.epoch > before
	}, 5*time.Second, time.Millisecond)
	after := b.enter()
	require.Greater(t, after, before)
	select {
	case err := <-waited:
		t.Fatalf("wait returned (%v) while a publish from before is open", err)
	default:
	}
	b.leave(before)
	require.NoError(t, <-waited)
	// The later one is still open, and a new wait waits for it.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, b.wait(short), context.DeadlineExceeded)
	b.leave(after)
	require.NoError(t, b.wait(ctx))
}

func TestStreamTrouble(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{jetstream.ErrNoStreamResponse, true},
		{fmt.Errorf("publish: %w", jetstream.ErrStreamNotFound), true},
		{&jetstream.APIError{ErrorCode: jsErrCodeStreamNotMatch, Description: "expected stream does not match"}, true},
		{&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamNotFound}, true},
		{&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamMessageExceedsMaximum}, true},
		{&jetstream.APIError{ErrorCode: jsErrCodeStreamSealed, Description: "invalid operation on sealed stream"}, true},
		{&jetstream.APIError{ErrorCode: jsErrCodeMsgIncrMissing, Description: "message counter increment is missing"}, true},
		{&jetstream.APIError{ErrorCode: jsErrCodeStreamStoreFailed, Description: "maximum messages exceeded"}, true},
		{&jetstream.APIError{ErrorCode: jetstream.JSErrCodeBadRequest}, false},
		{errors.New("no PubAck within 3s"), false},
		{context.DeadlineExceeded, false},
	} {
		require.Equal(t, tc.want, streamTrouble(tc.err), "%v", tc.err)
	}
}

// While publishing is held, send looks nothing up in the stream for rows
// past half the duplicate window (they are not published anyway): a long
// hold makes every row that old, and each batch would read the stream.
// Once the hold ends, it looks them up again.
func TestHeldRowsAreNotLookedUp(t *testing.T) {
	t.Parallel()
	nc, js := hubtest.JetStream(t).Connect(t)
	ctx := context.Background()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"paddle.>"}})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "paddle.other.event", []byte(`{}`)) // an empty stream needs no look-up
	require.NoError(t, err)
	var creates atomic.Int64
	sub, err := nc.Subscribe("$JS.API.CONSUMER.CREATE.S.>", func(*nats.Msg) { creates.Add(1) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, nc.Flush())
	pool, _ := hubdb.Pool(t)
	r, err := New(store.New(pool), js, Config{Stream: "S", DuplicateWindow: 2 * time.Minute})
	require.NoError(t, err)
	old := time.Now().Add(-time.Hour)
	rows := []hub.OutboxRow{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: "evt_old", EventType: "subscription.created",
		Body: []byte(`{}`), ReceivedAt: old, FirstAttemptAt: old, Attempts: 3}}

	r.hold(fmt.Errorf("held: stream S: %w: subject_transform", ErrStreamMisconfigured))
	res := r.publishWithin(ctx, rows, 5*time.Second)
	require.Zero(t, res[0].Seq)
	require.Contains(t, res[0].Err, "held: stream S")
	require.NoError(t, nc.Flush())
	require.Zero(t, creates.Load(), "no look-up while held")

	r.hold(nil)
	res = r.publishWithin(ctx, rows, 5*time.Second)
	require.NotZero(t, res[0].Seq, res[0].Err)
	require.Eventually(t, func() bool { return creates.Load() > 0 }, 10*time.Second, 10*time.Millisecond, "looked up once the hold ended")
}
