package subscriber_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// The hub's stream deleted under a running subscriber (an operator
// mistake, a disaster recovery) and created again: the subscriber reports
// that it has no consumer meanwhile, recreates its durable consumer and
// processes what is published next, once.
func TestStreamRecreated(t *testing.T) {
	t.Parallel()
	env := subtest.New(t)
	const name = "recreated"
	var c calls
	reg := newRegistry()
	sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.Registerer = reg })
	sub.Handle("paddle.subscription.created", effectHandler(name, &c))
	subtest.Start(t, sub)
	env.Publish(t, event(t, "evt_before"))
	eventually(t, func() bool { return sub.Stats().Processed == 1 })

	ctx := context.Background()
	require.NoError(t, env.JS.DeleteStream(ctx, subtest.Stream))
	eventually(t, func() bool {
		err := sub.Healthy()
		return err != nil && strings.Contains(err.Error(), "no consumer")
	}, "unhealthy while the stream is gone")
	require.Zero(t, gauge(t, reg, subscriber.MetricConsumerUp, name))

	_, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name:     subtest.Stream,
		Subjects: []string{schema.ProviderFilter("paddle"), schema.ProviderFilter("clerk"), schema.ReplayFilter()},
		Storage:  jetstream.FileStorage,
	})
	require.NoError(t, err)
	eventually(t, func() bool { return sub.Healthy() == nil }, "consuming again")
	require.EqualValues(t, 1, gauge(t, reg, subscriber.MetricConsumerUp, name))
	env.Publish(t, event(t, "evt_after"))
	eventually(t, func() bool { return effects(t, env, name, "evt_after") == 1 })
	env.WaitAllAcked(t, name)
	require.Equal(t, 1, c.get("evt_after"))
	require.EqualValues(t, 2, sub.Stats().Processed)
}
