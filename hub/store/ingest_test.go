package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

// hub.Ingest commits through the store (or its group committer) and hands
// the relay exactly the deliveries committed PENDING: not a duplicate, not
// an event archived FAILED.
func TestIngestHandsPublishableToTheRelay(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	var enqueued []string
	relay := hub.EnqueueFunc(func(d hub.Delivery) { enqueued = append(enqueued, d.EventID) })

	g := s.GroupCommitter(4, 1, 10*time.Second)
	require.NoError(t, g.Start(ctx))
	t.Cleanup(func() { _ = g.Stop(context.Background()) })
	for name, c := range map[string]hub.Committer{"store": s, "group committer": g} {
		enqueued = nil
		failed := delivery(name+"_failed", `{}`)
		failed.Error = "cannot publish: bad type"
		outs, err := hub.NewIngest(c, relay).Ingest(ctx, []hub.Delivery{delivery(name+"_new", `{}`), failed, delivery(name+"_new", `{}`)})
		require.NoError(t, err, name)
		require.Equal(t, []hub.Outcome{{Status: hub.Pending}, {Status: hub.Failed}, {Status: hub.Skipped, Duplicate: true}}, outs, name)
		require.Equal(t, []string{name + "_new"}, enqueued, name)
	}

	// Without a relay, nothing is handed over: the claiming relay
	// publishes from the outbox.
	outs, err := hub.NewIngest(s, nil).Ingest(ctx, []hub.Delivery{delivery("evt_later", `{}`)})
	require.NoError(t, err)
	require.Equal(t, []hub.Outcome{{Status: hub.Pending}}, outs)
}

// FirstSeen answers with the first delivery's time of each event the hub
// accepted (a duplicate later changes nothing), leaves out the others, and
// refuses keys past its bound.
func TestFirstSeen(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	ctx := context.Background()
	at := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	_, err := st.Ingest(ctx, []hub.Delivery{statsDelivery("evt_fs_1", at), statsDelivery("evt_fs_2", at.Add(time.Second))})
	require.NoError(t, err)
	_, err = st.Ingest(ctx, []hub.Delivery{statsDelivery("evt_fs_1", at.Add(time.Minute))}) // a duplicate
	require.NoError(t, err)

	got, err := st.FirstSeen(ctx, []string{"paddle", "paddle", "paddle", "clerk"}, []string{"evt_fs_1", "evt_fs_2", "evt_nope", "evt_fs_1"})
	require.NoError(t, err)
	require.Len(t, got, 2)
	byID := map[string]time.Time{}
	for _, e := range got {
		require.Equal(t, "paddle", e.Provider)
		byID[e.EventID] = e.FirstSeen
	}
	require.True(t, byID["evt_fs_1"].Equal(at), "%s", byID["evt_fs_1"])
	require.True(t, byID["evt_fs_2"].Equal(at.Add(time.Second)))

	got, err = st.FirstSeen(ctx, nil, nil)
	require.NoError(t, err)
	require.Empty(t, got)
	_, err = st.FirstSeen(ctx, []string{"paddle"}, nil)
	require.Error(t, err)
	many := make([]string, store.MaxFirstSeenKeys+1)
	_, err = st.FirstSeen(ctx, many, many)
	require.ErrorContains(t, err, "at most 10000")
}

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

// heavyBody is a JSON array of n tiny objects: 2n+1 values and n names.
func heavyBody(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"i":%d}`, i)
	}
	b.WriteByte(']')
	return b.String()
}

func TestHeavy(t *testing.T) {
	t.Parallel()
	at := (store.MaxSharedValues - 1) / 3 // 3n+1 values and names: within the bound
	for _, tc := range []struct {
		name  string
		d     hub.Delivery
		heavy bool
	}{
		{"small", delivery("a", `{"id":"a"}`), false},
		{"at the bound", delivery("a", heavyBody(at)), false},
		{"past the bound", delivery("a", heavyBody(at+1)), true},
		{"a large flat string", delivery("a", `{"s":"`+strings.Repeat("x", 800<<10)+`"}`), false},
		{"the payload counts, not the body", hub.Delivery{Body: []byte("x=1"), Payload: []byte(heavyBody(at + 1))}, true},
	} {
		require.Equal(t, tc.heavy, store.Heavy([]hub.Delivery{tc.d}), tc.name)
	}
}

// A heavy body is committed alone: while its commit waits (here on a
// lock another transaction holds), the others are committed, and a
// second heavy one waits for the first, within its caller's deadline.
func TestGroupCommitterCommitsHeavyBodiesAlone(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	ctx := context.Background()
	// One committer: before, the heavy delivery's batch held it.
	g := store.New(pool).GroupCommitter(64, 1, time.Minute)
	require.NoError(t, g.Start(ctx))
	defer func() { require.NoError(t, g.Stop(ctx)) }()

	blocker, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = blocker.Rollback(ctx) }()
	_, err = blocker.Exec(ctx, `INSERT INTO processed_webhook_events (id, provider, event_id, event_type)
		VALUES (gen_random_uuid(), 'paddle', 'evt_heavy', 'subscription.created')`)
	require.NoError(t, err)

	heavy := delivery("evt_heavy", heavyBody(store.MaxSharedValues))
	heavyDone := make(chan error, 1)
	var heavyOut []hub.Outcome
	go func() {
		var err error
		heavyOut, err = g.Ingest(ctx, []hub.Delivery{heavy})
		heavyDone <- err
	}()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&n))
		return n > 0
	}, 30*time.Second, 20*time.Millisecond, "the heavy commit waits on the lock")

	smallDone := make(chan error, 1)
	go func() {
		for i := range 10 {
			if _, err := g.Ingest(ctx, []hub.Delivery{delivery(fmt.Sprintf("evt_small_%d", i), `{"a":1}`)}); err != nil {
				smallDone <- err
				return
			}
		}
		smallDone <- nil
	}()
	select {
	case err := <-smallDone:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the small deliveries waited for the heavy one's commit")
	}

	// A second heavy body waits for the first's slot, within its deadline.
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err = g.Ingest(short, []hub.Delivery{delivery("evt_heavy_2", heavyBody(store.MaxSharedValues))})
	require.True(t, errors.Is(err, hub.ErrUnavailable), "%v", err)

	// Past MaxHeavyWaiting waiting, one more is refused at once, not at
	// its deadline: heavy bodies cannot hold the hub's requests waiting.
	waitCtx, stopWaiting := context.WithCancel(ctx)
	waiters := make(chan error, store.MaxHeavyWaiting)
	for i := range store.MaxHeavyWaiting {
		go func() {
			_, err := g.Ingest(waitCtx, []hub.Delivery{delivery(fmt.Sprintf("evt_heavy_w%d", i), heavyBody(store.MaxSharedValues))})
			waiters <- err
		}()
	}
	// A try with its context already ended takes no place for long: it
	// is refused by its context while there is room, by the bound once
	// the waiters fill it.
	ended, cancel := context.WithCancel(ctx)
	cancel()
	require.Eventually(t, func() bool {
		_, err := g.Ingest(ended, []hub.Delivery{delivery("evt_heavy_x", heavyBody(store.MaxSharedValues))})
		return errors.Is(err, hub.ErrUnavailable) && !errors.Is(err, context.Canceled)
	}, 30*time.Second, 10*time.Millisecond, "refused by the bound while %d wait", store.MaxHeavyWaiting)
	stopWaiting()
	for range store.MaxHeavyWaiting {
		require.ErrorIs(t, <-waiters, hub.ErrUnavailable, "a waiter whose request ended")
	}

	require.NoError(t, blocker.Rollback(ctx))
	select {
	case err := <-heavyDone:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("the heavy delivery was not committed")
	}
	require.Len(t, heavyOut, 1)
	require.False(t, heavyOut[0].Duplicate)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT jsonb_array_length(payload) FROM webhook_events WHERE event_id = 'evt_heavy'`).Scan(&n))
	require.Equal(t, store.MaxSharedValues, n)
}

// A small batch waits up to the linger for company and commits as soon as
// it is small no longer; without a linger each delivery arriving alone is
// committed alone; Stop ends the wait at once, committing what waited.
func TestGroupCommitterLinger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		linger  time.Duration
		callers int  // each 100 ms after the previous one
		stop    bool // Stop while the first caller waits
		sizes   []int
	}{
		{"no linger: each alone", 0, 2, false, []int{1, 1}},
		{"a small batch waits for company, then commits at once", time.Minute, 2, false, []int{2}},
		{"a lone delivery commits when the linger ends", 200 * time.Millisecond, 1, false, []int{1}},
		{"Stop ends the wait", time.Minute, 1, true, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool, _ := hubdb.Pool(t)
			ctx := context.Background()
			var mu sync.Mutex
			var sizes []int
			// 16 deliveries at most: a batch under 2 is small.
			g := store.New(pool).GroupCommitter(16, 1, 10*time.Second, store.Linger(tc.linger), store.OnCommit(func(n int) {
				mu.Lock()
				sizes = append(sizes, n)
				mu.Unlock()
			}))
			require.NoError(t, g.Start(ctx))
			t.Cleanup(func() { _ = g.Stop(ctx) })
			errs := make(chan error, tc.callers)
			for i := range tc.callers {
				if i > 0 {
					time.Sleep(100 * time.Millisecond)
				}
				go func() {
					_, err := g.Ingest(ctx, []hub.Delivery{delivery(fmt.Sprintf("evt_linger_%d", i), `{}`)})
					errs <- err
				}()
			}
			if tc.stop {
				time.Sleep(100 * time.Millisecond)
				require.NoError(t, g.Stop(ctx))
			}
			for range tc.callers {
				select {
				case err := <-errs:
					require.NoError(t, err)
				case <-time.After(20 * time.Second):
					t.Fatal("a caller still waits: the linger held its batch")
				}
			}
			var dedup int
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM processed_webhook_events`).Scan(&dedup))
			require.Equal(t, tc.callers, dedup)
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, tc.sizes, sizes)
		})
	}
}

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
