package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

// The audit trail is append-only: an entry is inserted running and
// finished once; the trigger refuses any other UPDATE, a DELETE of a
// recent or running row, and TRUNCATE.
func TestAuditAppendOnly(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
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
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
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
