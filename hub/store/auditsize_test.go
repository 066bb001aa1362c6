package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
)

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
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
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
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
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
