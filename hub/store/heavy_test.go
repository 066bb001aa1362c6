package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

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
