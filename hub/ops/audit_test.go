package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
)

// auditEntries lists the whole trail, oldest first.
func auditEntries(t *testing.T, o *ops.Ops) []hub.AuditEntry {
	t.Helper()
	es, err := o.ListAudit(context.Background(), ops.AuditFilter{Limit: ops.MaxAuditLimit})
	require.NoError(t, err)
	for i, j := 0, len(es)-1; i < j; i, j = i+1, j-1 {
		es[i], es[j] = es[j], es[i]
	}
	return es
}

// params decodes an entry's params or result.
func params(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// Every action records one entry with its actor, parameters, result and
// outcome, errors and cancellations included; dry runs record nothing; an
// action that cannot be recorded does not run.
func TestActionsAreAudited(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.broken.Store(true)
	s.startFlaky("flaky")
	s.deliver("evt_ops_1") // dead-lettered while broken
	s.deliver("evt_ops_2")
	s.Eventually(func() bool {
		return s.Count(`SELECT count(*) FROM flaky.dead_letters`) == 1 && s.Count(`SELECT count(*) FROM flaky.processed_messages`) == 1
	}, "flaky settled")
	s.waitPublished(2) // the republish below takes only events whose publication is recorded
	s.broken.Store(false)
	alice := hub.Actor{Kind: hub.ActorOperator, Name: "alice@example.com", Role: "admin", Via: "console"}
	ctx := hub.WithActor(context.Background(), alice)
	since := time.Now().Add(-time.Hour)

	// Dry runs change nothing and are not recorded.
	_, err := s.ops.Replay(ctx, ops.ReplayRequest{Subscriber: "flaky", Since: since, DryRun: true})
	require.NoError(t, err)
	_, err = s.ops.Republish(ctx, ops.RepublishFilter{Since: since, DryRun: true})
	require.NoError(t, err)
	_, err = s.ops.Purge(ctx, ops.PurgeRequest{OlderThan: 30 * 24 * time.Hour, BatchSize: 10, DryRun: true})
	require.NoError(t, err)
	require.Empty(t, auditEntries(t, s.ops))

	rd, err := s.ops.Redrive(ctx, ops.RedriveRequest{Subscriber: "flaky", All: true})
	require.NoError(t, err)
	rp, err := s.ops.Replay(ctx, ops.ReplayRequest{Subscriber: "flaky", Since: since, Wait: 20 * time.Second})
	require.NoError(t, err)
	// No actor in ctx (Go code calling Ops): recorded as unknown.
	rb, err := s.ops.Republish(context.Background(), ops.RepublishFilter{Event: "paddle:evt_ops_2"})
	require.NoError(t, err)
	_, err = s.ops.Purge(ctx, ops.PurgeRequest{OlderThan: time.Hour, BatchSize: 10})
	require.ErrorIs(t, err, ops.ErrInvalid)
	_, err = s.ops.SetDestinationState(ctx, "nowhere", deststate.StatePaused, "maintenance")
	require.Error(t, err)

	es := auditEntries(t, s.ops)
	require.Len(t, es, 5)
	for _, e := range es {
		require.False(t, e.FinishedAt.IsZero(), e.Action)
	}
	redrive, replay, republish, purge, pause := es[0], es[1], es[2], es[3], es[4]

	require.Equal(t, ops.ActionRedrive, redrive.Action)
	require.Equal(t, alice, redrive.Actor)
	require.Equal(t, "subscriber flaky", redrive.Target)
	require.Equal(t, map[string]any{"subscriber": "flaky", "id": 0.0, "all": true}, params(t, redrive.Params))
	require.EqualValues(t, rd.Requested, params(t, redrive.Result)["requested"])
	require.Equal(t, hub.AuditOK, redrive.Outcome)

	require.Equal(t, ops.ActionReplay, replay.Action)
	require.Equal(t, alice, replay.Actor)
	require.Equal(t, "subscriber flaky", replay.Target)
	p := params(t, replay.Params)
	require.Equal(t, "flaky", p["subscriber"])
	require.Equal(t, since.UTC().Format(time.RFC3339Nano), p["since"])
	r := params(t, replay.Result)
	require.EqualValues(t, rp.Matched, r["matched"])
	require.Equal(t, rp.RunID, r["run_id"])
	require.Equal(t, hub.AuditOK, replay.Outcome)

	require.Equal(t, ops.ActionRepublish, republish.Action)
	require.Equal(t, hub.Actor{Kind: "unknown", Name: "unknown", Role: "unknown", Via: "unknown"}, republish.Actor)
	require.Equal(t, "event paddle:evt_ops_2", republish.Target)
	require.EqualValues(t, rb.Published, params(t, republish.Result)["published"])

	require.Equal(t, ops.ActionPurge, purge.Action)
	require.Equal(t, hub.AuditRefused, purge.Outcome, "bad input refuses the action")
	require.Contains(t, purge.Error, "older_than")
	require.Equal(t, "1h0m0s", params(t, purge.Params)["older_than"])
	require.Empty(t, purge.Result)

	require.Equal(t, ops.ActionDestinationPause, pause.Action)
	require.Equal(t, "destination nowhere", pause.Target)
	require.Equal(t, hub.AuditError, pause.Outcome)
	require.Equal(t, "maintenance", params(t, pause.Params)["reason"])

	// Filters.
	mine, err := s.ops.ListAudit(ctx, ops.AuditFilter{Actor: alice.Name, Limit: 10})
	require.NoError(t, err)
	require.Len(t, mine, 4)
	replays, err := s.ops.ListAudit(ctx, ops.AuditFilter{Action: ops.ActionReplay, Limit: 10})
	require.NoError(t, err)
	require.Len(t, replays, 1)
	page, err := s.ops.ListAudit(ctx, ops.AuditFilter{Limit: 2, Before: ops.AuditCursor(mine[1])})
	require.NoError(t, err)
	require.Len(t, page, 2)
	require.Equal(t, es[2].ID, page[0].ID)
	_, err = s.ops.ListAudit(ctx, ops.AuditFilter{Limit: 10, Before: "x"})
	require.ErrorIs(t, err, ops.ErrInvalid)
	_, err = s.ops.ListAudit(ctx, ops.AuditFilter{Limit: ops.MaxAuditLimit + 1})
	require.ErrorIs(t, err, ops.ErrInvalid)

	// A replay cancelled while it runs is recorded as cancelled, its
	// entry finished although its context is done.
	cctx, cancel := context.WithCancel(ctx)
	_, err = s.ops.Replay(cctx, ops.ReplayRequest{Subscriber: "flaky", Since: since, Wait: 20 * time.Second,
		Progress: func(ops.ReplayResult) { cancel() }})
	require.ErrorIs(t, err, context.Canceled)
	es = auditEntries(t, s.ops)
	require.Len(t, es, 6)
	require.Equal(t, hub.AuditCancelled, es[5].Outcome)
	require.False(t, es[5].FinishedAt.IsZero())

	// Already cancelled: it cannot be recorded, so it does not run.
	_, err = s.ops.Redrive(cctx, ops.RedriveRequest{Subscriber: "flaky", All: true})
	require.ErrorIs(t, err, ops.ErrAuditUnavailable)
	require.Len(t, auditEntries(t, s.ops), 6)
}

// finishFails is the hub's store whose FinishAudit fails, as when the
// database goes away while an action runs.
type finishFails struct{ *store.Store }

func (finishFails) FinishAudit(context.Context, int64, string, json.RawMessage, string, time.Duration) error {
	return errors.New("connection refused")
}

// An entry that cannot be finished stays running, the failure is logged,
// and the action's own answer is returned: the trail still says who
// started what.
func TestAuditFinishFailureIsLogged(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	var logs bytes.Buffer
	st := store.New(pool)
	o := ops.New(ops.Config{Archive: st, Subscribers: pool, Audit: finishFails{st}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := hub.WithActor(context.Background(), hub.Actor{Kind: hub.ActorCLI, Name: "alice@ops-1", Role: "admin", Via: "cli"})
	res, err := o.Purge(ctx, ops.PurgeRequest{OlderThan: 30 * 24 * time.Hour, BatchSize: 10})
	require.NoError(t, err)
	require.False(t, res.DryRun)
	es := auditEntries(t, o)
	require.Len(t, es, 1)
	require.Equal(t, hub.AuditRunning, es[0].Outcome)
	require.Equal(t, "alice@ops-1", es[0].Actor.Name)
	require.Contains(t, logs.String(), "audit: cannot record how an action ended")
	require.Contains(t, logs.String(), "connection refused")
}
