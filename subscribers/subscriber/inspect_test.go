package subscriber_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// The inspection functions read what a running subscriber recorded: its
// processed events and dead letters, before and after a redrive, and find
// the subscribers of a database by their tables.
func TestInspection(t *testing.T) {
	t.Parallel()
	env := subtest.New(t)
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
	t.Parallel()
	env := subtest.New(t)
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
