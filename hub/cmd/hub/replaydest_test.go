package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/schema"
)

// `hub replay` to a destination says what will be and was sent: every
// event, those it delivered before again. Before, the dry run said "0 to
// process" and the run "6 skipped as already processed", while the
// endpoint received all 6 again.
func TestReplayToADestinationSaysWhatIsSent(t *testing.T) {
	ctx := context.Background()
	pool, _, js := streamEnv(t)
	received := testhub.StartDestination(t, pool, js, "billing")

	st := store.New(pool)
	const events = 6
	for i := range events {
		_, err := st.Ingest(ctx, []hub.Delivery{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: fmt.Sprintf("evt_rd_%d", i),
			EventType: "subscription.created", Body: []byte(`{"a":1}`), ReceivedAt: time.Now()}})
		require.NoError(t, err)
	}
	rl, err := relay.New(st, js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	require.NoError(t, rl.Drain(ctx))
	require.Eventually(t, func() bool { return received.Load() == events }, 30*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		var n int
		return pool.QueryRow(ctx, `SELECT count(*) FROM billing.processed_messages`).Scan(&n) == nil && n == events
	}, 30*time.Second, 20*time.Millisecond)

	code, stdout, stderr := runCmd(t, "replay", "--subscriber", "billing", "--since", "1h", "--dry-run")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "to the destination billing: 6 to send, 6 of them already delivered (a destination sends them again)")
	code, stdout, stderr = runCmd(t, "replay", "--subscriber", "billing", "--since", "1h", "--wait", "60s")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "6 sent: 0 not delivered before, 6 already delivered (sent again); 0 dead-lettered")
	require.EqualValues(t, 2*events, received.Load())
}
