package ops

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Time
	}{
		{"90m", now.Add(-90 * time.Minute)},
		{"36h", now.Add(-36 * time.Hour)},
		{"7d", now.Add(-7 * 24 * time.Hour)},
		{"1d12h", now.Add(-36 * time.Hour)},
		{"2w", now.Add(-14 * 24 * time.Hour)},
		{"2026-11-29", time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)},
		{"2026-11-29T08:30:00Z", time.Date(2026, 11, 29, 8, 30, 0, 0, time.UTC)},
		{" 1h ", now.Add(-time.Hour)},
	}
	for _, c := range cases {
		got, err := ParseTime(c.in, now)
		require.NoError(t, err, c.in)
		require.True(t, c.want.Equal(got), "%s: got %s want %s", c.in, got, c.want)
	}
	for _, bad := range []string{"", "yesterday", "-1h", "0s", "d", "7x", "1w2w", "99999999999d", "2026-13-01", "100000w", "1000000h",
		"213504d", "30501w", "36500d1h", "5214w36500d", "2562047h", "1d-25h", strings.Repeat("1", 65) + "h"} {
		_, err := ParseTime(bad, now)
		require.True(t, errors.Is(err, ErrBadTime), "%q: %v", bad, err)
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"90m", "7d", "1d12h", "2w", "2026-11-29", "2026-11-29T08:30:00Z", "", "-1h", "1w2w3d", "213504d", "30501w", "5214w36500d2562047h"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s, now)
		if err != nil {
			if !errors.Is(err, ErrBadTime) {
				t.Fatalf("%q: error %v does not wrap ErrBadTime", s, err)
			}
			return
		}
		if d, err := ParseAge(s); err == nil {
			if !got.Equal(now.Add(-d)) {
				t.Fatalf("%q: ParseTime and ParseAge disagree", s)
			}
			if d <= 0 || d > maxAge {
				t.Fatalf("%q: age %s outside (0, a century]", s, d)
			}
		}
	})
}

func TestParseWindow(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s, u, err := ParseWindow("2h", "1h", now)
	require.NoError(t, err)
	require.True(t, s.Equal(now.Add(-2*time.Hour)) && u.Equal(now.Add(-time.Hour)))
	s, u, err = ParseWindow("", "", now)
	require.NoError(t, err)
	require.True(t, s.IsZero() && u.IsZero())
	_, _, err = ParseWindow("1h", "2h", now)
	require.ErrorIs(t, err, ErrInvalid)
	_, _, err = ParseWindow("soon", "", now)
	require.ErrorIs(t, err, ErrBadTime)
	require.ErrorContains(t, err, "since:")
}
