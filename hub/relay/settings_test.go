package relay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/schema"
)

// Each stream setting that diverts or stalls the hub's publishes, or
// breaks its dedup, makes the stream "misconfigured" at the next check,
// with its word on /readyz (Status) and its metric; going back to good
// settings makes it ok again. What the server refuses to undo (a seal, a
// work-queue retention) is undone by deleting the stream, which the keeper
// recreates.
func TestKeeperStreamSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Minute)
	h := b.hub(t, b.store, nil)
	// A keeper that knows the hub's body limit (the one of b.hub does not).
	k, err := relay.NewKeeper(h.relay, b.js, b.store, relay.KeeperConfig{Stream: keptStream, Metrics: h.metrics, MaxBodyBytes: 1 << 20})
	require.NoError(t, err)
	h.keeper = k
	require.NoError(t, h.keeper.Check(ctx))
	require.Equal(t, relay.StreamOK, h.keeper.State())
	good, err := b.stream.Info(ctx)
	require.NoError(t, err)
	// edit changes the stream's config; the change must be accepted.
	edit := func(f func(c *jetstream.StreamConfig)) func(t *testing.T) {
		return func(t *testing.T) {
			st, err := b.js.Stream(ctx, keptStream.Name)
			require.NoError(t, err)
			c := st.CachedInfo().Config
			f(&c)
			_, err = b.js.UpdateStream(ctx, c)
			require.NoError(t, err)
		}
	}
	restoreGood := edit(func(c *jetstream.StreamConfig) {
		subjects := c.Subjects
		*c = good.Config
		c.Subjects = subjects
	})
	recreate := func(f func(c *jetstream.StreamConfig)) func(t *testing.T) {
		return func(t *testing.T) {
			require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name))
			c := good.Config
			f(&c)
			_, err := b.js.CreateStream(ctx, c)
			require.NoError(t, err)
		}
	}
	for i, tc := range []struct {
		setting string
		breakIt func(t *testing.T)
		// refused, when the server refuses to go back: tried, then the
		// stream is deleted instead (the keeper recreates it).
		refused string
		// held: publishing is held while the setting is there (the events
		// wait in the outbox, then go to their own subject).
		held bool
	}{
		{relay.SettingSealed, edit(func(c *jetstream.StreamConfig) { c.Sealed = true }), "can not unseal", false},
		{relay.SettingSubjectTransform, edit(func(c *jetstream.StreamConfig) {
			c.SubjectTransform = &jetstream.SubjectTransformConfig{Source: "paddle.>", Destination: "moved.paddle.>"}
		}), "", true},
		{relay.SettingSubjectTransform, edit(func(c *jetstream.StreamConfig) {
			c.SubjectTransform = &jetstream.SubjectTransformConfig{Source: "paddle.*.*", Destination: "paddle.{{wildcard(2)}}.{{wildcard(1)}}"}
		}), "", true},
		{relay.SettingNoAck, edit(func(c *jetstream.StreamConfig) { c.NoAck = true }), "", false},
		{relay.SettingRetention, edit(func(c *jetstream.StreamConfig) { c.Retention = jetstream.InterestPolicy }), "", false},
		{relay.SettingRetention, recreate(func(c *jetstream.StreamConfig) { c.Retention = jetstream.WorkQueuePolicy }), "workqueue", false},
		{relay.SettingDiscardNew, edit(func(c *jetstream.StreamConfig) { c.Discard, c.MaxMsgs = jetstream.DiscardNew, 1000 }), "", false},
		{relay.SettingDiscardNew, edit(func(c *jetstream.StreamConfig) { c.Discard, c.MaxBytes = jetstream.DiscardNew, 64<<20 }), "", false},
		{relay.SettingMaxMsgsPerSubject, edit(func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 10 }), "", false},
		{relay.SettingMaxMsgSize, edit(func(c *jetstream.StreamConfig) { c.MaxMsgSize = 64 << 10 }), "", false},
		{relay.SettingMaxMsgSize, edit(func(c *jetstream.StreamConfig) { c.MaxMsgSize = 1<<20 + relay.MaxHeaderBytes - 1 }), "", false},
		{relay.SettingMsgCounter, recreate(func(c *jetstream.StreamConfig) { c.AllowMsgCounter = true }), "can not change message counter", false},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			tc.breakIt(t)
			err := h.keeper.Check(ctx)
			require.ErrorIs(t, err, relay.ErrStreamMisconfigured)
			require.Equal(t, relay.StreamMisconfigured, h.keeper.State())
			status, ready := h.keeper.Status()
			require.False(t, ready)
			require.True(t, strings.HasPrefix(status, "misconfigured: "), status)
			require.Contains(t, strings.Split(strings.TrimPrefix(status, "misconfigured: "), ", "), tc.setting)
			require.Equal(t, 1.0, testutil.ToFloat64(h.metrics.StreamSettingBroken.WithLabelValues(tc.setting)))
			require.Equal(t, 1.0, testutil.ToFloat64(h.metrics.StreamPresent), "the stream is there")
			// The keeper changes none of it.
			require.Error(t, h.keeper.Check(ctx))
			before := b.msgs(t)
			var eventID string
			if tc.held {
				eventID = fmt.Sprintf("evt_held_%d", i)
				b.ingest(t, eventID)
				require.NoError(t, h.relay.Drain(ctx))
				require.Equal(t, 1, b.pending(t), "held in the outbox")
				require.Equal(t, before, b.msgs(t), "nothing published where no subscriber looks")
			}

			if tc.refused == "" {
				restoreGood(t)
			} else {
				st, err := b.js.Stream(ctx, keptStream.Name)
				require.NoError(t, err)
				c := st.CachedInfo().Config
				c.Sealed, c.Retention, c.AllowMsgCounter = false, jetstream.LimitsPolicy, false
				_, err = b.js.UpdateStream(ctx, c)
				require.ErrorContains(t, err, tc.refused)
				require.NoError(t, b.js.DeleteStream(ctx, keptStream.Name))
			}
			require.NoError(t, h.keeper.Check(ctx))
			require.Equal(t, relay.StreamOK, h.keeper.State())
			status, ready = h.keeper.Status()
			require.Equal(t, "ok", status)
			require.True(t, ready)
			for _, s := range relay.StreamSettings {
				require.Zero(t, testutil.ToFloat64(h.metrics.StreamSettingBroken.WithLabelValues(s)), s)
			}
			if tc.held {
				require.NoError(t, h.relay.Drain(ctx))
				require.Zero(t, b.pending(t))
				msg, err := b.stream.GetLastMsgForSubject(ctx, "paddle.subscription.created")
				require.NoError(t, err)
				require.Equal(t, "paddle:"+eventID, msg.Header.Get(schema.HeaderMsgID), "published on its own subject")
			}
		})
	}
}

// StreamFaults on configs the server may not let a test build (a mirror
// with the hub's subjects, a duplicate window the hub could not raise),
// and on the settings it must leave alone.
func TestStreamFaults(t *testing.T) {
	t.Parallel()
	need := relay.StreamNeeds{MaxBodyBytes: 1 << 20, DuplicateWindow: 2 * time.Minute}
	good := jetstream.StreamConfig{Name: "WEBHOOKS", Subjects: []string{"paddle.>"}, Retention: jetstream.LimitsPolicy,
		Discard: jetstream.DiscardOld, MaxMsgs: -1, MaxBytes: -1, MaxMsgsPerSubject: -1, MaxMsgSize: -1, Duplicates: 2 * time.Minute}
	for _, tc := range []struct {
		name string
		edit func(c *jetstream.StreamConfig)
		want []string
	}{
		{"good", func(c *jetstream.StreamConfig) {}, nil},
		{"retention by age and discard old limits are retention, not faults", func(c *jetstream.StreamConfig) {
			c.MaxAge, c.MaxMsgs, c.MaxBytes = 720*time.Hour, 1e9, 1<<40
		}, nil},
		{"republish and sources do not divert", func(c *jetstream.StreamConfig) {
			c.RePublish = &jetstream.RePublish{Source: ">", Destination: "copy.>"}
			c.Sources = []*jetstream.StreamSource{{Name: "OTHER"}}
		}, nil},
		{"max_msg_size that fits the body and headers", func(c *jetstream.StreamConfig) { c.MaxMsgSize = 1<<20 + relay.MaxHeaderBytes }, nil},
		{"an identity transform", func(c *jetstream.StreamConfig) {
			c.SubjectTransform = &jetstream.SubjectTransformConfig{Source: "paddle.>", Destination: "paddle.>"}
		}, nil},
		{"a transform of every subject", func(c *jetstream.StreamConfig) {
			c.SubjectTransform = &jetstream.SubjectTransformConfig{Destination: "moved.>"}
		}, []string{relay.SettingSubjectTransform}},
		{"mirror", func(c *jetstream.StreamConfig) { c.Mirror = &jetstream.StreamSource{Name: "OTHER"} }, []string{relay.SettingMirror}},
		{"duplicate window not raised", func(c *jetstream.StreamConfig) { c.Duplicates = time.Minute }, []string{relay.SettingDuplicateWindow}},
		{"discard new per subject", func(c *jetstream.StreamConfig) {
			c.Discard, c.DiscardNewPerSubject, c.MaxMsgsPerSubject = jetstream.DiscardNew, true, 1
		}, []string{relay.SettingDiscardNew, relay.SettingMaxMsgsPerSubject}},
		{"discard new without limits", func(c *jetstream.StreamConfig) { c.Discard = jetstream.DiscardNew }, nil},
		{"sealed (the server sets discard new)", func(c *jetstream.StreamConfig) {
			c.Sealed, c.Discard, c.MaxMsgs = true, jetstream.DiscardNew, 5
		}, []string{relay.SettingSealed}},
		{"several", func(c *jetstream.StreamConfig) {
			c.NoAck, c.Retention, c.MaxMsgSize = true, jetstream.InterestPolicy, 1024
		}, []string{relay.SettingNoAck, relay.SettingRetention, relay.SettingMaxMsgSize}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			var got []string
			for _, f := range relay.StreamFaults(c, need) {
				got = append(got, f.Setting)
				require.NotEmpty(t, f.Problem)
				require.NotEmpty(t, f.Fix)
			}
			require.Equal(t, tc.want, got)
		})
	}
	require.Empty(t, relay.StreamFaults(jetstream.StreamConfig{MaxMsgSize: 10, Duplicates: time.Second}, relay.StreamNeeds{}),
		"no body limit or window known: neither is checked")
}

func TestPublishLimit(t *testing.T) {
	t.Parallel()
	h := relay.MaxHeaderBytes
	for _, tc := range []struct {
		payload int64
		msgSize int32
		want    int
	}{
		{0, -1, 0},
		{1 << 20, -1, 1<<20 - h},
		{8 << 20, 64 << 10, 64<<10 - h},
		{64 << 10, 8 << 20, 64<<10 - h},
		{0, 64 << 10, 64<<10 - h},
		{8 << 20, 100, 1},
	} {
		require.Equal(t, tc.want, relay.PublishLimit(tc.payload, tc.msgSize), "%d %d", tc.payload, tc.msgSize)
	}
}

// A duplicate window the hub cannot raise to its own (the server refuses
// one longer than the stream's max age) leaves the stream misconfigured;
// once the raise goes through, it is ok.
func TestKeeperDuplicateWindowNotRaised(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Minute)
	c := b.stream.CachedInfo().Config
	c.MaxAge, c.Duplicates = 30*time.Second, 30*time.Second
	_, err := b.js.UpdateStream(ctx, c)
	require.NoError(t, err)
	h := b.hub(t, b.store, nil)
	cfg := keptStream
	cfg.MaxAge = 30 * time.Second // this hub would not raise it
	k, err := relay.NewKeeper(h.relay, b.js, b.store, relay.KeeperConfig{Stream: cfg, Metrics: h.metrics})
	require.NoError(t, err)
	require.ErrorIs(t, k.Check(ctx), relay.ErrStreamMisconfigured)
	status, ready := k.Status()
	require.Equal(t, "misconfigured: duplicate_window", status)
	require.False(t, ready)

	c.MaxAge = 0
	_, err = b.js.UpdateStream(ctx, c)
	require.NoError(t, err)
	require.NoError(t, k.Check(ctx))
	require.Equal(t, relay.StreamOK, k.State())
	info, err := b.stream.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, time.Minute, info.Config.Duplicates, "raised")
}
