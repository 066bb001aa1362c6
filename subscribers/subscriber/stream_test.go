package subscriber_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
	env := subtest.NewParallel(t)
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

// The stream deleted while every worker is busy and what was pulled waits
// in the client: no pull request is waiting on the server at that moment,
// so the server has nobody to tell "consumer deleted", and the next pulls
// only get "no responders". The subscriber must still notice (it asks for
// its consumer's info), recreate the consumer on the recreated stream and
// process what is published next.
func TestStreamDeletedWhileWorkersAreBusy(t *testing.T) {
	env := subtest.NewParallel(t)
	const name = "busydelete"
	var c calls
	release := make(chan struct{})
	var busy sync.WaitGroup
	busy.Add(2)
	sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.Concurrency = 2 })
	sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		if strings.HasPrefix(ev.EventID, "evt_busy") && c.add(ev.EventID) == 1 {
			busy.Done()
			<-release
		}
		return effectHandler(name, &calls{})(ctx, tx, ev)
	})
	subtest.Start(t, sub)
	for i := range 4 { // two workers, two more pulled and waiting in the client
		env.Publish(t, event(t, fmt.Sprintf("evt_busy_%d", i)))
	}
	busy.Wait()
	eventually(t, func() bool {
		info, err := env.JS.Consumer(context.Background(), subtest.Stream, name)
		return err == nil && info.CachedInfo().NumAckPending == 4 && info.CachedInfo().NumWaiting == 0
	}, "every message pulled, no pull waiting")

	ctx := context.Background()
	require.NoError(t, env.JS.DeleteStream(ctx, subtest.Stream))
	close(release)
	_, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name:     subtest.Stream,
		Subjects: []string{schema.ProviderFilter("paddle"), schema.ProviderFilter("clerk"), schema.ReplayFilter()},
		Storage:  jetstream.FileStorage,
	})
	require.NoError(t, err)
	env.Publish(t, event(t, "evt_after_busy"))
	eventually(t, func() bool { return effects(t, env, name, "evt_after_busy") == 1 }, "the subscriber never consumed again")
	env.WaitAllAcked(t, name)
}

// A stream with SubjectDeleteMarkerTTL (nats-server 2.11+) gets a delete
// marker from the server when the last message of a subject expires: a
// message with the header Nats-Marker-Reason and no hub headers. The
// subscriber acks it without calling the handler and without a dead
// letter, and counts it. Before, it was dead-lettered as "invalid hub
// headers", firing the dead-letter alerts.
func TestServerDeleteMarkerIsAckedNotDeadLettered(t *testing.T) {
	env := subtest.NewParallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), subtest.Timeout)
	defer cancel()
	stream, err := env.JS.Stream(ctx, subtest.Stream)
	require.NoError(t, err)
	cfg := stream.CachedInfo().Config
	// Markers live a minute (longer than the test); one message per
	// subject lets the event's own TTL be shorter than the markers' (the
	// server otherwise raises it to SubjectDeleteMarkerTTL).
	cfg.AllowMsgTTL, cfg.AllowRollup = true, true
	cfg.SubjectDeleteMarkerTTL = time.Minute
	cfg.MaxMsgsPerSubject = 1
	_, err = env.JS.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	const name = "marker_sub"
	c := &calls{}
	reg := newRegistry()
	sub := newSub(t, env, name, func(cfg *subscriber.Config) { cfg.Registerer = reg })
	sub.Handle(schema.ProviderFilter("paddle"), effectHandler(name, c))
	subtest.Start(t, sub)

	// An event as the hub publishes it, which expires after a second.
	m := event(t, "evt_marker")
	subject, err := schema.Subject(m.Provider, m.EventType)
	require.NoError(t, err)
	h := schema.Metadata{MsgID: schema.MsgID(m.Provider, m.EventID), EventID: m.EventID, Provider: m.Provider,
		EventType: m.EventType, ArchiveID: uuid.NewString(), ReceivedAt: time.Now()}.Header()
	h.Set(jetstream.MsgTTLHeader, "1s")
	env.PublishRaw(t, &nats.Msg{Subject: subject, Data: m.Body, Header: h})

	// The server replaces it with a marker on the same subject.
	var marker *jetstream.RawStreamMsg
	eventually(t, func() bool {
		marker, err = stream.GetLastMsgForSubject(ctx, subject)
		return err == nil && schema.IsServerMarker(marker.Header)
	}, "no delete marker on %s", subject)
	require.Equal(t, "MaxAge", marker.Header.Get(schema.HeaderMarkerReason))

	// Delivered and settled (acked, or on the old code dead-lettered and
	// terminated).
	env.WaitAllAcked(t, name)
	eventually(t, func() bool { return sub.Stats().SkippedMarkers == 1 }, "marker not skipped: %+v", sub.Stats())
	st := sub.Stats()
	require.EqualValues(t, 1, st.Processed, "the event itself is processed: %+v", st)
	require.Zero(t, st.DeadLettered, "%+v", st)
	require.Zero(t, st.Failed, "%+v", st)
	require.Equal(t, 1, c.get(m.EventID), "the handler is called for the event only")
	dls, err := subscriber.ListDeadLetters(ctx, env.Pool, name)
	require.NoError(t, err)
	require.Empty(t, dls)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP hookhub_subscriber_skipped_server_markers_total Subject delete markers the NATS server wrote on the stream, acked without calling the handler.
# TYPE hookhub_subscriber_skipped_server_markers_total counter
hookhub_subscriber_skipped_server_markers_total{subscriber="marker_sub"} 1
`), subscriber.MetricSkippedMarkers))
}
