package subscriber_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/internal/subtest"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// A stream with SubjectDeleteMarkerTTL (nats-server 2.11+) gets a delete
// marker from the server when the last message of a subject expires: a
// message with the header Nats-Marker-Reason and no hub headers. The
// subscriber acks it without calling the handler and without a dead
// letter, and counts it. Before, it was dead-lettered as "invalid hub
// headers", firing the dead-letter alerts.
func TestServerDeleteMarkerIsAckedNotDeadLettered(t *testing.T) {
	t.Parallel()
	env := subtest.New(t)
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
