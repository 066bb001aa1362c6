package store_test

import (
	"context"
	"encoding/json"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/migrations"
)

// The audit trail is append-only: an entry is inserted running and
// finished once; the trigger refuses any other UPDATE, a DELETE of a
// recent or running row, and TRUNCATE.
func TestAuditAppendOnly(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	actor := hub.Actor{Kind: hub.ActorToken, Name: "token 1a2b3c4d", Role: "admin", Via: "admin-api"}
	at := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	id, err := s.BeginAudit(ctx, hub.AuditEntry{At: at, Actor: actor, Action: "replay", Target: "subscriber credits",
		Params: json.RawMessage(`{"subscriber":"credits"}`)})
	require.NoError(t, err)

	_, err = pool.Exec(ctx, `UPDATE audit_log SET actor_name = 'someone else' WHERE id = $1`, id)
	require.ErrorContains(t, err, "append-only", "a running entry's who cannot change")
	_, err = pool.Exec(ctx, `DELETE FROM audit_log WHERE id = $1`, id)
	require.ErrorContains(t, err, "append-only")

	require.NoError(t, s.FinishAudit(ctx, id, hub.AuditOK, json.RawMessage(`{"matched":3}`), "", 1500*time.Millisecond))
	require.Error(t, s.FinishAudit(ctx, id, hub.AuditError, nil, "again", time.Second), "a finished entry is not finished twice")

	for _, sql := range []string{
		`UPDATE audit_log SET outcome = 'error' WHERE id = $1`,
		`UPDATE audit_log SET result = '{}' WHERE id = $1`,
		`UPDATE audit_log SET at = now() WHERE id = $1`,
		`DELETE FROM audit_log WHERE id = $1`,
	} {
		_, err = pool.Exec(ctx, sql, id)
		require.ErrorContains(t, err, "append-only", sql)
	}
	_, err = pool.Exec(ctx, `TRUNCATE audit_log`)
	require.ErrorContains(t, err, "append-only")

	got, err := s.ListAudit(ctx, hub.AuditQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, got, 1)
	e := got[0]
	require.Equal(t, id, e.ID)
	require.True(t, at.Equal(e.At))
	require.Equal(t, actor, e.Actor)
	require.Equal(t, "replay", e.Action)
	require.Equal(t, "subscriber credits", e.Target)
	require.JSONEq(t, `{"subscriber":"credits"}`, string(e.Params))
	require.JSONEq(t, `{"matched":3}`, string(e.Result))
	require.Equal(t, hub.AuditOK, e.Outcome)
	require.EqualValues(t, 1500, e.DurationMS)
	require.False(t, e.FinishedAt.IsZero())

	// A finished entry older than the retention bound may be deleted.
	old, err := s.BeginAudit(ctx, hub.AuditEntry{At: time.Now().Add(-500 * 24 * time.Hour), Actor: actor, Action: "purge"})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `DELETE FROM audit_log WHERE id = $1`, old)
	require.ErrorContains(t, err, "append-only", "not while running")
	require.NoError(t, s.FinishAudit(ctx, old, hub.AuditOK, nil, "", 0))
	tag, err := pool.Exec(ctx, `DELETE FROM audit_log WHERE id = $1`, old)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
}

// Texts are cut to the table's bounds, NUL and invalid UTF-8 removed, and
// the listing filters by time, actor and action, newest first, by cursor.
func TestAuditListAndBounds(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Microsecond)
	long := string(make([]byte, 0))
	for range 600 {
		long += "é"
	}
	id, err := s.BeginAudit(ctx, hub.AuditEntry{At: now.Add(-2 * time.Hour), Actor: hub.Actor{Kind: "cli", Name: long + "\x00\xff", Role: "admin", Via: "cli"},
		Action: "purge", Target: long})
	require.NoError(t, err)
	require.NoError(t, s.FinishAudit(ctx, id, hub.AuditError, nil, long+long, time.Second))
	for i, a := range []string{"replay", "redrive", "replay"} {
		_, err := s.BeginAudit(ctx, hub.AuditEntry{At: now.Add(time.Duration(i-3) * time.Minute), Action: a,
			Actor: hub.Actor{Kind: "token", Name: "token aaaaaaaa", Role: "admin", Via: "console"}})
		require.NoError(t, err)
	}
	all, err := s.ListAudit(ctx, hub.AuditQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, all, 4)
	require.Equal(t, id, all[3].ID, "newest first")
	require.LessOrEqual(t, len(all[3].Actor.Name), hub.MaxAuditActorName)
	require.LessOrEqual(t, len(all[3].Target), hub.MaxAuditTarget)
	require.LessOrEqual(t, len(all[3].Error), hub.MaxAuditError)
	require.Equal(t, hub.AuditRunning, all[0].Outcome)

	for _, tc := range []struct {
		q    hub.AuditQuery
		want int
	}{
		{hub.AuditQuery{Action: "replay"}, 2},
		{hub.AuditQuery{Actor: "token aaaaaaaa"}, 3},
		{hub.AuditQuery{Since: now.Add(-time.Hour)}, 3},
		{hub.AuditQuery{Until: now.Add(-time.Hour)}, 1},
		{hub.AuditQuery{Before: all[1].ID}, 2},
		{hub.AuditQuery{Action: "replay", Before: all[0].ID}, 1},
	} {
		tc.q.Limit = 10
		got, err := s.ListAudit(ctx, tc.q)
		require.NoError(t, err)
		require.Len(t, got, tc.want, "%+v", tc.q)
	}
}

// objectOf is a JSON object of exactly n bytes, as Go writes it, whose
// text has what jsonb would write differently: Go's escapes of <, > and
// &, \u2028, multi-byte UTF-8, and several keys (jsonb adds a space after
// each colon and comma).
func objectOf(t *testing.T, n int) string {
	t.Helper()
	head := `{"a":"<\u003c>\u0026é€😀\u2028","b":1,"c":true,"d":"`
	require.Less(t, len(head)+2, n)
	s := head + strings.Repeat("x", n-len(head)-2) + `"}`
	require.Len(t, s, n)
	require.True(t, json.Valid([]byte(s)))
	return s
}

// Go and Postgres measure the same bytes: an entry's params and result
// of exactly hub.MaxAuditJSON bytes are stored byte for byte and the
// entry finishes; one byte more is refused by the table as by hub/ops.
func TestAuditSizeRuleAgrees(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	actor := hub.Actor{Kind: hub.ActorCLI, Name: "alice@ops-1", Role: "admin", Via: "cli"}
	for _, n := range []int{hub.MaxAuditJSON - 1, hub.MaxAuditJSON} {
		obj := objectOf(t, n)
		id, err := s.BeginAudit(ctx, hub.AuditEntry{At: time.Now(), Actor: actor, Action: "replay", Params: json.RawMessage(obj)})
		require.NoError(t, err, n)
		require.NoError(t, s.FinishAudit(ctx, id, hub.AuditOK, json.RawMessage(obj), "", time.Second), "finished at %d bytes", n)
		var params, result string
		require.NoError(t, pool.QueryRow(ctx, `SELECT params::text, result::text FROM audit_log WHERE id = $1`, id).Scan(&params, &result))
		require.Equal(t, obj, params, "stored as Go wrote it")
		require.Equal(t, obj, result)
	}
	over := objectOf(t, hub.MaxAuditJSON+1)
	_, err := s.BeginAudit(ctx, hub.AuditEntry{At: time.Now(), Actor: actor, Action: "replay", Params: json.RawMessage(over)})
	require.ErrorContains(t, err, "ck_audit_log_params")
	id, err := s.BeginAudit(ctx, hub.AuditEntry{At: time.Now(), Actor: actor, Action: "replay"})
	require.NoError(t, err)
	require.ErrorContains(t, s.FinishAudit(ctx, id, hub.AuditOK, json.RawMessage(over), "", time.Second), "ck_audit_log_result")
}

// A result far over the bound is recorded with its counts: only its
// sample is trimmed, and the entry says so; the entry finishes.
func TestAuditHugeResultKeepsCounts(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	o := ops.New(ops.Config{Archive: store.New(pool)})
	ctx := context.Background()
	sample := make([]ops.EventRow, ops.MaxBulkSample)
	for i := range sample {
		sample[i] = ops.EventRow{Provider: "paddle", EventID: "evt_<é€>_" + strings.Repeat("\u2028x", 40), EventType: "transaction.completed"}
	}
	res := ops.BulkResult{RunID: "r1", Action: ops.BulkReplay, Matched: 9999, Eligible: 9998, Published: 9997, Processed: 9000,
		Skipped: 997, Sample: sample}
	require.NoError(t, o.RunAudited(ctx, ops.ActionBulkReplay, "subscriber credits", nil, func() (any, error) { return res, nil }))
	es, err := o.ListAudit(ctx, ops.AuditFilter{Limit: 1})
	require.NoError(t, err)
	require.Len(t, es, 1)
	e := es[0]
	require.Equal(t, hub.AuditOK, e.Outcome)
	require.LessOrEqual(t, len(e.Result), hub.MaxAuditJSON)
	var got struct {
		Matched, Eligible, Published, Processed, Skipped int
		Sample                                           []json.RawMessage
		Trimmed                                          map[string]struct{ Kept, Of int }
	}
	require.NoError(t, json.Unmarshal(e.Result, &got))
	require.Equal(t, []int{9999, 9998, 9997, 9000, 997}, []int{got.Matched, got.Eligible, got.Published, got.Processed, got.Skipped})
	require.NotEmpty(t, got.Sample)
	require.Less(t, len(got.Sample), ops.MaxBulkSample)
	require.Equal(t, len(got.Sample), got.Trimmed["sample"].Kept)
	require.Equal(t, ops.MaxBulkSample, got.Trimmed["sample"].Of)
}

// An entry whose process stopped renewing it is marked interrupted by the
// next sweep; a live one (renewed) is not, whatever its age, and the
// trigger refuses to interrupt it; an interrupted entry is finished.
func TestAuditInterruptedSweep(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	insert := func(heartbeatAgo time.Duration) int64 {
		var id int64
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO audit_log (at, actor_kind, actor_name, actor_role, via, action, heartbeat_at)
			VALUES (now() - interval '1 hour', 'cli', 'alice@ops-1', 'admin', 'cli', 'replay', now() - make_interval(secs => $1))
			RETURNING id`, heartbeatAgo.Seconds()).Scan(&id))
		return id
	}
	// Either side of the bound, which Go and the trigger share.
	dead, live := insert(hub.AuditStale+15*time.Second), insert(hub.AuditStale-15*time.Second)
	_, err := pool.Exec(ctx, `UPDATE audit_log SET outcome = 'interrupted' WHERE id = $1`, live)
	require.ErrorContains(t, err, "still renewed")
	_, err = pool.Exec(ctx, `INSERT INTO audit_log (at, actor_kind, actor_name, actor_role, via, action, outcome)
		VALUES (now(), 'cli', 'mallory', 'admin', 'cli', 'replay', 'ok')`)
	require.ErrorContains(t, err, "running or refused", "a finished entry is not inserted")

	n, err := s.InterruptStaleAudit(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	n, err = s.InterruptStaleAudit(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	es, err := s.ListAudit(ctx, hub.AuditQuery{Limit: 10})
	require.NoError(t, err)
	outcomes := map[int64]hub.AuditEntry{}
	for _, e := range es {
		outcomes[e.ID] = e
	}
	require.Equal(t, hub.AuditInterrupted, outcomes[dead].Outcome)
	require.Contains(t, outcomes[dead].Error, "interrupted")
	require.False(t, outcomes[dead].FinishedAt.IsZero())
	require.Equal(t, hub.AuditRunning, outcomes[live].Outcome)
	require.Error(t, s.FinishAudit(ctx, dead, hub.AuditOK, nil, "", time.Second), "an interrupted entry stays interrupted")
	require.NoError(t, s.FinishAudit(ctx, live, hub.AuditOK, nil, "", time.Second))
}

// runtimePool is a pool connected as a runtime role of the test's own
// (hubdb.RuntimeRole); granting it twice is harmless, and the owner
// cannot be made the runtime role.
func runtimePool(t *testing.T, owner *pgxpool.Pool, url string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	require.ErrorContains(t, migrations.GrantRuntime(ctx, owner, "postgres"), "must not be the owner")
	rtURL := hubdb.RuntimeRole(t, url)
	u, err := neturl.Parse(rtURL)
	require.NoError(t, err)
	require.NoError(t, migrations.GrantRuntime(ctx, owner, u.User.Username()))
	rt, err := pgxpool.New(ctx, rtURL)
	require.NoError(t, err)
	t.Cleanup(rt.Close)
	return rt
}

// The runtime role runs the hub (ingest, an audited action, its refusal
// and its interruption) but cannot rewrite the trail: not a finished
// entry, not a running entry's who or what, no DELETE or TRUNCATE, and
// it owns nothing, so it cannot alter the table or disable its trigger.
func TestRuntimeRoleCannotRewriteTheAuditTrail(t *testing.T) {
	t.Parallel()
	owner, url := hubdb.Pool(t)
	rt := runtimePool(t, owner, url)
	ctx := context.Background()
	s := store.New(rt)

	_, err := s.Ingest(ctx, []hub.Delivery{delivery("evt_runtime_role", `{"a":1}`)})
	require.NoError(t, err, "the runtime role ingests")
	o := ops.New(ops.Config{Archive: s})
	actx := hub.WithActor(ctx, hub.Actor{Kind: hub.ActorCLI, Name: "alice@ops-1", Role: "admin", Via: "cli"})
	require.NoError(t, o.RunAudited(actx, ops.ActionBackfill, "provider paddle", map[string]any{"provider": "paddle"},
		func() (any, error) { return map[string]any{"ingested": 1}, nil }))
	require.NoError(t, o.Refuse(actx, ops.ActionBackfillRelease, "provider paddle", nil, ops.ErrInvalid))
	es, err := o.ListAudit(ctx, ops.AuditFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, es, 2)
	require.Equal(t, hub.AuditRefused, es[0].Outcome)
	require.Equal(t, hub.AuditOK, es[1].Outcome)
	done := es[1].ID

	running, err := s.BeginAudit(ctx, hub.AuditEntry{At: time.Now(), Actor: es[1].Actor, Action: "replay"})
	require.NoError(t, err)
	require.NoError(t, s.HeartbeatAudit(ctx, running))
	for _, sql := range []string{
		`UPDATE audit_log SET outcome = 'error' WHERE id = $1`,
		`UPDATE audit_log SET result = '{}' WHERE id = $1`,
		`UPDATE audit_log SET error = 'rewritten' WHERE id = $1`,
		`DELETE FROM audit_log WHERE id = $1`,
	} {
		_, err := rt.Exec(ctx, sql, done)
		require.Error(t, err, sql)
	}
	_, err = rt.Exec(ctx, `UPDATE audit_log SET actor_name = 'someone else' WHERE id = $1`, running)
	require.ErrorContains(t, err, "permission denied", "a running entry's who is not the runtime role's to change")
	_, err = rt.Exec(ctx, `UPDATE audit_log SET outcome = 'interrupted' WHERE id = $1`, running)
	require.ErrorContains(t, err, "still renewed", "a live entry is not interrupted")
	for _, sql := range []string{
		`TRUNCATE audit_log`,
		`ALTER TABLE audit_log DISABLE TRIGGER ALL`,
		`ALTER TABLE audit_log DISABLE TRIGGER tr_audit_log_append_only`,
		`ALTER TABLE audit_log DROP CONSTRAINT ck_audit_log_params`,
		`DROP TRIGGER tr_audit_log_append_only ON audit_log`,
		`DROP TABLE audit_log`,
		`CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
	} {
		_, err := rt.Exec(ctx, sql)
		require.Error(t, err, sql)
	}
	var n int
	require.NoError(t, owner.QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'audit_log'::regclass AND tgenabled = 'O'`).Scan(&n))
	require.Equal(t, 3, n, "the triggers are all there and enabled")
	require.NoError(t, s.FinishAudit(ctx, running, hub.AuditOK, json.RawMessage(`{"matched":0}`), "", time.Second),
		"the runtime role finishes its own running entry")
}
