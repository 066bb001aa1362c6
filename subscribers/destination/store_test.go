package destination_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/internal/migrate"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Both a pool and a handler's transaction are a DB.
var (
	_ destination.DB = (*pgxpool.Pool)(nil)
	_ destination.DB = pgx.Tx(nil)
)

// storeDB returns a pool on a fresh database with the destinations in
// names migrated as the runner migrates them (the library's tables and
// destination.Migrations).
func storeDB(t *testing.T, names ...string) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := hubtest.NewPool(t, hubtest.DatabaseURL(t))
	for _, n := range names {
		require.NoError(t, subscriber.Migrate(ctx, pool, n, destination.Migrations(n)))
	}
	return pool
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestStoreMigrations(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := storeDB(t, "billing", "crm")
	// Idempotent, and each destination's tables live in its own schema.
	require.NoError(t, subscriber.Migrate(ctx, pool, "billing", destination.Migrations("billing")))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_name IN ('attempts', 'destination_state') AND table_schema IN ('billing', 'crm')`).Scan(&n))
	require.Equal(t, 4, n)
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_name IN ('attempts', 'destination_state') AND table_schema NOT IN ('billing', 'crm')`).Scan(&n))
	require.Zero(t, n, "no destination table outside the destinations' schemas")
	var v int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT max(version_id) FROM billing.schema_version`).Scan(&v))
	require.Equal(t, int64(2), v)
	// Down and up again.
	m, err := migrate.ForSchema(ctx, pool, destination.Migrations("crm"), "crm")
	require.NoError(t, err)
	defer m.Close()
	_, err = m.Down(ctx) // the parked events
	require.NoError(t, err)
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_name = 'parked' AND table_schema = 'crm'`).Scan(&n))
	require.Zero(t, n)
	_, err = m.Down(ctx)
	require.NoError(t, err)
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_name IN ('attempts', 'destination_state') AND table_schema = 'crm'`).Scan(&n))
	require.Zero(t, n)
	_, err = m.Up(ctx)
	require.NoError(t, err)
	// A new destination starts active.
	s, reason, err := destination.GetState(ctx, pool, "crm")
	require.NoError(t, err)
	require.Equal(t, destination.StateActive, s)
	require.Empty(t, reason)
}

func TestStoreUnknownDestination(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := storeDB(t, "billing")
	// "plain" is a subscriber without destination tables; "nope" nothing.
	require.NoError(t, subscriber.Migrate(ctx, pool, "plain", nil))
	for _, name := range []string{"nope", "plain", "Bad-Name", "", `x"; DROP TABLE billing.attempts; --`} {
		t.Run(name, func(t *testing.T) {
			calls := map[string]error{
				"GetState": func() error { _, _, err := destination.GetState(ctx, pool, name); return err }(),
				"SetState": func() error {
					_, err := deststate.SetState(ctx, pool, name, destination.StatePaused, "")
					return err
				}(),
				"Register":      destination.Register(ctx, pool, name, "https://x.test/", []string{"a.>"}),
				"GetStatus":     func() error { _, err := destination.GetStatus(ctx, pool, name); return err }(),
				"RecordAttempt": deststate.RecordAttempt(ctx, pool, destination.Attempt{Destination: name, Provider: "p", EventID: "e", Outcome: destination.OutcomeFailed}),
				"FirstAttempt":  func() error { _, _, err := deststate.FirstAttempt(ctx, pool, name, "p", "e"); return err }(),
				"AttemptsFor":   func() error { _, err := deststate.AttemptsFor(ctx, pool, name, "p", "e", 0); return err }(),
				"PurgeAttempts": func() error { _, err := deststate.PurgeAttempts(ctx, pool, name, time.Now(), 0); return err }(),
			}
			for fn, err := range calls {
				require.ErrorIs(t, err, destination.ErrUnknownDestination, fn)
				if subscriber.ValidName(name) {
					require.Contains(t, err.Error(), name, fn)
				} else {
					require.Contains(t, err.Error(), fmt.Sprintf("%q", name), fn)
				}
			}
		})
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM billing.attempts`).Scan(&n))
	require.Zero(t, n, "the table is still there, and empty")
	list, err := destination.List(ctx, pool)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "billing", list[0].Name)
}

func TestStoreState(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := storeDB(t, "billing")
	before, err := destination.GetStatus(ctx, pool, "billing")
	require.NoError(t, err)

	for i, step := range []struct {
		state   destination.State
		reason  string
		changed bool
		want    string // reason read back
	}{
		{destination.StateActive, "already", false, ""},
		{destination.StatePaused, "maintenance window", true, "maintenance window"},
		{destination.StatePaused, "again", false, "maintenance window"},
		{destination.StateDisabled, "410 Gone from https://x.test/\x00" + strings.Repeat("é", 300), true, ""},
		{destination.StateActive, "resumed by alice", true, "resumed by alice"},
	} {
		changed, err := deststate.SetState(ctx, pool, "billing", step.state, step.reason)
		require.NoError(t, err, i)
		require.Equal(t, step.changed, changed, i)
		s, reason, err := destination.GetState(ctx, pool, "billing")
		require.NoError(t, err, i)
		require.Equal(t, step.state, s, i)
		if step.want != "" {
			require.Equal(t, step.want, reason, i)
		} else if step.state == destination.StateDisabled {
			require.LessOrEqual(t, len(reason), 256, i)
			require.True(t, subscriber.Storable(reason), i)
			require.True(t, strings.HasPrefix(reason, "410 Gone from https://x.test/\uFFFD"), reason)
			require.True(t, strings.HasSuffix(reason, "…"), reason)
		}
	}
	after, err := destination.GetStatus(ctx, pool, "billing")
	require.NoError(t, err)
	require.True(t, after.ChangedAt.After(before.ChangedAt), "changed_at moves with the state")

	_, err = deststate.SetState(ctx, pool, "billing", "sleeping", "")
	require.ErrorIs(t, err, deststate.ErrInvalidState)

	// Inside a transaction, rolled back: nothing changed.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	changed, err := deststate.SetState(ctx, tx, "billing", destination.StatePaused, "tx")
	require.NoError(t, err)
	require.True(t, changed)
	require.NoError(t, tx.Rollback(ctx))
	s, _, err := destination.GetState(ctx, pool, "billing")
	require.NoError(t, err)
	require.Equal(t, destination.StateActive, s)
}

func TestStoreRegister(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := storeDB(t, "billing")
	_, err := deststate.SetState(ctx, pool, "billing", destination.StatePaused, "ops")
	require.NoError(t, err)
	require.NoError(t, destination.Register(ctx, pool, "billing", "https://a.test/hooks", []string{"paddle.>", "stripe.invoice.*"}))
	require.NoError(t, destination.Register(ctx, pool, "billing", "https://b.test/hooks", []string{"clerk.>"}))
	st, err := destination.GetStatus(ctx, pool, "billing")
	require.NoError(t, err)
	require.Equal(t, "https://b.test/hooks", st.URL)
	require.Equal(t, []string{"clerk.>"}, st.Subjects)
	require.Equal(t, destination.StatePaused, st.State, "Register keeps the state")
	require.Equal(t, "ops", st.Reason)

	// Even without the row the migration inserts, Register and SetState work.
	_, err = pool.Exec(ctx, `DELETE FROM billing.destination_state`)
	require.NoError(t, err)
	s, _, err := destination.GetState(ctx, pool, "billing")
	require.NoError(t, err)
	require.Equal(t, destination.StateActive, s)
	st, err = destination.GetStatus(ctx, pool, "billing")
	require.NoError(t, err)
	require.Equal(t, destination.Status{Name: "billing", State: destination.StateActive}, st)
	require.NoError(t, destination.Register(ctx, pool, "billing", "https://c.test/", nil))
	st, err = destination.GetStatus(ctx, pool, "billing")
	require.NoError(t, err)
	require.Equal(t, "https://c.test/", st.URL)
	require.Empty(t, st.Subjects)
	require.Equal(t, destination.StateActive, st.State)
}

func TestStoreAttempts(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := storeDB(t, "billing", "crm")
	t0 := time.Now().Add(-10 * time.Minute).Truncate(time.Microsecond)

	_, found, err := deststate.FirstAttempt(ctx, pool, "billing", "paddle", "evt_1")
	require.NoError(t, err)
	require.False(t, found)

	long := strings.Repeat("x", 5000)
	in := []destination.Attempt{
		{Destination: "billing", Provider: "paddle", EventID: "evt_1", StreamSeq: 7, At: t0, Status: 0, Latency: 5 * time.Second,
			Outcome: destination.OutcomeFailed, Error: "dial tcp: connection refused\x00" + long},
		{Destination: "billing", Provider: "paddle", EventID: "evt_1", StreamSeq: 7, At: t0.Add(time.Minute), Status: 503, Latency: 120 * time.Millisecond,
			Outcome: destination.OutcomeFailed, Error: "503 Service Unavailable", Response: "busy \xff" + long},
		{Destination: "billing", Provider: "paddle", EventID: "evt_2", StreamSeq: 8, At: t0.Add(90 * time.Second), Status: 200, Latency: 30 * time.Millisecond,
			Outcome: destination.OutcomeDelivered},
	}
	for _, a := range in {
		require.NoError(t, deststate.RecordAttempt(ctx, pool, a))
	}
	first, found, err := deststate.FirstAttempt(ctx, pool, "billing", "paddle", "evt_1")
	require.NoError(t, err)
	require.True(t, found)
	require.True(t, first.Equal(t0), "%v != %v", first, t0)
	// The success is recorded inside the handler's transaction: it commits
	// with it, or not at all.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, deststate.RecordAttempt(ctx, tx, destination.Attempt{Destination: "billing", Provider: "paddle", EventID: "evt_1",
		StreamSeq: 7, At: t0.Add(2 * time.Minute), Status: 204, Latency: 40 * time.Millisecond, Outcome: destination.OutcomeDelivered}))
	require.NoError(t, tx.Rollback(ctx))
	tx, err = pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, deststate.RecordAttempt(ctx, tx, destination.Attempt{Destination: "billing", Provider: "paddle", EventID: "evt_1",
		StreamSeq: 9, At: t0.Add(3 * time.Minute), Status: 204, Latency: 40 * time.Millisecond, Outcome: destination.OutcomeDelivered}))
	require.NoError(t, tx.Commit(ctx))

	// Delivered: a new round (a replay) starts its horizon afresh.
	_, found, err = deststate.FirstAttempt(ctx, pool, "billing", "paddle", "evt_1")
	require.NoError(t, err)
	require.False(t, found, "the round ended with the delivery")
	require.NoError(t, deststate.RecordAttempt(ctx, pool, destination.Attempt{Destination: "billing", Provider: "paddle", EventID: "evt_1",
		StreamSeq: 12, At: t0.Add(4 * time.Minute), Status: 500, Outcome: destination.OutcomeFailed}))
	first, found, err = deststate.FirstAttempt(ctx, pool, "billing", "paddle", "evt_1")
	require.NoError(t, err)
	require.True(t, found)
	require.True(t, first.Equal(t0.Add(4*time.Minute)), "%v: the replay's round starts at its first attempt", first)
	_, err = pool.Exec(ctx, `DELETE FROM billing.attempts WHERE stream_seq = 12`)
	require.NoError(t, err)
	_, found, err = deststate.FirstAttempt(ctx, pool, "crm", "paddle", "evt_1")
	require.NoError(t, err)
	require.False(t, found, "each destination has its own log")

	got, err := deststate.AttemptsFor(ctx, pool, "billing", "paddle", "evt_1", 0)
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, 0, got[0].Status, "no answer")
	require.Equal(t, 503, got[1].Status)
	require.Equal(t, 204, got[2].Status)
	require.Equal(t, uint64(9), got[2].StreamSeq)
	require.Equal(t, destination.OutcomeDelivered, got[2].Outcome)
	require.Equal(t, 5*time.Second, got[0].Latency)
	require.Equal(t, 120*time.Millisecond, got[1].Latency)
	require.True(t, got[1].At.Equal(t0.Add(time.Minute)))
	require.LessOrEqual(t, len(got[0].Error), destination.MaxErrorBytes)
	require.True(t, strings.HasPrefix(got[0].Error, "dial tcp: connection refused\uFFFDxxx"), got[0].Error[:40])
	require.LessOrEqual(t, len(got[1].Response), destination.MaxResponseBytes)
	require.True(t, strings.HasPrefix(got[1].Response, "busy \uFFFDxxx"))
	require.True(t, subscriber.Storable(got[1].Response))

	// The limit keeps the newest, oldest first.
	got, err = deststate.AttemptsFor(ctx, pool, "billing", "paddle", "evt_1", 2)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, []int{503, 204}, []int{got[0].Status, got[1].Status})

	var status *int
	require.NoError(t, pool.QueryRow(ctx, `SELECT status FROM billing.attempts WHERE status IS NULL`).Scan(&status))
	require.Nil(t, status, "status 0 is stored as NULL")

	err = deststate.RecordAttempt(ctx, pool, destination.Attempt{Destination: "billing", Provider: "p", EventID: "e", Outcome: "maybe"})
	require.ErrorContains(t, err, `invalid outcome "maybe"`)
}

func TestStoreStatus(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := storeDB(t, "billing", "crm", "empty")
	require.NoError(t, destination.Register(ctx, pool, "billing", "https://billing.test/hooks", []string{"paddle.>"}))
	now := time.Now()
	record := func(dest string, at time.Time, status int, latency time.Duration, outcome string) {
		t.Helper()
		require.NoError(t, deststate.RecordAttempt(ctx, pool, destination.Attempt{
			Destination: dest, Provider: "paddle", EventID: fmt.Sprint("evt_", at.UnixNano()), At: at, Status: status, Latency: latency, Outcome: outcome}))
	}
	// Outside the window: counted in neither figure, but the last success.
	lastSuccess := now.Add(-3 * time.Hour).Truncate(time.Microsecond)
	record("billing", lastSuccess, 200, 20*time.Second, destination.OutcomeDelivered)
	record("billing", now.Add(-2*time.Hour), 500, 20*time.Second, destination.OutcomeFailed)
	// In the window: 100 attempts of 1..100 ms, one every 10 s, the first
	// three failing in each way.
	var lastAttempt time.Time
	for i := 1; i <= 100; i++ {
		outcome, status := destination.OutcomeDelivered, 200
		switch i {
		case 1:
			outcome, status = destination.OutcomeFailed, 0
		case 2:
			outcome, status = destination.OutcomeGone, 410
		case 3:
			outcome, status = destination.OutcomeDeadLettered, 500
		}
		lastAttempt = now.Add(-time.Duration(101-i) * 10 * time.Second).Truncate(time.Microsecond)
		record("billing", lastAttempt, status, time.Duration(i)*time.Millisecond, outcome)
	}
	_, err := deststate.SetState(ctx, pool, "crm", destination.StatePaused, "ops")
	require.NoError(t, err)

	st, err := destination.GetStatus(ctx, pool, "billing")
	require.NoError(t, err)
	require.Equal(t, "billing", st.Name)
	require.Equal(t, "https://billing.test/hooks", st.URL)
	require.Equal(t, []string{"paddle.>"}, st.Subjects)
	require.Equal(t, destination.StateActive, st.State)
	require.Equal(t, int64(100), st.Attempts1h)
	require.Equal(t, int64(3), st.Failures1h, "failed, gone and dead_lettered are failures")
	require.True(t, st.LastAttempt.Equal(lastAttempt), "%v != %v", st.LastAttempt, lastAttempt)
	require.True(t, st.LastSuccess.Equal(lastAttempt), "the newest attempt delivered")
	// percentile_cont over 1..100 ms: 99.01 ms.
	require.InDelta(t, float64(99010*time.Microsecond), float64(st.P99), float64(time.Microsecond))

	_, err = pool.Exec(ctx, `UPDATE billing.attempts SET outcome = 'failed' WHERE attempted_at > $1`, lastSuccess)
	require.NoError(t, err)
	st, err = destination.GetStatus(ctx, pool, "billing")
	require.NoError(t, err)
	require.True(t, st.LastSuccess.Equal(lastSuccess), "%v != %v", st.LastSuccess, lastSuccess)
	require.Equal(t, int64(100), st.Failures1h)

	empty, err := destination.GetStatus(ctx, pool, "empty")
	require.NoError(t, err)
	require.Equal(t, destination.Status{Name: "empty", State: destination.StateActive, Subjects: []string{}, ChangedAt: empty.ChangedAt}, empty)
	require.False(t, empty.ChangedAt.IsZero())

	list, err := destination.List(ctx, pool)
	require.NoError(t, err)
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"billing", "crm", "empty"}, names)
	require.Equal(t, destination.StatePaused, list[1].State)
	require.Equal(t, "ops", list[1].Reason)
	require.Equal(t, st.Attempts1h, list[0].Attempts1h)
}

func TestStorePurge(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := storeDB(t, "billing", "crm")
	now := time.Now()
	cutoff := now.Add(-7 * 24 * time.Hour)
	for i := range 25 {
		for _, dest := range []string{"billing", "crm"} {
			old := destination.Attempt{Destination: dest, Provider: "paddle", EventID: fmt.Sprint("old_", i),
				At: cutoff.Add(-time.Duration(i+1) * time.Minute), Outcome: destination.OutcomeFailed}
			require.NoError(t, deststate.RecordAttempt(ctx, pool, old))
		}
		fresh := destination.Attempt{Destination: "billing", Provider: "paddle", EventID: fmt.Sprint("new_", i),
			At: cutoff.Add(time.Duration(i+1) * time.Minute), Outcome: destination.OutcomeDelivered, Status: 200}
		require.NoError(t, deststate.RecordAttempt(ctx, pool, fresh))
	}
	// Batches of 10: 10, 10, 5.
	n, err := deststate.PurgeAttempts(ctx, pool, "billing", cutoff, 10)
	require.NoError(t, err)
	require.Equal(t, int64(25), n)
	var old, fresh, other int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE event_id LIKE 'old_%'), count(*) FILTER (WHERE event_id LIKE 'new_%')
		FROM billing.attempts`).Scan(&old, &fresh))
	require.Zero(t, old)
	require.Equal(t, 25, fresh)
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM crm.attempts`).Scan(&other))
	require.Equal(t, 25, other, "another destination's log is untouched")

	n, err = deststate.PurgeAttempts(ctx, pool, "billing", cutoff, 10)
	require.NoError(t, err)
	require.Zero(t, n)

	// A batch exactly as large as what is left ends with one empty batch.
	n, err = deststate.PurgeAttempts(ctx, pool, "crm", cutoff, 25)
	require.NoError(t, err)
	require.Equal(t, int64(25), n)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = deststate.PurgeAttempts(cctx, pool, "billing", now, 1)
	require.ErrorIs(t, err, context.Canceled)
}

// RecordAttempts writes a batch exactly as RecordAttempt writes each of
// its attempts, and nothing when one of them is invalid.
func TestStoreRecordAttempts(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := storeDB(t, "one_by_one", "batched")
	t0 := time.Now().Add(-10 * time.Minute).Truncate(time.Microsecond)
	long := strings.Repeat("x", 5000)
	batch := func(dest string) []destination.Attempt {
		return []destination.Attempt{
			{Destination: dest, Provider: "paddle", EventID: "evt_1", StreamSeq: 7, At: t0, Latency: 5 * time.Second,
				Outcome: destination.OutcomeFailed, Error: "dial tcp: connection refused\x00" + long},
			{Destination: dest, Provider: "paddle", EventID: "evt_1", StreamSeq: 7, At: t0.Add(time.Minute), Status: 200, Latency: 12 * time.Millisecond,
				Outcome: destination.OutcomeDelivered, Response: "ok \xff" + long},
			{Destination: dest, Provider: "paddle", EventID: "evt_1", At: t0.Add(2 * time.Minute), Status: 204,
				Outcome: destination.OutcomeDelivered},
		}
	}
	for _, a := range batch("one_by_one") {
		require.NoError(t, deststate.RecordAttempt(ctx, pool, a))
	}
	require.NoError(t, deststate.RecordAttempts(ctx, pool, "batched", batch("batched")))
	require.NoError(t, deststate.RecordAttempts(ctx, pool, "batched", nil))
	want, err := deststate.AttemptsFor(ctx, pool, "one_by_one", "paddle", "evt_1", 10)
	require.NoError(t, err)
	got, err := deststate.AttemptsFor(ctx, pool, "batched", "paddle", "evt_1", 10)
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i := range want {
		want[i].Destination = "batched"
		require.Equal(t, want[i], got[i], "attempt %d", i)
	}

	bad := batch("batched")
	bad[1].Outcome = "maybe"
	require.Error(t, deststate.RecordAttempts(ctx, pool, "batched", bad))
	other := batch("batched")
	other[2].Destination = "one_by_one"
	require.Error(t, deststate.RecordAttempts(ctx, pool, "batched", other))
	got, err = deststate.AttemptsFor(ctx, pool, "batched", "paddle", "evt_1", 10)
	require.NoError(t, err)
	require.Len(t, got, 3, "nothing written for a batch with an invalid attempt")
}
