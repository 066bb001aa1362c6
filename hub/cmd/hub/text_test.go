package main

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 10, "-"},
		{"  a \n b\t", 10, "a b"},
		{"abcdefghij", 10, "abcdefghij"},
		{"abcdefghijk", 10, "abcdefghi…"},
		{"abcdefgh€x", 10, "abcdefgh…"}, // € (3 bytes) would be cut in two
	} {
		got := oneLine(tc.in, tc.n)
		require.Equal(t, tc.want, got, "%q", tc.in)
		require.True(t, utf8.ValidString(got), "%q", got)
	}
}

func TestCleanLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 10, "-"},
		{"ok\x1b[2J\x1b]0;pwned\x07", 30, "ok [2J ]0;pwned"},
		{"a\r\nb\x00c\xff", 10, "a b c\uFFFD"},
		{"\u202eevil", 10, "evil"},
	} {
		got := cleanLine(tc.in, tc.n)
		require.Equal(t, tc.want, got, "%q", tc.in)
		require.NotContains(t, got, "\x1b")
	}
}
