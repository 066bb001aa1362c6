package redact

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestTerminalText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text\n\tindented", "plain text\n\tindented"},
		{"\x1b]0;pwned\x07\x1b[2J", `\x1b]0;pwned\x07\x1b[2J`},             // OSC title, clear screen
		{"ok\rfake", `ok\x0dfake`},                                         // CR overwrites the line
		{"abc\b\b\bxyz", `abc\x08\x08\x08xyz`},                             // backspace
		{"a\x00b\x7f", `a\x00b\x7f`},                                       // NUL, DEL
		{"\u009b2J\u0085", `\u009b2J\u0085`},                               // C1: CSI, NEL
		{"evil\u202efdp.exe\u2066\u200f", `evil\u202efdp.exe\u2066\u200f`}, // bidi overrides
		{"a\u2028b", `a\u2028b`},
		{"bad \xff\xfe utf8 \xe2\x82", `bad \xff\xfe utf8 \xe2\x82`},
		{"€ é 日本 🙂", "€ é 日本 🙂"},
	} {
		got := TerminalText(tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
	}
}

// A rune split across writes is escaped (or kept) whole; Flush ends an
// incomplete one.
func TestTerminalWriterSplitRunes(t *testing.T) {
	var out bytes.Buffer
	w := Terminal(&out)
	for _, p := range [][]byte{[]byte("x\xe2\x80"), []byte("\xaey"), []byte("€"[:1]), []byte("€"[1:]), []byte("\xe2\x82")} {
		n, err := w.Write(p)
		require.NoError(t, err)
		require.Equal(t, len(p), n)
	}
	require.NoError(t, w.Flush())
	require.Equal(t, `x\u202ey€\xe2\x82`, out.String())
}

// JSON written through Terminal is still valid and decodes to the same
// value; nothing unsafe is left raw.
func TestTerminalKeepsJSON(t *testing.T) {
	v := map[string]string{"sig": "t=1,v1=\x1b]0;x\x07\u009b\u202e\u2028end", "bad": "\xff"}
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out bytes.Buffer
	_, err = Terminal(&out).Write(b)
	require.NoError(t, err)
	var back map[string]string
	require.NoError(t, json.Unmarshal(out.Bytes(), &back))
	want := map[string]string{"sig": v["sig"], "bad": "\uFFFD"}
	require.Equal(t, want, back)
	requireSafe(t, out.String())
}

func requireSafe(t *testing.T, s string) {
	t.Helper()
	require.True(t, utf8.ValidString(s), "%q", s)
	for _, r := range s {
		if r != '\n' && r != '\t' {
			require.False(t, Unsafe(r), "%U in %q", r, s)
		}
	}
}

// FuzzTerminal: whatever is written, in whatever pieces, the output is
// valid UTF-8 without an unsafe character, and the same as one write.
func FuzzTerminal(f *testing.F) {
	for _, s := range []string{"", "ok\n", "a\x1b[2Jb", "\r\n\x00\xff", "\u202e\u2028x", "\u009b", "€"} {
		f.Add(s, uint8(1))
	}
	f.Fuzz(func(t *testing.T, s string, cut uint8) {
		var whole, parts bytes.Buffer
		_, _ = Terminal(&whole).Write([]byte(s))
		w := Terminal(&parts)
		i := min(int(cut), len(s))
		_, _ = w.Write([]byte(s[:i]))
		_, _ = w.Write([]byte(s[i:]))
		require.NoError(t, w.Flush())
		requireSafe(t, parts.String())
		require.Equal(t, TerminalText(s), parts.String())
		if utf8.ValidString(s) {
			require.Equal(t, TerminalText(s), whole.String())
		}
	})
}

// TerminalText returns s escaped as Terminal writes it.
func TerminalText(s string) string {
	out, _ := AppendTerminal(nil, []byte(s), true)
	return string(out)
}
