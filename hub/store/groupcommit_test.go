package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

func TestGroupCommitterAnswersEachCaller(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	var mu sync.Mutex
	var sizes []int
	g := store.New(pool).GroupCommitter(16, 2, 10*time.Second, store.OnCommit(func(n int) {
		mu.Lock()
		sizes = append(sizes, n)
		mu.Unlock()
	}))
	require.NoError(t, g.Start(context.Background()))
	defer func() { require.NoError(t, g.Stop(context.Background())) }()

	// 200 callers, 50 distinct events, each event delivered 4 times at once.
	const callers, events = 200, 50
	outs := make([]hub.Outcome, callers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range callers {
		wg.Go(func() {
			<-start
			o, err := g.Ingest(context.Background(), []hub.Delivery{delivery(fmt.Sprintf("evt_%02d", i%events), `{}`)})
			require.NoError(t, err)
			require.Len(t, o, 1)
			outs[i] = o[0]
		})
	}
	close(start)
	wg.Wait()
	firsts := map[int]int{}
	for i, o := range outs {
		if !o.Duplicate {
			require.Equal(t, hub.Pending, o.Status)
			firsts[i%events]++
		} else {
			require.Equal(t, hub.Skipped, o.Status)
		}
	}
	require.Len(t, firsts, events)
	for e, n := range firsts {
		require.Equal(t, 1, n, "event %d has %d first deliveries", e, n)
	}
	var archive, dedup int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_event_status`).Scan(&archive))
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_webhook_events`).Scan(&dedup))
	require.Equal(t, callers, archive)
	require.Equal(t, events, dedup)
	total := 0
	for _, n := range sizes {
		require.LessOrEqual(t, n, 16, "a transaction holds at most maxBatch deliveries")
		total += n
	}
	require.Equal(t, callers, total, "OnCommit saw every delivery once")
	require.Less(t, len(sizes), callers, "callers shared transactions")
}

// One delivery Postgres refuses must not fail the others of its batch.
func TestGroupCommitterIsolatesAFailingDelivery(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	// One committer and a large batch, so the callers below share a transaction.
	g := store.New(pool).GroupCommitter(64, 1, 10*time.Second)
	require.NoError(t, g.Start(context.Background()))
	defer func() { require.NoError(t, g.Stop(context.Background())) }()

	bad := delivery(strings.Repeat("x", 300), `{}`) // longer than VARCHAR(255)
	var wg sync.WaitGroup
	errs := make([]error, 20)
	start := make(chan struct{})
	for i := range errs {
		wg.Go(func() {
			<-start
			d := delivery(fmt.Sprintf("evt_ok_%d", i), `{}`)
			if i == 7 {
				d = bad
			}
			_, errs[i] = g.Ingest(context.Background(), []hub.Delivery{d})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if i == 7 {
			require.ErrorIs(t, err, hub.ErrUnavailable)
			continue
		}
		require.NoError(t, err, "caller %d", i)
	}
	var dedup int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_webhook_events`).Scan(&dedup))
	require.Equal(t, 19, dedup)
}

func TestGroupCommitterStartStop(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	ctx := context.Background()
	g := store.New(pool).GroupCommitter(8, 1, 10*time.Second)
	_, err := g.Ingest(ctx, []hub.Delivery{delivery("evt_before_start", `{}`)})
	require.ErrorIs(t, err, store.ErrNotStarted)
	require.NoError(t, g.Start(ctx))
	require.NoError(t, g.Start(ctx), "starting a started committer does nothing")
	_, err = g.Ingest(ctx, []hub.Delivery{delivery("evt_before_stop", `{}`)})
	require.NoError(t, err)
	require.NoError(t, g.Stop(ctx))
	require.NoError(t, g.Stop(ctx), "idempotent")
	_, err = g.Ingest(ctx, []hub.Delivery{delivery("evt_after_stop", `{}`)})
	require.ErrorIs(t, err, store.ErrClosed)

	never := store.New(pool).GroupCommitter(8, 1, 10*time.Second)
	require.NoError(t, never.Stop(ctx), "safe when never started")
	require.ErrorIs(t, never.Start(ctx), store.ErrClosed, "no start after stop")
}

// Stop commits every request queued before it, and answers each caller.
func TestGroupCommitterStopCommitsQueued(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	ctx := context.Background()
	g := store.New(pool).GroupCommitter(4, 1, 10*time.Second)
	require.NoError(t, g.Start(ctx))
	const callers = 40
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			_, errs[i] = g.Ingest(ctx, []hub.Delivery{delivery(fmt.Sprintf("evt_stop_%02d", i), `{}`)})
		})
	}
	require.NoError(t, g.Stop(ctx))
	wg.Wait()
	committed := 0
	for _, err := range errs {
		if err == nil {
			committed++
			continue
		}
		require.ErrorIs(t, err, store.ErrClosed, "a caller that was not queued is refused, not lost")
	}
	var dedup int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM processed_webhook_events`).Scan(&dedup))
	require.Equal(t, committed, dedup, "every caller told OK was committed")
}
