package subscriber_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// A handler reads the event's entities (Hookhub-Entity) from Event, as it
// reads its occurred-at: the valid values in order, a damaged one skipped
// without failing the message, and none when the hub sent none.
func TestEventEntities(t *testing.T) {
	t.Parallel()
	env := subtest.New(t)
	sub := newSub(t, env, "entities", nil)
	var mu sync.Mutex
	seen := map[string]subscriber.Event{}
	sub.Handle("clerk.>", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		mu.Lock()
		defer mu.Unlock()
		seen[ev.EventID] = ev
		return nil
	})
	subtest.Start(t, sub)

	m := subtest.ClerkUserCreated(t, "msg_1", "user_1", "ada@example.com", time.Now())
	m.Entities = []schema.Entity{{Kind: "user", ID: "user_1"}, {Kind: "organization", ID: "org_1"}}
	env.Publish(t, m)
	none := subtest.ClerkUserCreated(t, "msg_2", "user_2", "bob@example.com", time.Now())
	env.Publish(t, none)
	damaged := subtest.ClerkUserCreated(t, "msg_3", "user_3", "cy@example.com", time.Now())
	subject, err := schema.Subject(damaged.Provider, damaged.EventType)
	require.NoError(t, err)
	h := schema.Metadata{MsgID: schema.MsgID(damaged.Provider, damaged.EventID), EventID: damaged.EventID,
		Provider: damaged.Provider, EventType: damaged.EventType, ArchiveID: "0193", ReceivedAt: time.Now()}.Header()
	for _, v := range []string{"junk", "user:", "User:user_3", "user:user_3", "user:user_3"} {
		h.Add(schema.HeaderEntity, v)
	}
	env.PublishRaw(t, &nats.Msg{Subject: subject, Data: damaged.Body, Header: h})
	eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 3 })

	mu.Lock()
	defer mu.Unlock()
	ev := seen["msg_1"]
	require.Equal(t, []schema.Entity{{Kind: "user", ID: "user_1"}, {Kind: "organization", ID: "org_1"}}, ev.Entities)
	require.Equal(t, "user_1", ev.Entity("user"))
	require.Equal(t, "org_1", ev.Entity("organization"))
	require.Empty(t, ev.Entity("customer"))
	require.Nil(t, seen["msg_2"].Entities)
	require.Equal(t, []schema.Entity{{Kind: "user", ID: "user_3"}}, seen["msg_3"].Entities, "damaged values skipped, not fatal")
	require.Zero(t, sub.Stats().Failed)
}
