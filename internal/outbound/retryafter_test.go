package outbound

import (
	"testing"
	"time"
)

// maxDuration is the longest time.Duration.
const maxDuration = time.Duration(1<<63 - 1)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	const day = 24 * time.Hour
	for _, tc := range []struct {
		in   string
		most time.Duration
		want time.Duration
		ok   bool
	}{
		{"0", day, 0, true},
		{"7", day, 7 * time.Second, true},
		{" 120 ", day, 2 * time.Minute, true},
		{"86400", day, day, true},
		{"86401", day, day, true},
		{"99999999999999999999999", day, day, true},
		{"Thu, 03 Dec 2026 10:00:30 GMT", day, 30 * time.Second, true},
		{"Thursday, 03-Dec-26 10:01:00 GMT", day, time.Minute, true},
		{"Thu Dec  3 10:00:05 2026", day, 5 * time.Second, true},
		{"Wed, 02 Dec 2026 10:00:00 GMT", day, 0, true},
		{"Fri, 01 Jan 2100 00:00:00 GMT", day, day, true},
		{"", day, 0, false},
		{"-5", day, 0, false},
		{"1.5", day, 0, false},
		{"7s", day, 0, false},
		{"+7", day, 0, false},
		{"soon", day, 0, false},
		{"99999999999999999999999999999999999999999999999999999999999999999", day, 0, false},
		// Uncapped (the backfill caps the wait itself): a delay too large
		// for a time.Duration is the longest one, never a wrapped,
		// negative one that would retry at once.
		{"30", maxDuration, 30 * time.Second, true},
		{"100000000000", maxDuration, maxDuration, true},
		{"9999999999", maxDuration, maxDuration, true},
		{"9223372036", maxDuration, 9223372036 * time.Second, true},
		{"9223372036854775807", maxDuration, maxDuration, true},
		{"99999999999999999999999999", maxDuration, maxDuration, true},
	} {
		got, ok := RetryAfter(tc.in, now, tc.most)
		if got != tc.want || ok != tc.ok {
			t.Errorf("RetryAfter(%q, %v) = %v, %v, want %v, %v", tc.in, tc.most, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"7", "Thu, 03 Dec 2026 10:00:30 GMT", "Thursday, 03-Dec-26 10:01:00 GMT", "Thu Dec  3 10:00:05 2026", "-1", "99999999999999999999", ""} {
		f.Add(s, int64(1796292000), int64(24*time.Hour))
	}
	f.Fuzz(func(t *testing.T, v string, unix, most int64) {
		most = max(most, 0)
		d, ok := RetryAfter(v, time.Unix(unix, 0), time.Duration(most))
		if d < 0 || d > time.Duration(most) || (!ok && d != 0) {
			t.Fatalf("RetryAfter(%q, %v) = %v, %v", v, most, d, ok)
		}
	})
}
