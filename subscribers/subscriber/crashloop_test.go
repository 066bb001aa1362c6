package subscriber_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

func TestMain(m *testing.M) {
	hubtest.RunMainIfChild(func() {
		if os.Getenv(envBadErrors) != "" {
			badErrorsMain()
			return
		}
		crashingMain()
	})
	os.Exit(m.Run())
}

const (
	crashName       = "crashloop"
	crashMaxDeliver = 3
	crashEventID    = "evt_crash"
	envCrashDB      = "HOOKHUB_CRASHLOOP_DATABASE_URL"
	envCrashNATS    = "HOOKHUB_CRASHLOOP_NATS_URL"
)

// crashingMain is a subscriber process (run by StartMain) whose handler
// kills the process for one event, as a segfault or an OOM kill would:
// nothing after the call runs, neither nak nor dead letter. Each call
// prints a line first, so the test counts the calls across processes.
func crashingMain() {
	runChildSubscriber(subscriber.Config{
		Name: crashName, Concurrency: 1, MaxDeliver: crashMaxDeliver,
		Backoff: []time.Duration{50 * time.Millisecond}, AckWait: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}, func(sub *subscriber.Subscriber) error {
		sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
			fmt.Printf("handler called: %s delivery %d\n", ev.EventID, ev.NumDelivered)
			if ev.EventID == crashEventID {
				os.Exit(3)
			}
			_, err := tx.Exec(ctx, "INSERT INTO "+crashName+".effects (provider, event_id, subject) VALUES ($1, $2, $3)", ev.Provider, ev.EventID, ev.Subject)
			return err
		})
		return nil
	})
}

// runChildSubscriber runs, in a child process (StartMain), a subscriber
// with cfg on the test's Postgres and JetStream (envCrashDB,
// envCrashNATS) and the effects schema, with the handlers register adds,
// until SIGTERM. A failure exits 1.
func runChildSubscriber(cfg subscriber.Config, register func(*subscriber.Subscriber) error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, cfg.Name+":", err)
		os.Exit(1)
	}
	pool, err := pgxpool.New(ctx, os.Getenv(envCrashDB))
	if err != nil {
		fail(err)
	}
	defer pool.Close()
	nc, err := nats.Connect(os.Getenv(envCrashNATS))
	if err != nil {
		fail(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fail(err)
	}
	cfg.Pool, cfg.JetStream, cfg.Stream, cfg.Migrations = pool, js, subtest.Stream, effectsMigrations(cfg.Name)
	sub, err := subscriber.New(cfg)
	if err != nil {
		fail(err)
	}
	if err := register(sub); err != nil {
		fail(err)
	}
	if err := sub.Run(ctx); err != nil {
		fail(err)
	}
}

// A handler that kills the process never reaches a nak or a dead letter,
// and the consumer redelivers without limit (its MaxDeliver is -1 on
// purpose). Each call on a redelivery is counted in Postgres before it
// starts, so once MaxDeliver calls never returned the next delivery is
// dead-lettered without calling the handler, and the process lives on.
// The other messages, redelivered with it after every crash without their
// handler having run, are processed normally: only calls that never
// returned count, not deliveries. A redrive of the dead letter that
// crashes again is given up the same way instead of being claimed at
// every start.
func TestCrashLoopIsDeadLettered(t *testing.T) {
	env := subtest.NewParallel(t)
	goods := []subtest.Message{event(t, "evt_good_1"), event(t, "evt_good_2")}
	env.Publish(t, event(t, crashEventID))
	for _, m := range goods {
		env.Publish(t, m)
	}
	vars := []string{envCrashDB + "=" + env.DBURL, envCrashNATS + "=" + env.NATS.URL()}
	var out strings.Builder
	// restartUntil runs the subscriber process, again after each crash,
	// until done holds while one runs; then it stops that one.
	restartUntil := func(done func() bool) (crashes int) {
		t.Helper()
		for {
			require.LessOrEqual(t, crashes, 2*crashMaxDeliver, "still crashing:\n%s", out.String())
			p := hubtest.StartMain(t, vars)
			require.Eventually(t, func() bool { return !p.Running() || done() }, subtest.Timeout, subtest.Tick)
			if !p.Running() {
				require.Equal(t, 3, p.ExitCode(t), p.Output())
				out.WriteString(p.Output())
				crashes++
				continue
			}
			p.Terminate(t)
			require.Equal(t, 0, p.ExitCode(t), p.Output())
			out.WriteString(p.Output())
			return crashes
		}
	}
	calls := func(eventID string) int { return strings.Count(out.String(), "handler called: "+eventID+" ") }
	deadLetters := func() []subscriber.DeadLetter {
		dls, err := subscriber.ListDeadLetters(context.Background(), env.Pool, crashName)
		if err != nil {
			return nil // the first process has not created the table yet
		}
		return dls
	}
	processed := func() bool {
		if len(deadLetters()) != 1 {
			return false // (the tables exist once there is one)
		}
		for _, m := range goods {
			if effects(t, env, crashName, m.EventID) != 1 {
				return false
			}
		}
		return true
	}

	require.Equal(t, crashMaxDeliver, restartUntil(processed))
	env.WaitAllAcked(t, crashName)
	require.Equal(t, crashMaxDeliver, calls(crashEventID), out.String())
	for _, m := range goods {
		require.Equal(t, 1, calls(m.EventID), out.String())
	}
	dls := deadLetters()
	require.Len(t, dls, 1)
	d := dls[0]
	require.Equal(t, crashEventID, d.EventID)
	require.Equal(t, crashMaxDeliver+1, d.Attempts, "dead-lettered at the delivery after the last call")
	require.Contains(t, d.Error, fmt.Sprintf("delivered %d times without settling", crashMaxDeliver+1))
	require.Contains(t, d.Error, "the handler may crash the process")
	require.Zero(t, env.Count(t, "SELECT count(*) FROM "+crashName+".handler_attempts WHERE event_id = $1", crashEventID), "cleared with the dead letter")
	require.Zero(t, env.Count(t, "SELECT count(*) FROM "+crashName+".processed_messages WHERE event_id = $1", crashEventID))

	// The redrive crashes too: every redrive call is counted, so after
	// crashMaxDeliver-1 crashes it is given up and its request cleared.
	n, err := subscriber.RequestRedrive(context.Background(), env.Pool, crashName, d.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	redriveFailed := func() bool {
		got, err := subscriber.GetDeadLetter(context.Background(), env.Pool, crashName, d.ID)
		require.NoError(t, err)
		return got.RedriveRequestedAt == nil && got.RedriveError != ""
	}
	require.Equal(t, crashMaxDeliver-1, restartUntil(redriveFailed))
	require.Equal(t, 2*crashMaxDeliver-1, calls(crashEventID), out.String())
	got, err := subscriber.GetDeadLetter(context.Background(), env.Pool, crashName, d.ID)
	require.NoError(t, err)
	require.Contains(t, got.RedriveError, "the handler may crash the process")
	require.Nil(t, got.RedrivenAt)
	require.Zero(t, env.Count(t, "SELECT count(*) FROM "+crashName+".handler_attempts"), "a new request starts afresh")
}
