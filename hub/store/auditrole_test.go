package store_test

import (
	"context"
	"encoding/json"
	neturl "net/url"
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
