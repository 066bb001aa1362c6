package hub_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/schema"
)

// CheckText is the one check of event ids and types.
func TestCheckText(t *testing.T) {
	tests := []struct {
		in, wantErr string
	}{
		{"subscription.created", ""},
		{"évènement.créé", ""},
		{"", "event type is empty"},
		{strings.Repeat("t", hub.MaxEventTypeLen), ""},
		{strings.Repeat("t", hub.MaxEventTypeLen+1), "event type is longer than 128 bytes"},
		{"a\nb", "event type contains control characters"},
		{"a\x00", "event type contains control characters"},
		{"a\x7f", "event type contains control characters"},
		{"a\u0085", "event type contains control characters"}, // C1 NEL
		{"a\xff", "event type is not valid UTF-8"},
		{"a\xff\r", "event type contains control characters"}, // both: the control character is named
	}
	for _, tt := range tests {
		err := hub.CheckEventType(tt.in)
		if tt.wantErr == "" {
			require.NoError(t, err, "%q", tt.in)
			continue
		}
		var te *hub.TextError
		require.ErrorAs(t, err, &te, "%q", tt.in)
		require.Equal(t, "event type", te.Name)
		require.EqualError(t, err, tt.wantErr, "%q", tt.in)
	}
	require.NoError(t, hub.CheckEventID(strings.Repeat("i", hub.MaxEventIDLen)))
	require.EqualError(t, hub.CheckEventID(strings.Repeat("i", hub.MaxEventIDLen+1)), "event id is longer than 255 bytes")
	require.EqualError(t, hub.CheckText("X-GitHub-Delivery", "", hub.MaxEventIDLen), "X-GitHub-Delivery is empty")
}

// The subject bound is a provider name, a dot and the longest type.
func TestMaxSubjectLenHoldsTheLongestType(t *testing.T) {
	require.Equal(t, 32+1+hub.MaxEventTypeLen, schema.MaxSubjectLen)
}

func TestCheckTextDoesNotAllocate(t *testing.T) {
	s := "subscription.created"
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = hub.CheckEventType(s) }))
}
