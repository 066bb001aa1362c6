package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/schema"
)

// A subject transform on the stream: the relay's publishes are
// acknowledged and stored under other subjects, the events marked
// PROCESSED. `hub reconcile` finds them (and says "0 missing" no more),
// names the setting, counts the events on a subject no subscriber's
// durable matches, refuses to republish into the same transform, and once
// the transform is gone republishes them to their own subjects.
func TestReconcileFindsEventsWhereNoSubscriberLooks(t *testing.T) {
	ctx := context.Background()
	pool, _, js := streamEnv(t)
	st := store.New(pool)
	// A subscriber of subscription.created only.
	durable(t, js, "credits", "paddle.subscription.created")
	r, err := relay.New(st, js, relay.Config{Stream: schema.DefaultStream, DuplicateWindow: time.Minute})
	require.NoError(t, err)
	ingest := func(eventID, eventType string) {
		_, err := st.Ingest(ctx, []hub.Delivery{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: eventID,
			EventType: eventType, Body: []byte(`{"id":"` + eventID + `"}`), ReceivedAt: time.Now()}})
		require.NoError(t, err)
	}
	ingest("evt_unwatched", "transaction.completed")
	require.NoError(t, r.Drain(ctx))

	transform := func(tr *jetstream.SubjectTransformConfig) {
		s, err := js.Stream(ctx, schema.DefaultStream)
		require.NoError(t, err)
		c := s.CachedInfo().Config
		c.SubjectTransform = tr
		_, err = js.UpdateStream(ctx, c)
		require.NoError(t, err)
	}
	transform(&jetstream.SubjectTransformConfig{Source: "paddle.>", Destination: "moved.paddle.>"})
	ingest("evt_moved_1", "subscription.created")
	ingest("evt_moved_2", "subscription.created")
	require.NoError(t, r.Drain(ctx))
	var processed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PROCESSED'`).Scan(&processed))
	require.Equal(t, 3, processed, "acknowledged, so marked published")

	reconcile := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(ctx, append([]string{"reconcile", "--since", "1h"}, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, out, errOut := reconcile()
	require.Equal(t, 1, code, "%s%s", out, errOut)
	require.Contains(t, out, "0 missing from the stream, 2 stored under another subject")
	require.Contains(t, out, "paddle:evt_moved_1")
	require.Contains(t, out, "on moved.paddle.subscription.created, not paddle.subscription.created")
	require.Contains(t, out, "paddle.transaction.completed  1 events")
	require.Contains(t, out, "subject_transform: ")
	require.Contains(t, errOut, "break delivery (subject_transform)")
	var status, statusErr bytes.Buffer
	require.Equal(t, 0, run(ctx, []string{"status"}, &status, &statusErr), statusErr.String())
	require.Contains(t, status.String(), "setting breaks delivery: subject_transform: ")

	code, out, _ = reconcile("--json")
	require.Equal(t, 1, code)
	kinds := map[string]int{}
	for line := range strings.Lines(out) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		switch {
		case m["want_subject"] == "paddle.subscription.created":
			require.Equal(t, "moved.paddle.subscription.created", m["subject"])
			kinds["astray"]++
		case m["unwatched_subject"] == "paddle.transaction.completed":
			require.EqualValues(t, 1, m["events"])
			kinds["unwatched"]++
		case m["setting"] == "subject_transform":
			kinds["setting"]++
		default:
			t.Fatalf("unexpected line %s", line)
		}
	}
	require.Equal(t, map[string]int{"astray": 2, "unwatched": 1, "setting": 1}, kinds)

	// Republishing into the same transform would divert the copies too.
	code, _, errOut = reconcile("--republish")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "fix them first")
	require.NotContains(t, errOut, "republished")

	transform(nil)
	code, out, errOut = reconcile("--republish")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	require.Contains(t, errOut, "republished 2 of 2")
	code, out, errOut = reconcile()
	require.Equal(t, 0, code, "%s%s", out, errOut)
	require.Contains(t, out, "0 missing from the stream, 0 stored under another subject")
	require.Contains(t, out, "paddle.transaction.completed  1 events", "still no subscriber for it: told, not an error")
}
