package relay

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
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
