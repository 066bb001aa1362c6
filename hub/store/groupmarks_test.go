package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
)

// markedRow is what a publish mark changes in an event's dedup row, and
// the transaction that wrote the row's current version.
type markedRow struct {
	seq      *int64
	attempts int
	inOutbox bool
	xmin     string
}

func readMarked(t *testing.T, pool *pgxpool.Pool, d hub.Delivery) markedRow {
	t.Helper()
	var r markedRow
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT stream_seq, publish_attempts,
		next_attempt_at IS NOT NULL, xmin::text FROM processed_webhook_events WHERE id = $1`, d.ArchiveID).
		Scan(&r.seq, &r.attempts, &r.inOutbox, &r.xmin))
	return r
}

// recordAsync has g record a publish of d (stream sequence seq) and
// returns where its outcome arrives.
func recordAsync(g *store.GroupCommitter, d hub.Delivery, seq uint64) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done <- g.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: d.ArchiveID, Seq: seq, PublishedAt: time.Now()}})
	}()
	return done
}

// stillWaiting fails unless nothing arrived on done for a moment: the
// marks are queued, not recorded.
func stillWaiting(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("marks recorded before anything could carry them: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
}

// The group committer records the publish marks handed to it exactly
// once, whatever happens to the statement that carries them: the next
// ingest statement (in its transaction), a statement of their own when no
// ingest comes within the mark delay, a statement of their own after the
// shared transaction carrying them was refused, or Stop.
func TestGroupCommitterRecordsPublishMarks(t *testing.T) {
	t.Parallel()
	bad := delivery(strings.Repeat("x", 300), `{}`) // longer than VARCHAR(255)
	cases := []struct {
		name  string
		delay time.Duration
		// then runs once the mark is queued (or, for a short delay, may be
		// recorded); it returns the delivery whose commit must carry the
		// mark, if any.
		then func(t *testing.T, g *store.GroupCommitter) *hub.Delivery
	}{
		{"rides the next ingest", time.Hour, func(t *testing.T, g *store.GroupCommitter) *hub.Delivery {
			d := delivery("evt_carrier", `{}`)
			d.Entities = []hub.Entity{{Kind: "customer", ID: "ctm_1"}} // the statement with entities
			_, err := g.Ingest(context.Background(), []hub.Delivery{d})
			require.NoError(t, err)
			return &d
		}},
		{"rides the next ingest without entities", time.Hour, func(t *testing.T, g *store.GroupCommitter) *hub.Delivery {
			d := delivery("evt_plain_carrier", `{}`)
			_, err := g.Ingest(context.Background(), []hub.Delivery{d})
			require.NoError(t, err)
			return &d
		}},
		{"alone when no ingest comes", 20 * time.Millisecond, nil},
		{"alone after a refused transaction", time.Hour, func(t *testing.T, g *store.GroupCommitter) *hub.Delivery {
			_, err := g.Ingest(context.Background(), []hub.Delivery{delivery("evt_with_bad", `{}`), bad})
			require.ErrorIs(t, err, hub.ErrUnavailable)
			return nil
		}},
		{"alone after a refused shared transaction", time.Hour, func(t *testing.T, g *store.GroupCommitter) *hub.Delivery {
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range 20 {
				wg.Go(func() {
					<-start
					d := delivery(fmt.Sprintf("evt_shared_%d", i), `{}`)
					if i == 7 {
						d = bad
					}
					_, _ = g.Ingest(context.Background(), []hub.Delivery{d})
				})
			}
			close(start)
			wg.Wait()
			return nil
		}},
		{"flushed by Stop", time.Hour, func(t *testing.T, g *store.GroupCommitter) *hub.Delivery {
			require.NoError(t, g.Stop(context.Background()))
			return nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, pool := newStore(t)
			s.HoldNew(time.Hour)
			ctx := context.Background()
			g := s.GroupCommitter(64, 1, 10*time.Second, store.MarkDelay(c.delay))
			require.NoError(t, g.Start(ctx))
			t.Cleanup(func() { _ = g.Stop(context.Background()) })
			published := delivery("evt_published", `{}`)
			_, err := g.Ingest(ctx, []hub.Delivery{published})
			require.NoError(t, err)
			require.True(t, readMarked(t, pool, published).inOutbox)

			done := recordAsync(g, published, 42)
			var carrier *hub.Delivery
			if c.then != nil {
				stillWaiting(t, done)
				carrier = c.then(t, g)
			}
			require.NoError(t, <-done)
			got := readMarked(t, pool, published)
			require.False(t, got.inOutbox, "out of the outbox")
			require.NotNil(t, got.seq)
			require.Equal(t, int64(42), *got.seq)
			require.Equal(t, 1, got.attempts, "recorded once")
			if carrier != nil {
				require.Equal(t, readMarked(t, pool, *carrier).xmin, got.xmin, "committed by the carrier's transaction")
			}
			// Recording it again (a relay published it too) changes nothing.
			require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: published.ArchiveID, Seq: 43}}))
			require.Equal(t, got.attempts, readMarked(t, pool, published).attempts)
		})
	}
}

// Before Start and after Stop, marks are recorded at once on their own;
// failed publishes always are.
func TestGroupCommitterRecordsMarksWhenNotRunning(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	s.HoldNew(time.Hour)
	ctx := context.Background()
	before, after, failed := delivery("evt_before", `{}`), delivery("evt_after", `{}`), delivery("evt_failed", `{}`)
	_, err := s.Ingest(ctx, []hub.Delivery{before, after, failed})
	require.NoError(t, err)
	g := s.GroupCommitter(64, 1, 10*time.Second, store.MarkDelay(time.Hour))
	require.NoError(t, <-recordAsync(g, before, 1))
	require.False(t, readMarked(t, pool, before).inOutbox)

	require.NoError(t, g.Start(ctx))
	require.NoError(t, g.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: failed.ArchiveID, Err: "nats down", RetryIn: time.Minute}}))
	f := readMarked(t, pool, failed)
	require.True(t, f.inOutbox, "a failed publish stays in the outbox")
	require.Equal(t, 1, f.attempts, "recorded without waiting for a carrier")

	require.NoError(t, g.Stop(ctx))
	require.NoError(t, <-recordAsync(g, after, 2))
	require.False(t, readMarked(t, pool, after).inOutbox)
}

// Under concurrent ingest and marks, with two committers, every mark is
// recorded exactly once, whichever statement carries it, and every
// caller is answered.
func TestGroupCommitterMarksUnderLoad(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	s.HoldNew(time.Hour)
	ctx := context.Background()
	g := s.GroupCommitter(16, 2, 10*time.Second, store.MarkDelay(5*time.Millisecond))
	require.NoError(t, g.Start(ctx))
	const workers, each = 16, 15
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				d := delivery(fmt.Sprintf("evt_load_%d_%d", w, i), `{}`)
				if _, err := g.Ingest(ctx, []hub.Delivery{d}); err != nil {
					errs <- err
					continue
				}
				errs <- g.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: d.ArchiveID, Seq: uint64(1 + w*each + i)}})
			}
		})
	}
	wg.Wait()
	require.NoError(t, g.Stop(ctx))
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var rows, pending, attempts, seqs int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE next_attempt_at IS NOT NULL),
		sum(publish_attempts), count(DISTINCT stream_seq) FROM processed_webhook_events`).Scan(&rows, &pending, &attempts, &seqs))
	require.Equal(t, workers*each, rows)
	require.Zero(t, pending)
	require.Equal(t, rows, attempts, "each mark recorded once")
	require.Equal(t, rows, seqs)
}
