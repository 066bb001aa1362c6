package ops_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/service/testhub"
)

// A replay to a destination sends every event again, those it delivered
// before too (ResendReplays): the dry run says so (6 to send, 6 of them
// again, none skipped), and the run counts what was sent, as the
// receiver saw it. Before, the dry run said "0 to process" and the run "6
// skipped", while the endpoint received all 6 again.
func TestReplayToADestinationCountsWhatIsSent(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	received := testhub.StartDestination(t, s.Pool(), s.JetStream(), "billing")

	const events = 6
	for i := range events {
		require.False(t, s.deliver(fmt.Sprintf("evt_dest_%d", i)))
	}
	s.Eventually(func() bool { return s.Count(`SELECT count(*) FROM billing.processed_messages`) == events }, "the destination delivered every event")
	require.EqualValues(t, events, received.Load())

	req := ops.ReplayRequest{Subscriber: "billing", Since: time.Now().Add(-time.Hour), DryRun: true}
	plan, err := s.ops.Replay(context.Background(), req)
	require.NoError(t, err)
	require.True(t, plan.Destination)
	require.Equal(t, events, plan.Matched)
	require.Equal(t, events, plan.ToProcess, "a destination sends every event")
	require.Equal(t, events, plan.Resend, "all of them again")
	require.Zero(t, plan.Skipped)

	req.DryRun, req.Wait = false, 60*time.Second
	res, err := s.ops.Replay(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, events, res.Delivered)
	require.Equal(t, events, res.Resent, "%+v", res)
	require.Zero(t, res.Skipped)
	require.Zero(t, res.Processed)
	require.Zero(t, res.Unsettled)
	require.EqualValues(t, 2*events, received.Load(), "the endpoint received every event again")

	// A bulk replay counts the same way.
	breq := ops.BulkRequest{Action: ops.BulkReplay, Subscriber: "billing", DryRun: true, Rate: ops.MaxBulkRate, Wait: 60 * time.Second, Sample: 1,
		Filter: ops.EventFilter{Since: time.Now().Add(-time.Hour)}}
	bplan, err := s.ops.Bulk(context.Background(), breq)
	require.NoError(t, err)
	require.True(t, bplan.Destination)
	require.Equal(t, events, bplan.ToProcess)
	require.Equal(t, events, bplan.AlreadyProcessed)
	breq.DryRun = false
	bres, err := s.ops.Bulk(context.Background(), breq)
	require.NoError(t, err)
	require.Equal(t, events, bres.Resent, "%+v", bres)
	require.Zero(t, bres.Skipped)
	require.EqualValues(t, 3*events, received.Load())
}
