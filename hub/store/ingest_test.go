package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

// hub.Ingest commits through the store (or its group committer) and hands
// the relay exactly the deliveries committed PENDING: not a duplicate, not
// an event archived FAILED.
func TestIngestHandsPublishableToTheRelay(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
	ctx := context.Background()
	var enqueued []string
	relay := hub.EnqueueFunc(func(d hub.Delivery) { enqueued = append(enqueued, d.EventID) })

	g := s.GroupCommitter(4, 1, 10*time.Second)
	require.NoError(t, g.Start(ctx))
	t.Cleanup(func() { _ = g.Stop(context.Background()) })
	for name, c := range map[string]hub.Committer{"store": s, "group committer": g} {
		enqueued = nil
		failed := delivery(name+"_failed", `{}`)
		failed.Error = "cannot publish: bad type"
		outs, err := hub.NewIngest(c, relay).Ingest(ctx, []hub.Delivery{delivery(name+"_new", `{}`), failed, delivery(name+"_new", `{}`)})
		require.NoError(t, err, name)
		require.Equal(t, []hub.Outcome{{Status: hub.Pending}, {Status: hub.Failed}, {Status: hub.Skipped, Duplicate: true}}, outs, name)
		require.Equal(t, []string{name + "_new"}, enqueued, name)
	}

	// Without a relay, nothing is handed over: the claiming relay
	// publishes from the outbox.
	outs, err := hub.NewIngest(s, nil).Ingest(ctx, []hub.Delivery{delivery("evt_later", `{}`)})
	require.NoError(t, err)
	require.Equal(t, []hub.Outcome{{Status: hub.Pending}}, outs)
}
