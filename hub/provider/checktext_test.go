package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// checkText is the one check of event ids and types: the providers apply
// it where they read them, VerifyDelivery to every event.
func TestCheckText(t *testing.T) {
	tests := []struct {
		in, wantErr string
	}{
		{"subscription.created", ""},
		{"évènement.créé", ""},
		{"", "invalid payload: empty event type"},
		{strings.Repeat("t", 128), ""},
		{strings.Repeat("t", 129), "invalid payload: event type is longer than 128 bytes"},
		{"a\nb", "invalid payload: event type contains control characters"},
		{"a\x7f", "invalid payload: event type contains control characters"},
		{"a\u0085", "invalid payload: event type contains control characters"}, // C1 NEL
		{"a\xff", "invalid payload: event type is not valid UTF-8"},
	}
	for _, tt := range tests {
		err := checkText("empty event type", "event type", tt.in, maxEventTypeLen)
		if tt.wantErr == "" {
			require.NoError(t, err, "%q", tt.in)
			continue
		}
		require.ErrorIs(t, err, ErrPayload, "%q", tt.in)
		require.EqualError(t, err, tt.wantErr, "%q", tt.in)
	}
}

// VerifyDelivery applies checkText to every event, so that what a provider
// leaves unchecked (here a C1 control character in a Stripe type) is still
// refused, with ErrPayload.
func TestVerifyDeliveryChecksText(t *testing.T) {
	p := newTestProvider(t, "stripe", stripeSecret)
	body := []byte(`{"id":"evt_1","type":"customer.created\u0085"}`)
	h := stripeHeader("t=1750000000,v1=" + refStripeV1(stripeSecret, "1750000000", body))
	_, err := VerifyDelivery(p, Request{Header: h, Body: body, URI: "/webhooks/stripe", Now: time.Unix(1750000000, 0)})
	require.ErrorIs(t, err, ErrPayload)
}
