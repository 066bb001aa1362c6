package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/credits"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

func TestMain(m *testing.M) { subtest.CommandMain(m, main, "CREDITS") }

func TestUsage(t *testing.T) {
	subtest.RunUsage(t, []subtest.Usage{
		{"help", []string{"--help"}, nil, 0, []string{"CREDITS_DATABASE_URL", "CREDITS_NATS_URL", "CREDITS_STREAM", "CREDITS_HTTP_ADDR", ":9101", "CREDITS_CONCURRENCY", "CREDITS_MAX_DELIVER", "CREDITS_DEFAULT_GRANT", "WEBHOOKS"}},
		{"unexpected argument", []string{"serve"}, nil, 2, []string{`unexpected argument "serve"`}},
		{"bad variable", nil, []string{"CREDITS_CONCURRENCY=0", "CREDITS_DEFAULT_GRANT=-1"}, 2, []string{"CREDITS_CONCURRENCY must be between", "CREDITS_DEFAULT_GRANT must not be negative"}},
		{"unparsable variable", nil, []string{"CREDITS_ACK_WAIT=soon"}, 2, []string{"CREDITS_ACK_WAIT"}},
	})
}

// Acceptance: SIGTERM with a message in flight → it is finished and acked,
// and the process exits 0. The message is held in flight by the test: an
// open transaction that inserted the same processed-message key makes the
// service's insert wait on the unique index. The test rolls it back only
// after the service has logged that it is stopping.
func TestSIGTERMFinishesInFlightAndExitsZero(t *testing.T) {
	env := subtest.NewParallel(t)
	ctx := context.Background()
	require.NoError(t, subscriber.Migrate(ctx, env.Pool, credits.Name, credits.Migrations))
	blocker, err := env.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = blocker.Rollback(ctx) }()
	_, err = blocker.Exec(ctx, `INSERT INTO credits.processed_messages (subscriber, provider, event_id, subject, processed_at, outcome)
		VALUES ('credits', 'paddle', 'evt_in_flight', 'x', NOW(), 'processed')`)
	require.NoError(t, err)

	const others = 20
	env.Publish(t, subtest.PaddleSubscription(t, "evt_in_flight", schema.PaddleSubscriptionCreated, time.Now(), "sub_f", "ctm_f", nil))
	for i := range others {
		id := fmt.Sprintf("evt_%02d", i)
		env.Publish(t, subtest.PaddleSubscription(t, id, schema.PaddleSubscriptionCreated, time.Now(), "sub_"+id, "ctm_"+id, nil))
	}

	p := env.StartService(t, "CREDITS")
	require.Eventually(t, func() bool { return env.Count(t, "SELECT count(*) FROM credits.ledger") == others }, subtest.Timeout, subtest.Tick)
	require.EqualValues(t, 1, env.ConsumerInfo(t, credits.Name).NumAckPending, "the blocked message is in flight")

	p.Terminate(t)
	p.WaitOutput(t, "stopping: finishing in-flight messages")
	require.True(t, p.Running(), "waits for the in-flight message")
	require.NoError(t, blocker.Rollback(ctx))

	require.Equal(t, 0, p.ExitCode(t), p.Output())
	require.Contains(t, p.Output(), "exited cleanly")
	require.Equal(t, 1, env.Count(t, "SELECT count(*) FROM credits.ledger WHERE event_id = 'evt_in_flight'"))
	env.WaitAllAcked(t, credits.Name)
	require.Equal(t, others+1, env.Count(t, "SELECT count(*) FROM credits.ledger"))
}
