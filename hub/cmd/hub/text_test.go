package main

import (
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// oneLine squeezes text onto a column; cleanLine (clean) also turns
// control characters into spaces.
func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		clean bool
		in    string
		n     int
		want  string
	}{
		{false, "", 10, "-"},
		{false, "  a \n b\t", 10, "a b"},
		{false, "abcdefghij", 10, "abcdefghij"},
		{false, "abcdefghijk", 10, "abcdefghi…"},
		{false, "abcdefgh€x", 10, "abcdefgh…"}, // € (3 bytes) would be cut in two
		{true, "", 10, "-"},
		{true, "ok\x1b[2J\x1b]0;pwned\x07", 30, "ok [2J ]0;pwned"},
		{true, "a\r\nb\x00c\xff", 10, "a b c\uFFFD"},
		{true, "\u202eevil", 10, "evil"},
	} {
		line := oneLine
		if tc.clean {
			line = cleanLine
		}
		got := line(tc.in, tc.n)
		require.Equal(t, tc.want, got, "%q", tc.in)
		require.True(t, utf8.ValidString(got), "%q", got)
		require.NotContains(t, got, "\x1b")
	}
}

// FuzzCleanLine: text from an endpoint printed in a table is one line of
// at most n bytes without a control character.
func FuzzCleanLine(f *testing.F) {
	for _, s := range []string{"", "ok", "a\x1b[2Jb", "\r\n\x00\xff", "\u202e\u2028x"} {
		f.Add(s, uint8(60))
	}
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		if n < 2 {
			n = 2
		}
		got := cleanLine(s, int(n))
		require.True(t, utf8.ValidString(got), "%q", got)
		require.LessOrEqual(t, len(got), int(n)+len("…")-1, "%q", got)
		for _, r := range got {
			require.False(t, unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r), "%U in %q", r, got)
		}
	})
}
