package loopback

import "testing"

func TestHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"LocalHost", true},
		{"127.0.0.1", true},
		{"127.1.2.3", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true},
		{"", false},
		{"[::1]", false},
		{"localhost.example.com", false},
		{"10.0.0.1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"example.com", false},
	} {
		if got := Host(tc.host); got != tc.want {
			t.Errorf("Host(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}
