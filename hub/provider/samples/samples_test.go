package samples

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Given data becomes the event's data object.
func TestPaddleGivenData(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 30, 45, 123456789, time.UTC)
	body, err := Body("paddle", "evt_1", "price.created", []byte(`{"id":"pri_1"}`), now)
	require.NoError(t, err)
	require.JSONEq(t, `{"data":{"id":"pri_1"},"event_id":"evt_1","event_type":"price.created","occurred_at":"2025-06-01T12:30:45.123456Z","notification_id":"`+paddleID("ntf", "evt_1")+`"}`, string(body))
}

// Every name without a builder of its own is a Standard Webhooks
// provider, whose error messages name it.
func TestBodyStandardFallback(t *testing.T) {
	now := time.Unix(1750000000, 0)
	for _, name := range []string{"paddle", "clerk", "stripe", "github", "shopify", "twilio"} {
		require.True(t, Has(name), name)
	}
	require.False(t, Has("resend"))
	body, err := Body("resend", "msg_1", "email.sent", nil, now)
	require.NoError(t, err)
	require.Contains(t, string(body), `"type":"email.sent"`)
	_, err = Body("resend", "", "email.sent", nil, now)
	require.EqualError(t, err, "resend: sample needs an event id and type")
}
