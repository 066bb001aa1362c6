package subscriber_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

func TestFilters(t *testing.T) {
	stream := []string{"paddle.>", "clerk.>", "_replay.>"}
	for _, tc := range []struct {
		name     string
		patterns []string
		want     []string
	}{
		{"literal provider", []string{"paddle.>"}, []string{"paddle.>", "_replay.n.paddle.>"}},
		{"every event", []string{"*.>"}, []string{"paddle.>", "clerk.>", "_replay.n.paddle.>", "_replay.n.clerk.>"}},
		{"every provider's type", []string{"*.user.created"}, []string{"paddle.user.created", "clerk.user.created", "_replay.n.paddle.user.created", "_replay.n.clerk.user.created"}},
		{"one-token star matches nothing", []string{"*"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, subscriber.Filters("n", tc.patterns, stream))
		})
	}
}

// handled records the event ids a handler saw.
type handled struct {
	mu  sync.Mutex
	ids []string
}

func (h *handled) handle(_ context.Context, _ pgx.Tx, ev subscriber.Event) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids = append(h.ids, ev.EventID)
	return nil
}

func (h *handled) has(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.ids, id)
}

// TestStartAndWildcardFilter: a "*.>" subscriber starts (JetStream does
// not refuse its filters), receives every provider's events but not
// another subscriber's replay copies, and its own replay copies; Start
// decides what a new consumer receives of the history, and an existing
// consumer keeps its position.
func TestStartAndWildcardFilter(t *testing.T) {
	env := subtest.NewParallel(t)
	old := event(t, "evt_history")
	oldSeq := env.Publish(t, old)
	st, err := env.JS.Stream(context.Background(), subtest.Stream)
	require.NoError(t, err)
	stored, err := st.GetMsg(context.Background(), oldSeq)
	require.NoError(t, err)
	// The start time is after old's stream time; later is published once
	// the clock has passed it.
	from := stored.Time.Add(time.Microsecond)
	hubtest.Eventually(t, subtest.Timeout, "the clock passes the start time", func() bool { return time.Now().After(from) })
	later := event(t, "evt_after_from")
	env.Publish(t, later)

	subs := map[string]*handled{}
	for name, start := range map[string]subscriber.Start{
		"wild_new":  {Policy: jetstream.DeliverNewPolicy},
		"wild_all":  {},
		"wild_time": {Policy: jetstream.DeliverByStartTimePolicy, Time: from},
	} {
		h := &handled{}
		subs[name] = h
		sub := newSub(t, env, name, func(c *subscriber.Config) { c.Start = start })
		sub.Handle("*.>", h.handle)
		subtest.Start(t, sub)
	}
	clerk := subtest.ClerkUserCreated(t, "msg_new_clerk", "user_1", "a@example.com", time.Now())
	env.Publish(t, clerk)
	env.PublishReplayCopy(t, "someone_else", oldSeq, "r1")
	eventually(t, func() bool {
		return subs["wild_new"].has(clerk.EventID) && subs["wild_all"].has(clerk.EventID) && subs["wild_time"].has(clerk.EventID)
	}, "every subscriber receives the new clerk event")
	for name := range subs {
		env.WaitAllAcked(t, name) // its workers may finish in any order
	}
	require.True(t, subs["wild_all"].has(old.EventID) && subs["wild_all"].has(later.EventID), "start all: the history")
	require.True(t, subs["wild_time"].has(later.EventID), "start at a time: what came since")
	require.False(t, subs["wild_time"].has(old.EventID), "start at a time: nothing before it")
	require.False(t, subs["wild_new"].has(old.EventID) || subs["wild_new"].has(later.EventID), "start new: no history")

	// Its own replay copy reaches it; someone_else's never did.
	env.PublishReplayCopy(t, "wild_new", oldSeq, "r2")
	eventually(t, func() bool { return subs["wild_new"].has(old.EventID) }, "the replay copy")
	info := env.ConsumerInfo(t, "wild_new")
	require.Equal(t, jetstream.DeliverNewPolicy, info.Config.DeliverPolicy)

	// An existing consumer keeps its position: a restart with another
	// start is not refused by JetStream (which cannot change a deliver
	// policy), and the consumer's policy stays.
	first := newSub(t, env, "keeper", nil)
	first.Handle("*.>", (&handled{}).handle)
	require.NoError(t, subtest.Start(t, first).Stop())
	second := newSub(t, env, "keeper", func(c *subscriber.Config) { c.Start = subscriber.Start{Policy: jetstream.DeliverNewPolicy} })
	second.Handle("*.>", (&handled{}).handle)
	subtest.Start(t, second)
	require.Equal(t, jetstream.DeliverAllPolicy, env.ConsumerInfo(t, "keeper").Config.DeliverPolicy)
}
