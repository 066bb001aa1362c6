package subscriber

import (
	"testing"
	"time"

	"github.com/hookhub/hookhub/schema"
	"github.com/stretchr/testify/require"
)

func TestValidPattern(t *testing.T) {
	cases := []struct {
		subject string
		ok      bool
	}{
		{"paddle.subscription.created", true},
		{"clerk.user.*", true},
		{"paddle.>", true},
		{">", true},
		{"*.user.created", true},
		{"", false},
		{"paddle..created", false},
		{"paddle.>.created", false},
		{"paddle.sub scription", false},
		{"paddle.subscription.", false},
		{"paddle.a*", false},
	}
	for _, c := range cases {
		t.Run(c.subject, func(t *testing.T) {
			err := validPattern(c.subject)
			if c.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	cases := []struct {
		pattern, subject string
		want             bool
	}{
		{"paddle.subscription.created", "paddle.subscription.created", true},
		{"paddle.subscription.created", "paddle.subscription.updated", false},
		{"paddle.subscription.*", "paddle.subscription.updated", true},
		{"paddle.subscription.*", "paddle.subscription", false},
		{"paddle.subscription.*", "paddle.subscription.a.b", false},
		{"paddle.>", "paddle.subscription.created", true},
		{"paddle.>", "paddle", false},
		{"*.user.created", "clerk.user.created", true},
		{"clerk.user.created", "clerk.user", false},
	}
	for _, c := range cases {
		t.Run(c.pattern+"~"+c.subject, func(t *testing.T) {
			require.Equal(t, c.want, schema.MatchSubject(c.pattern, c.subject))
		})
	}
}

func TestOverlaps(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"paddle.subscription.created", "paddle.subscription.created", true},
		{"paddle.subscription.created", "paddle.subscription.canceled", false},
		{"paddle.subscription.*", "paddle.subscription.canceled", true},
		{"paddle.>", "paddle.subscription.canceled", true},
		{"paddle.>", "clerk.user.created", false},
		{"paddle.*", "paddle.subscription.created", false},
		{"*.user.created", "clerk.*.created", true},
		{"clerk.user", "clerk.user.created", false},
		{">", "clerk.user.created", true},
	}
	for _, c := range cases {
		t.Run(c.a+"~"+c.b, func(t *testing.T) {
			require.Equal(t, c.want, schema.SubjectsOverlap(c.a, c.b))
			require.Equal(t, c.want, schema.SubjectsOverlap(c.b, c.a))
		})
	}
}

func TestBackoff(t *testing.T) {
	cfg := Config{Backoff: []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}}
	cases := []struct {
		attempt uint64
		want    time.Duration
	}{
		{0, time.Second}, {1, time.Second}, {2, 5 * time.Second}, {3, 30 * time.Second}, {4, 30 * time.Second}, {100, 30 * time.Second},
	}
	for _, c := range cases {
		require.Equal(t, c.want, cfg.backoff(c.attempt), "attempt %d", c.attempt)
	}
}

func TestValidName(t *testing.T) {
	cases := map[string]bool{
		"credits": true, "email": true, "down_grade2": true,
		"": false, "Credits": false, "2fa": false, "pg_credits": false, "credits.x": false,
		"credits-x": false, "a b": false, "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabc": true,
		"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcd": false,
	}
	for name, want := range cases {
		require.Equal(t, want, ValidName(name), "%q", name)
	}
}
