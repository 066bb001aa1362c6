package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/schema"
)

// Every path that publishes an event sets one Hookhub-Entity header per
// entity, "<kind>:<id>": the fast path (from memory), the claiming relay
// (from the outbox, the archive's entities column) and a republished copy;
// an event without entities has no such header.
func TestPublishedMessagesCarryEntities(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Minute)
	es := []hub.Entity{{Kind: "customer", ID: "cus_1"}, {Kind: "subscription", ID: "sub:2"}}
	want := []string{"customer:cus_1", "subscription:sub:2"}
	deliver := func(eventID string, es []hub.Entity) hub.Delivery {
		d := hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: eventID,
			EventType: "subscription.created", Body: []byte(`{"event_id":"` + eventID + `"}`),
			ReceivedAt: time.Now(), Entities: es}
		_, err := b.store.Ingest(ctx, []hub.Delivery{d})
		require.NoError(t, err)
		return d
	}
	header := func(eventID string) []string {
		t.Helper()
		m, err := b.stream.GetLastMsgForSubject(ctx, "paddle.subscription.created")
		require.NoError(t, err)
		require.Equal(t, eventID, m.Header.Get(schema.HeaderEventID))
		return m.Header.Values(schema.HeaderEntity)
	}

	// The claiming relay, from the outbox.
	r, err := relay.New(b.store, b.js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	deliver("evt_claimed", es)
	require.NoError(t, r.Drain(ctx))
	require.Equal(t, want, header("evt_claimed"))
	deliver("evt_plain", nil)
	require.NoError(t, r.Drain(ctx))
	require.Empty(t, header("evt_plain"))

	// The fast path, from memory.
	fast := deliver("evt_fast", es)
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); relay.RunFast(fctx, r) }()
	r.Enqueue(fast)
	require.Eventually(t, func() bool { return b.msgs(t) == 3 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	<-done
	require.Equal(t, want, header("evt_fast"))

	// A republished copy, from the archive.
	rows, err := b.store.PublishedRows(ctx, hub.PublishedFilter{Provider: "paddle", EventID: "evt_claimed", Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	res := r.Republish(ctx, rows, "run1", 10*time.Second)
	require.Len(t, res, 1)
	require.NotZero(t, res[0].Seq, res[0].Err)
	m, err := b.stream.GetLastMsgForSubject(ctx, "paddle.subscription.created")
	require.NoError(t, err)
	require.Equal(t, "paddle:evt_claimed", m.Header.Get(schema.HeaderRepublish))
	require.Equal(t, want, m.Header.Values(schema.HeaderEntity))
}
