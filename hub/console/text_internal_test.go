package console

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzSnippet: what an endpoint answered (any bytes) becomes printable
// UTF-8 text, at most n bytes and the cut mark; html/template escapes it.
func FuzzSnippet(f *testing.F) {
	for _, s := range []string{"", "ok", "<script>x</script>", "\x00\x1b[2J\xff\xfe", strings.Repeat("é", 700), `\x41`} {
		f.Add(s, uint16(1024))
	}
	f.Fuzz(func(t *testing.T, s string, n uint16) {
		got := snippet(s, int(n))
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		if len(got) > int(n)+len("…") {
			t.Fatalf("%d bytes, cap %d", len(got), n)
		}
		for _, r := range got {
			if r != '\n' && r != '\t' && r != '\r' && !unicode.IsPrint(r) && !unicode.IsSpace(r) {
				t.Fatalf("unprintable %U in %q", r, got)
			}
		}
	})
}
