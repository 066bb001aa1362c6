package hub_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
)

// NewDelivery is the one constructor of a delivery, for webhooks and API
// events alike.
func TestNewDelivery(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	signed := now.Add(-time.Second)
	entities := []hub.Entity{{Kind: "subscription", ID: "sub_1"}, {Kind: "customer", ID: "ctm_1"}}
	ev := hub.Event{ID: "evt_1", Type: "subscription.created", Signature: "ts=1;h1=00", SignedAt: signed, OccurredAt: now.Add(-time.Minute), Entities: entities}
	body := []byte(`{"event_id":"evt_1"}`)

	d, err := hub.NewDelivery(hub.OriginWebhook, "paddle", ev, body, now)
	require.NoError(t, err)
	require.EqualValues(t, 7, d.ArchiveID.Version(), "a UUIDv7")
	want := hub.Delivery{ArchiveID: d.ArchiveID, Provider: "paddle", EventID: "evt_1", EventType: "subscription.created",
		Body: body, Signature: "ts=1;h1=00", SignedAt: signed, OccurredAt: now.Add(-time.Minute), ReceivedAt: now, Origin: hub.OriginWebhook,
		Entities: entities}
	require.Equal(t, want, d)

	again, err := hub.NewDelivery(hub.OriginWebhook, "paddle", ev, body, now)
	require.NoError(t, err)
	require.NotEqual(t, d.ArchiveID, again.ArchiveID, "every delivery has its own archive id")

	tests := []struct {
		name         string
		occurred     time.Time
		typ          string
		wantOccurred time.Time
		wantError    string
	}{
		{"plausible time kept", now.Add(-72 * time.Hour), "a.b", now.Add(-72 * time.Hour), ""},
		{"a day ahead kept", now.Add(23 * time.Hour), "a.b", now.Add(23 * time.Hour), ""},
		{"far future dropped", now.Add(48 * time.Hour), "a.b", time.Time{}, ""},
		{"before 2000 dropped", time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), "a.b", time.Time{}, ""},
		{"unknown stays unknown", time.Time{}, "a.b", time.Time{}, ""},
		{"type cannot form a subject", time.Time{}, "a b", time.Time{}, `cannot publish: invalid subject: event type "a b" has token "a b" outside [A-Za-z0-9_-]`},
		{"empty token", time.Time{}, "a..b", time.Time{}, `cannot publish: invalid subject: event type "a..b" has token "" outside [A-Za-z0-9_-]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := hub.NewDelivery(hub.OriginAPI, "stripe", hub.Event{ID: "evt_2", Type: tt.typ, OccurredAt: tt.occurred}, body, now)
			require.NoError(t, err)
			require.Equal(t, tt.wantOccurred, d.OccurredAt)
			require.Equal(t, tt.wantError, d.Error)
			require.Equal(t, hub.OriginAPI, d.Origin)
			require.Empty(t, d.Signature)
		})
	}
}

func TestOutcomePublishable(t *testing.T) {
	require.True(t, hub.Outcome{Status: hub.Pending}.Publishable())
	require.False(t, hub.Outcome{Status: hub.Failed}.Publishable())
	require.False(t, hub.Outcome{Status: hub.Skipped, Duplicate: true}.Publishable())
}
