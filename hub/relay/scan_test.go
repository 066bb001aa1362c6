package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
)

// scanStream creates stream S on subjects a.> and b.> of a fresh server
// and publishes n messages, alternately on a.x and b.x, each carrying its
// number as data ("1", "2", ...): sequence i holds message i.
func scanStream(t *testing.T, n int) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	_, js := hubtest.JetStream(t).Connect(t)
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"a.>", "b.>"}})
	require.NoError(t, err)
	publishN(t, js, 1, n)
	return js, st
}

// publishN publishes messages from..to (numbers), odd on a.x, even on b.x.
func publishN(t *testing.T, js jetstream.JetStream, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		subj := "a.x"
		if i%2 == 0 {
			subj = "b.x"
		}
		_, err := js.Publish(context.Background(), subj, fmt.Appendf(nil, "%d", i))
		require.NoError(t, err)
	}
}

// collect runs s and returns the sequences read. The test's context
// bounds it: a scan that waited for silence would time out, as Stall is
// long unless the test sets it.
func collect(t *testing.T, js jetstream.JetStream, s Scan, each func(ScanMsg)) ([]uint64, ScanResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if s.Stream == "" {
		s.Stream = "S"
	}
	if s.Stall == 0 {
		s.Stall = time.Hour
	}
	var seqs []uint64
	res, err := s.Run(ctx, js, func(m ScanMsg) error {
		seqs = append(seqs, m.Meta.Sequence.Stream)
		if each != nil {
			each(m)
		}
		return nil
	})
	return seqs, res, err
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func TestScanEndsAtTheEndItKnew(t *testing.T) {
	t.Parallel()
	js, _ := scanStream(t, 50)
	// Messages published while the scan runs are past its end.
	published := false
	seqs, res, err := collect(t, js, Scan{batch: 7}, func(m ScanMsg) {
		if !published {
			published = true
			publishN(t, js, 51, 60)
		}
	})
	require.NoError(t, err)
	require.Equal(t, seqRange(1, 50), seqs)
	require.Equal(t, ScanResult{End: 50, Reached: 50, Msgs: 50}, res)

	// From a sequence, from a time.
	seqs, _, err = collect(t, js, Scan{StartSeq: 55}, nil)
	require.NoError(t, err)
	require.Equal(t, seqRange(55, 60), seqs)
	seqs, _, err = collect(t, js, Scan{StartSeq: 61}, nil)
	require.NoError(t, err)
	require.Empty(t, seqs)
	seqs, _, err = collect(t, js, Scan{StartTime: time.Now().Add(time.Hour)}, nil)
	require.NoError(t, err)
	require.Empty(t, seqs)
	seqs, _, err = collect(t, js, Scan{StartTime: time.Now().Add(-time.Hour), HeadersOnly: true}, nil)
	require.NoError(t, err)
	require.Equal(t, seqRange(1, 60), seqs)

	// An empty stream, a missing stream.
	_, err = js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "EMPTY", Subjects: []string{"e.>"}})
	require.NoError(t, err)
	seqs, _, err = collect(t, js, Scan{Stream: "EMPTY"}, nil)
	require.NoError(t, err)
	require.Empty(t, seqs)
	_, _, err = collect(t, js, Scan{Stream: "NOPE"}, nil)
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
}

func TestScanGapsAndFilters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, js jetstream.JetStream, st jetstream.Stream)
		scan    Scan
		want    []uint64
	}{
		{"deleted messages, the last one too", func(t *testing.T, _ jetstream.JetStream, st jetstream.Stream) {
			for _, seq := range []uint64{3, 4, 5, 20} {
				require.NoError(t, st.DeleteMsg(context.Background(), seq))
			}
		}, Scan{batch: 4}, append([]uint64{1, 2}, seqRange(6, 19)...)},
		{"purged range at the start", func(t *testing.T, _ jetstream.JetStream, st jetstream.Stream) {
			require.NoError(t, st.Purge(context.Background(), jetstream.WithPurgeSequence(11)))
		}, Scan{}, seqRange(11, 20)},
		{"one subject; the stream ends on another", nil, Scan{Subjects: []string{"a.x"}, batch: 3},
			[]uint64{1, 3, 5, 7, 9, 11, 13, 15, 17, 19}},
		{"several subjects", nil, Scan{Subjects: []string{"a.>", "b.x"}}, seqRange(1, 20)},
		{"a subject the stream holds nothing of", nil, Scan{Subjects: []string{"a.nothing"}}, nil},
		{"a subject whose messages were all deleted", func(t *testing.T, _ jetstream.JetStream, st jetstream.Stream) {
			require.NoError(t, st.Purge(context.Background(), jetstream.WithPurgeSubject("b.x")))
		}, Scan{Subjects: []string{"b.x"}}, nil},
		{"matching messages only after the end", func(t *testing.T, js jetstream.JetStream, st jetstream.Stream) {
			require.NoError(t, st.Purge(context.Background(), jetstream.WithPurgeSubject("b.x")))
		}, Scan{Subjects: []string{"b.x"}, StartSeq: 3}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			js, st := scanStream(t, 20)
			if tc.prepare != nil {
				tc.prepare(t, js, st)
			}
			seqs, res, err := collect(t, js, tc.scan, nil)
			require.NoError(t, err)
			require.Equal(t, tc.want, seqs)
			require.Equal(t, len(tc.want), res.Msgs)
		})
	}
}

func TestScanStop(t *testing.T) {
	t.Parallel()
	js, _ := scanStream(t, 20)
	n := 0
	res, err := Scan{Stream: "S", Stall: time.Hour}.Run(context.Background(), js, func(m ScanMsg) error {
		if n++; n == 5 {
			return ErrStopScan
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, uint64(5), res.Reached)
	boom := errors.New("boom")
	_, err = Scan{Stream: "S", Stall: time.Hour}.Run(context.Background(), js, func(ScanMsg) error { return boom })
	require.ErrorIs(t, err, boom)
}

// pauser pauses the scan's consumers: each one from its creation when all
// is set, else the current one when pause is called.
type pauser struct {
	t     *testing.T
	js    jetstream.JetStream
	until time.Duration
	all   bool

	mu      sync.Mutex
	current string
	created int
}

func (p *pauser) onConsumer(name string) {
	p.mu.Lock()
	p.current = name
	p.created++
	p.mu.Unlock()
	if p.all {
		p.pause()
	}
}

func (p *pauser) pause() {
	p.mu.Lock()
	name := p.current
	p.mu.Unlock()
	_, err := p.js.PauseConsumer(context.Background(), "S", name, time.Now().Add(p.until))
	require.NoError(p.t, err)
}

func TestScanRetriesASlowFetch(t *testing.T) {
	t.Parallel()
	js, _ := scanStream(t, 30)
	// The first consumer delivers nothing for 2 s: four fetches of 500 ms
	// come back empty, and the scan goes on.
	p := &pauser{t: t, js: js, until: 2 * time.Second}
	first := true
	s := Scan{Stall: 30 * time.Second, fetchWait: 500 * time.Millisecond, onConsumer: func(name string) {
		p.onConsumer(name)
		if first {
			first = false
			p.pause()
		}
	}}
	began := time.Now()
	seqs, res, err := collect(t, js, s, nil)
	require.NoError(t, err)
	require.Equal(t, seqRange(1, 30), seqs)
	require.Equal(t, uint64(30), res.Reached)
	require.GreaterOrEqual(t, time.Since(began), 2*time.Second, "the consumer was paused: the scan must have waited")
}

func TestScanFailsWithoutProgress(t *testing.T) {
	t.Parallel()
	js, _ := scanStream(t, 50)
	p := &pauser{t: t, js: js, until: time.Hour}
	s := Scan{Stall: 1500 * time.Millisecond, fetchWait: 300 * time.Millisecond, batch: 10, onConsumer: p.onConsumer}
	seqs, res, err := collect(t, js, s, func(m ScanMsg) {
		if m.Meta.Sequence.Stream == 10 {
			p.all = true // any consumer created later too
			p.pause()
		}
	})
	var se *ScanError
	require.ErrorAs(t, err, &se)
	require.ErrorIs(t, err, ErrScanStalled)
	require.Equal(t, ScanError{Stream: "S", Reached: 10, End: 50, Err: se.Err}, *se)
	require.Contains(t, err.Error(), "read up to sequence 10 of 50")
	require.Equal(t, seqRange(1, 10), seqs)
	require.Equal(t, uint64(10), res.Reached)
}

func TestScanStreamDeletedOrReplaced(t *testing.T) {
	t.Parallel()
	for _, replace := range []bool{false, true} {
		t.Run(fmt.Sprintf("replaced=%v", replace), func(t *testing.T) {
			t.Parallel()
			js, _ := scanStream(t, 50)
			s := Scan{Stall: time.Hour, fetchWait: 300 * time.Millisecond, batch: 10}
			_, res, err := collect(t, js, s, func(m ScanMsg) {
				if m.Meta.Sequence.Stream != 10 {
					return
				}
				ctx := context.Background()
				require.NoError(t, js.DeleteStream(ctx, "S"))
				if replace {
					_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"a.>", "b.>"}})
					require.NoError(t, err)
					publishN(t, js, 1, 60)
				}
			})
			require.ErrorIs(t, err, ErrStreamGone)
			var se *ScanError
			require.ErrorAs(t, err, &se)
			require.Equal(t, uint64(10), se.Reached)
			require.Equal(t, uint64(50), se.End)
			require.Equal(t, 10, res.Msgs)
		})
	}
}

func TestScanPurgedMidScan(t *testing.T) {
	t.Parallel()
	js, st := scanStream(t, 50)
	s := Scan{Stall: time.Hour, fetchWait: 300 * time.Millisecond, batch: 10}
	seqs, _, err := collect(t, js, s, func(m ScanMsg) {
		if m.Meta.Sequence.Stream == 10 {
			require.NoError(t, st.Purge(context.Background()))
		}
	})
	require.NoError(t, err, "what the stream no longer holds is not waited for")
	require.Equal(t, seqRange(1, 10), seqs)
}

func TestScanContextCancel(t *testing.T) {
	t.Parallel()
	js, _ := scanStream(t, 50)
	t.Run("in the callback", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := Scan{Stream: "S", Stall: time.Hour, batch: 10}.Run(ctx, js, func(m ScanMsg) error {
			if m.Meta.Sequence.Stream == 5 {
				cancel()
			}
			return nil
		})
		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("while waiting", func(t *testing.T) {
		p := &pauser{t: t, js: js, until: time.Hour, all: true}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := Scan{Stream: "S", Stall: time.Hour, fetchWait: 300 * time.Millisecond, onConsumer: p.onConsumer}.Run(ctx, js, func(ScanMsg) error { return nil })
			done <- err
		}()
		require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.created > 0 }, 10*time.Second, 10*time.Millisecond)
		cancel()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(10 * time.Second):
			t.Fatal("the scan did not end with its context")
		}
	})
}

// Messages the consumer delivered that never reached the scan (taken here
// by another reader of its consumer) are read again from a new consumer:
// a gap in the consumer's sequence, or a consumer that says it delivered
// more than the scan received.
func TestScanRereadsMessagesLostInTransit(t *testing.T) {
	t.Parallel()
	for _, stolen := range []int{5, 20} {
		t.Run(fmt.Sprintf("stolen=%d", stolen), func(t *testing.T) {
			t.Parallel()
			js, _ := scanStream(t, 20)
			consumers := 0
			s := Scan{fetchWait: 300 * time.Millisecond, onConsumer: func(name string) {
				if consumers++; consumers > 1 {
					return
				}
				ctx := context.Background()
				c, err := js.Consumer(ctx, "S", name)
				require.NoError(t, err)
				batch, err := c.Fetch(stolen, jetstream.FetchMaxWait(5*time.Second))
				require.NoError(t, err)
				n := 0
				for range batch.Messages() {
					n++
				}
				require.Equal(t, stolen, n)
			}}
			seqs, res, err := collect(t, js, s, nil)
			require.NoError(t, err)
			require.Equal(t, seqRange(1, 20), seqs)
			require.Equal(t, 20, res.Msgs)
			require.Equal(t, 2, consumers, "read again from a new consumer")
		})
	}
}

// A stream's consumer_limits bound the inactive threshold of every
// consumer created on it: the scan's ephemeral consumers fit under it, or
// every scan (the relay's look-up, the restore, replay, reconcile) stalls.
func TestScanUnderStreamConsumerLimits(t *testing.T) {
	t.Parallel()
	_, js := hubtest.JetStream(t).Connect(t)
	ctx := context.Background()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"a.>", "b.>"},
		ConsumerLimits: jetstream.StreamConsumerLimits{InactiveThreshold: 5 * time.Second}})
	require.NoError(t, err)
	publishN(t, js, 1, 30)
	seqs, res, err := collect(t, js, Scan{Stall: 3 * time.Second, fetchWait: 500 * time.Millisecond, batch: 10}, nil)
	require.NoError(t, err)
	require.Equal(t, seqRange(1, 30), seqs)
	require.Equal(t, 30, res.Msgs)
}

// However a scan ends (its end, a stop, its callback's error or panic, a
// cancelled context, a stall), it deletes its consumers: none is left for
// the inactive threshold, and none counts against the stream's
// max_consumers.
func TestScanLeavesNoConsumer(t *testing.T) {
	t.Parallel()
	js, st := scanStream(t, 40)
	errCallback := errors.New("callback failed")
	for _, tc := range []struct {
		name string
		scan Scan
		fn   func(ScanMsg) error
	}{
		{"end", Scan{}, func(ScanMsg) error { return nil }},
		{"stop", Scan{}, func(ScanMsg) error { return ErrStopScan }},
		{"error", Scan{batch: 5}, func(m ScanMsg) error {
			if m.Meta.Sequence.Stream == 7 {
				return errCallback
			}
			return nil
		}},
		{"panic", Scan{batch: 5}, func(m ScanMsg) error {
			if m.Meta.Sequence.Stream == 7 {
				panic("callback panicked")
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.scan
			s.Stream, s.Stall = "S", time.Hour
			func() {
				defer func() { _ = recover() }()
				_, _ = s.Run(context.Background(), js, tc.fn)
			}()
			info, err := st.Info(context.Background())
			require.NoError(t, err)
			require.Zero(t, info.State.Consumers)
		})
	}
	t.Run("cancel and stall", func(t *testing.T) {
		for _, stall := range []bool{false, true} {
			p := &pauser{t: t, js: js, until: time.Hour, all: true}
			ctx, cancel := context.WithCancel(context.Background())
			s := Scan{Stream: "S", Stall: time.Hour, fetchWait: 200 * time.Millisecond, onConsumer: p.onConsumer}
			if stall {
				s.Stall = time.Second
			} else {
				time.AfterFunc(time.Second, cancel)
			}
			_, err := s.Run(ctx, js, func(ScanMsg) error { return nil })
			cancel()
			require.Error(t, err)
			info, err := st.Info(context.Background())
			require.NoError(t, err)
			require.Zero(t, info.State.Consumers, "stall=%v", stall)
		}
	})
}

// A stream with SubjectDeleteMarkerTTL holds the delete markers the server
// writes when a subject's last message expires: they carry no message id
// and are no event, so StreamMsgIDs (what reconcile and the stream
// restore compare the archive with) leaves them out.
func TestStreamMsgIDsSkipsServerMarkers(t *testing.T) {
	t.Parallel()
	_, js := hubtest.JetStream(t).Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// MaxMsgsPerSubject 1 lets a message's TTL be shorter than the
	// markers' (a minute, longer than the test).
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"a.>"}, AllowMsgTTL: true,
		AllowRollup: true, SubjectDeleteMarkerTTL: time.Minute, MaxMsgsPerSubject: 1})
	require.NoError(t, err)
	_, err = js.PublishMsg(ctx, &nats.Msg{Subject: "a.keep", Header: nats.Header{schema.HeaderMsgID: {"p:1"}}})
	require.NoError(t, err)
	_, err = js.PublishMsg(ctx, &nats.Msg{Subject: "a.gone", Header: nats.Header{schema.HeaderMsgID: {"p:2"}, jetstream.MsgTTLHeader: {"1s"}}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		m, err := st.GetLastMsgForSubject(ctx, "a.gone")
		return err == nil && schema.IsServerMarker(m.Header)
	}, time.Minute, 20*time.Millisecond, "no delete marker on a.gone")

	held, err := StreamMsgIDs(ctx, js, Scan{Stream: "S"})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"p:1": true}, held)
}
