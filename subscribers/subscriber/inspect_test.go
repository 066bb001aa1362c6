package subscriber_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// The inspection functions read what a running subscriber recorded: its
// processed events and dead letters, before and after a redrive, and find
// the subscribers of a database by their tables.
func TestInspection(t *testing.T) {
	env := subtest.NewParallel(t)
	ctx := context.Background()
	const name = "inspected"
	var c calls
	var broken atomic.Bool
	broken.Store(true)
	sub := newSub(t, env, name, nil)
	record := effectHandler(name, &c)
	sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		if broken.Load() && ev.EventID == "evt_bad" {
			return subscriber.Permanentf("cannot handle %s", ev.EventID)
		}
		return record(ctx, tx, ev)
	})
	subtest.Start(t, sub)

	// Before anything happened.
	last, err := subscriber.LastDeadLetterID(ctx, env.Pool, name)
	require.NoError(t, err)
	require.Zero(t, last)
	waiting, err := subscriber.CountWaitingDeadLetters(ctx, env.Pool, name)
	require.NoError(t, err)
	require.Zero(t, waiting)

	goodSeq := env.Publish(t, event(t, "evt_good"))
	env.Publish(t, event(t, "evt_bad"))
	eventually(t, func() bool { s := sub.Stats(); return s.Processed == 1 && s.DeadLettered == 1 })

	good := subscriber.EventKey{Provider: "paddle", EventID: "evt_good"}
	bad := subscriber.EventKey{Provider: "paddle", EventID: "evt_bad"}
	unknown := subscriber.EventKey{Provider: "paddle", EventID: "evt_never"}
	keys := []subscriber.EventKey{good, bad, unknown}

	processed, err := subscriber.ProcessedMessages(ctx, env.Pool, name, keys)
	require.NoError(t, err)
	require.Len(t, processed, 1)
	require.Equal(t, good, processed[0].EventKey)
	require.Equal(t, "processed", processed[0].Outcome)
	require.Equal(t, "paddle.subscription.created", processed[0].Subject)
	require.Equal(t, goodSeq, processed[0].StreamSeq)
	require.Zero(t, processed[0].DeadLetterID)
	require.False(t, processed[0].ProcessedAt.IsZero())

	dead, err := subscriber.DeadLettersOf(ctx, env.Pool, name, keys, 0)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Equal(t, bad, dead[0].EventKey)
	require.Contains(t, dead[0].Error, "cannot handle evt_bad")
	require.Equal(t, 1, dead[0].Attempts)
	require.Nil(t, dead[0].RedrivenAt)
	dlID := dead[0].ID

	last, err = subscriber.LastDeadLetterID(ctx, env.Pool, name)
	require.NoError(t, err)
	require.Equal(t, dlID, last)
	dead, err = subscriber.DeadLettersOf(ctx, env.Pool, name, keys, last)
	require.NoError(t, err)
	require.Empty(t, dead, "none written after the last one")
	waiting, err = subscriber.CountWaitingDeadLetters(ctx, env.Pool, name)
	require.NoError(t, err)
	require.EqualValues(t, 1, waiting)

	// The fix, and a redrive: the event is processed by its dead letter,
	// which no longer waits.
	broken.Store(false)
	n, err := subscriber.RequestRedrive(ctx, env.Pool, name, dlID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	eventually(t, func() bool { return sub.Stats().Redriven == 1 })
	waiting, err = subscriber.CountWaitingDeadLetters(ctx, env.Pool, name)
	require.NoError(t, err)
	require.Zero(t, waiting)
	processed, err = subscriber.ProcessedMessages(ctx, env.Pool, name, []subscriber.EventKey{bad})
	require.NoError(t, err)
	require.Len(t, processed, 1)
	require.Equal(t, dlID, processed[0].DeadLetterID)
	dead, err = subscriber.DeadLettersOf(ctx, env.Pool, name, []subscriber.EventKey{bad}, 0)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.NotNil(t, dead[0].RedrivenAt)

	// No keys, no query.
	processed, err = subscriber.ProcessedMessages(ctx, env.Pool, name, nil)
	require.NoError(t, err)
	require.Empty(t, processed)

	// Subscribers are the schemas with both library tables and a name the
	// library accepts.
	require.NoError(t, subscriber.Migrate(ctx, env.Pool, "quiet", nil))
	for _, stmt := range []string{
		`CREATE SCHEMA half`, `CREATE TABLE half.processed_messages (x int)`,
		`CREATE SCHEMA "Not-A-Name"`, `CREATE TABLE "Not-A-Name".processed_messages (x int)`, `CREATE TABLE "Not-A-Name".dead_letters (x int)`,
	} {
		_, err := env.Pool.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	names, err := subscriber.ListSubscribers(ctx, env.Pool)
	require.NoError(t, err)
	require.Equal(t, []string{name, "quiet"}, names)
}

// Every inspection function refuses a name that cannot be a subscriber's
// and reports a subscriber without tables as unknown.
func TestInspectionUnknownSubscriber(t *testing.T) {
	env := subtest.NewParallel(t)
	ctx := context.Background()
	keys := []subscriber.EventKey{{Provider: "paddle", EventID: "evt_1"}}
	for _, name := range []string{"nobody", `x"; DROP TABLE y; --`, "", "pg_catalog", "Caps"} {
		_, err := subscriber.CountWaitingDeadLetters(ctx, env.Pool, name)
		require.ErrorIs(t, err, subscriber.ErrUnknownSubscriber, name)
		_, err = subscriber.LastDeadLetterID(ctx, env.Pool, name)
		require.ErrorIs(t, err, subscriber.ErrUnknownSubscriber, name)
		_, err = subscriber.ProcessedMessages(ctx, env.Pool, name, keys)
		require.ErrorIs(t, err, subscriber.ErrUnknownSubscriber, name)
		_, err = subscriber.DeadLettersOf(ctx, env.Pool, name, keys, 0)
		require.ErrorIs(t, err, subscriber.ErrUnknownSubscriber, name)
	}
	names, err := subscriber.ListSubscribers(ctx, env.Pool)
	require.NoError(t, err)
	require.Empty(t, names)
}

// ReadActivity counts processed rows and dead letters per step of its
// window (and nothing outside it), samples at most SamplesPerStep
// processed rows per step, and says Partial when a table had more rows in
// the window than MaxRows.
func TestReadActivity(t *testing.T) {
	env := subtest.NewParallel(t)
	ctx := context.Background()
	const name = "charted"
	require.NoError(t, subscriber.Migrate(ctx, env.Pool, name, nil))
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	until := from.Add(time.Hour)
	step := 20 * time.Minute
	for i, at := range []time.Time{from, from.Add(time.Minute), from.Add(2 * time.Minute), from.Add(50 * time.Minute),
		from.Add(-time.Second), until} { // the last two: outside the window
		_, err := env.Pool.Exec(ctx, `INSERT INTO charted.processed_messages (subscriber, provider, event_id, subject, processed_at, outcome)
			VALUES ($1, 'paddle', $2, 'paddle.x', $3, 'processed')`, name, fmt.Sprint("evt_", i), at)
		require.NoError(t, err)
	}
	for _, at := range []time.Time{from.Add(-time.Hour), from.Add(30 * time.Minute), from.Add(31 * time.Minute)} {
		_, err := env.Pool.Exec(ctx, `INSERT INTO charted.dead_letters (subscriber, provider, event_id, subject, headers, data, error, attempts, created_at)
			VALUES ($1, 'paddle', 'evt_dl', 'paddle.x', '{}', '\x7b7d', 'boom', 1, $2)`, name, at)
		require.NoError(t, err)
	}
	w := subscriber.ActivityWindow{From: from, Until: until, Step: step, MaxRows: 100, SamplesPerStep: 2}
	a, err := subscriber.ReadActivity(ctx, env.Pool, name, w)
	require.NoError(t, err)
	require.False(t, a.Partial)
	require.Equal(t, []subscriber.ActivityBucket{
		{Start: from, Processed: 3},
		{Start: from.Add(step), DeadLettered: 2},
		{Start: from.Add(2 * step), Processed: 1},
	}, a.Buckets)
	require.Len(t, a.Samples, 3, "two of the first step (its newest), one of the last")
	require.Equal(t, "evt_2", a.Samples[0].EventID)
	require.Equal(t, "evt_1", a.Samples[1].EventID)
	require.Equal(t, "evt_3", a.Samples[2].EventID)

	w.MaxRows = 2
	a, err = subscriber.ReadActivity(ctx, env.Pool, name, w)
	require.NoError(t, err)
	require.True(t, a.Partial, "more rows in the window than MaxRows")
	require.Equal(t, []int64{1, 0, 1}, []int64{a.Buckets[0].Processed, a.Buckets[1].Processed, a.Buckets[2].Processed},
		"only the newest two processed rows counted")

	_, err = subscriber.ReadActivity(ctx, env.Pool, "no_such", w)
	require.ErrorIs(t, err, subscriber.ErrUnknownSubscriber)
	_, err = subscriber.ReadActivity(ctx, env.Pool, `bad"name`, w)
	require.ErrorIs(t, err, subscriber.ErrUnknownSubscriber)
	w.Step = 0
	_, err = subscriber.ReadActivity(ctx, env.Pool, name, w)
	require.Error(t, err)
}

// A handler reads the event's entities (Hookhub-Entity) from Event, as it
// reads its occurred-at: the valid values in order, a damaged one skipped
// without failing the message, and none when the hub sent none.
func TestEventEntities(t *testing.T) {
	env := subtest.NewParallel(t)
	sub := newSub(t, env, "entities", nil)
	var mu sync.Mutex
	seen := map[string]subscriber.Event{}
	sub.Handle("clerk.>", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		mu.Lock()
		defer mu.Unlock()
		seen[ev.EventID] = ev
		return nil
	})
	subtest.Start(t, sub)

	m := subtest.ClerkUserCreated(t, "msg_1", "user_1", "ada@example.com", time.Now())
	m.Entities = []schema.Entity{{Kind: "user", ID: "user_1"}, {Kind: "organization", ID: "org_1"}}
	env.Publish(t, m)
	none := subtest.ClerkUserCreated(t, "msg_2", "user_2", "bob@example.com", time.Now())
	env.Publish(t, none)
	damaged := subtest.ClerkUserCreated(t, "msg_3", "user_3", "cy@example.com", time.Now())
	subject, err := schema.Subject(damaged.Provider, damaged.EventType)
	require.NoError(t, err)
	h := schema.Metadata{MsgID: schema.MsgID(damaged.Provider, damaged.EventID), EventID: damaged.EventID,
		Provider: damaged.Provider, EventType: damaged.EventType, ArchiveID: "0193", ReceivedAt: time.Now()}.Header()
	for _, v := range []string{"junk", "user:", "User:user_3", "user:user_3", "user:user_3"} {
		h.Add(schema.HeaderEntity, v)
	}
	env.PublishRaw(t, &nats.Msg{Subject: subject, Data: damaged.Body, Header: h})
	eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 3 })

	mu.Lock()
	defer mu.Unlock()
	ev := seen["msg_1"]
	require.Equal(t, []schema.Entity{{Kind: "user", ID: "user_1"}, {Kind: "organization", ID: "org_1"}}, ev.Entities)
	require.Equal(t, "user_1", ev.Entity("user"))
	require.Equal(t, "org_1", ev.Entity("organization"))
	require.Empty(t, ev.Entity("customer"))
	require.Nil(t, seen["msg_2"].Entities)
	require.Equal(t, []schema.Entity{{Kind: "user", ID: "user_3"}}, seen["msg_3"].Entities, "damaged values skipped, not fatal")
	require.Zero(t, sub.Stats().Failed)
}
