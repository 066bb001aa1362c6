package schema_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/schema"
)

func TestValidStreamName(t *testing.T) {
	cases := []struct {
		name string
		want bool
	}{
		{schema.DefaultStream, true},
		{"EVENTS_2", true},
		{"", false},
		{"WEB HOOKS", false},
		{"WEB.HOOKS", false},
		{"WEB*", false},
		{"WEB>", false},
		{"a/b", false},
		{`a\b`, false},
		{"a\tb", false},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, schema.ValidStreamName(tc.name), "%q", tc.name)
	}
}

// Operators' configurations, dashboards and alerts name the stream: its
// default does not change.
func TestDefaultStream(t *testing.T) {
	require.Equal(t, "WEBHOOKS", schema.DefaultStream)
}
