package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// keeperInterval is relay.DefaultKeeperInterval, the hub's (spelled out so
// that this test also builds against a hub without the settings check).
const keeperInterval = 2 * time.Second

// readyzWithin waits at most one default keeper interval (plus room for a
// loaded machine) for /readyz to answer status with the stream state
// stream.
func (h *testHub) readyzWithin(status int, stream string) {
	h.t.Helper()
	var last string
	ok := func() bool {
		resp, err := http.Get(h.base + "/readyz")
		if err != nil {
			last = err.Error()
			return false
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		last = fmt.Sprintf("%d %s", resp.StatusCode, raw)
		return resp.StatusCode == status && body["stream"] == stream
	}
	if err := hubtest.Until(keeperInterval+2*time.Second, ok); err != nil {
		h.t.Fatalf("/readyz did not answer %d with stream %q within a keeper interval; last: %s", status, stream, last)
	}
}

func (h *testHub) metricsText() string {
	h.t.Helper()
	resp, err := http.Get(h.base + "/metrics")
	require.NoError(h.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return string(raw)
}

// bigDelivery posts a signed paddle delivery of about size bytes.
func (h *testHub) bigDelivery(eventID string, size int) answer {
	h.t.Helper()
	pad := strings.Repeat("x", size)
	body := []byte(`{"event_id":"` + eventID + `","event_type":"subscription.created","occurred_at":"` +
		time.Now().UTC().Format(time.RFC3339) + `","data":{"pad":"` + pad + `"}}`)
	hdr, _, err := h.paddle.Sign(eventID, "", body, time.Now())
	require.NoError(h.t, err)
	return h.post("paddle", hdr, body)
}

// Each stream setting that diverts or stalls publishing turns /readyz not
// ready within one keeper interval, naming the setting, with
// hub_stream_setting_broken; going back to good settings (or deleting the
// stream where the server refuses to undo the setting) turns it ready
// again. A max_msg_size below the body limit lowers the 413 bound to it.
// The hub checks its stream every 200 ms instead of every 2 s: each step
// waits for the next check, and what a check finds does not depend on
// when it runs.
func TestStreamSettingsTurnReadyzNotReady(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) { service.SetKeeperInterval(c, 200*time.Millisecond) })
	ctx := context.Background()
	h.readyzWithin(http.StatusOK, "ok")
	st, err := h.js.Stream(ctx, h.cfg.Stream)
	require.NoError(t, err)
	good := st.CachedInfo().Config
	edit := func(t *testing.T, f func(c *jetstream.StreamConfig)) error {
		st, err := h.js.Stream(ctx, h.cfg.Stream)
		require.NoError(t, err)
		c := st.CachedInfo().Config
		f(&c)
		_, err = h.js.UpdateStream(ctx, c)
		return err
	}
	backToGood := func(c *jetstream.StreamConfig) {
		subjects := c.Subjects
		*c = good
		c.Subjects = subjects
	}
	for _, tc := range []struct {
		setting string
		breakIt func(c *jetstream.StreamConfig)
		// while broken, before going back; after, once ready again
		during, after func(t *testing.T)
		// refused is the server's answer to undoing it; the stream is then
		// deleted and the hub recreates it.
		refused string
	}{
		{setting: "subject_transform", breakIt: func(c *jetstream.StreamConfig) {
			c.SubjectTransform = &jetstream.SubjectTransformConfig{Source: "paddle.>", Destination: "moved.paddle.>"}
		}, during: func(t *testing.T) {
			// Accepted, and held in the outbox rather than acknowledged on
			// moved.paddle.>.
			require.Equal(t, http.StatusOK, h.deliver("paddle", "evt_transformed", "subscription.created").status)
			require.Equal(t, map[string]int{"PENDING": 1}, h.statusCounts("paddle", "evt_transformed"))
		}, after: func(t *testing.T) {
			h.waitPublished()
			st, err := h.js.Stream(ctx, h.cfg.Stream)
			require.NoError(t, err)
			msg, err := st.GetLastMsgForSubject(ctx, "paddle.subscription.created")
			require.NoError(t, err)
			require.Equal(t, "paddle:evt_transformed", msg.Header.Get("Nats-Msg-Id"), "published on its own subject")
		}},
		{setting: "sealed", breakIt: func(c *jetstream.StreamConfig) { c.Sealed = true }, refused: "unseal"},
		{setting: "no_ack", breakIt: func(c *jetstream.StreamConfig) { c.NoAck = true }},
		{setting: "retention", breakIt: func(c *jetstream.StreamConfig) { c.Retention = jetstream.InterestPolicy }},
		{setting: "discard_new", breakIt: func(c *jetstream.StreamConfig) { c.Discard, c.MaxMsgs = jetstream.DiscardNew, 100 }},
		{setting: "max_msgs_per_subject", breakIt: func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 1 }},
		{setting: "max_msg_size", breakIt: func(c *jetstream.StreamConfig) { c.MaxMsgSize = 64 << 10 },
			during: func(t *testing.T) {
				a := h.bigDelivery("evt_big_refused", 100<<10)
				require.Equal(t, http.StatusRequestEntityTooLarge, a.status, "%v", a.body)
				require.Contains(t, a.body["error"], fmt.Sprintf("up to %d bytes", 64<<10-4096))
				require.Zero(t, h.count(`SELECT count(*) FROM webhook_event_status WHERE event_id = 'evt_big_refused'`))
			}},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			require.NoError(t, edit(t, tc.breakIt))
			h.readyzWithin(http.StatusServiceUnavailable, "misconfigured: "+tc.setting)
			require.Contains(t, h.metricsText(), `hub_stream_setting_broken{setting="`+tc.setting+`"} 1`)
			if tc.during != nil {
				tc.during(t)
			}
			if tc.refused == "" {
				require.NoError(t, edit(t, backToGood))
			} else {
				require.ErrorContains(t, edit(t, backToGood), tc.refused)
				require.NoError(t, h.js.DeleteStream(ctx, h.cfg.Stream))
			}
			h.readyzWithin(http.StatusOK, "ok")
			require.Contains(t, h.metricsText(), `hub_stream_setting_broken{setting="`+tc.setting+`"} 0`)
			if tc.after != nil {
				tc.after(t)
			}
		})
	}
	// Back to good settings, the large body is taken and published.
	a := h.bigDelivery("evt_big_taken", 100<<10)
	require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	h.waitPublished()
	require.Equal(t, 1, h.streamMsgIDs()["paddle:evt_big_taken"])
}
