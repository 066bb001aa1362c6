package subscriber_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/subscribers/subscriber"
)

func TestSanitizeText(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 20)
	cases := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"clean", "plain text, déjà vu 😀", 0, "plain text, déjà vu 😀"},
		{"clean within the limit", "abc", 3, "abc"},
		{"empty", "", 5, ""},
		{"NUL in the middle", "a\x00b", 0, "a\uFFFDb"},
		{"NUL at the start", "\x00ab", 0, "\uFFFDab"},
		{"NULs", "\x00\x00", 0, "\uFFFD\uFFFD"},
		{"invalid bytes, one mark per run", "a\xff\xfeb\xc3", 0, "a\uFFFDb\uFFFD"},
		{"lone surrogate encoded", "a\xed\xa0\x80b", 0, "a\uFFFDb"},
		{"replacement char kept", "a\uFFFDb", 0, "a\uFFFDb"},
		{"cut with a mark", long, 16, strings.Repeat("a", 13) + "…"},
		{"cut before a 2-byte rune", strings.Repeat("a", 12) + "é" + long, 16, strings.Repeat("a", 12) + "…"},
		{"cut before a 3-byte rune", strings.Repeat("a", 11) + "€" + long, 16, strings.Repeat("a", 11) + "…"},
		{"cut before a 4-byte rune", strings.Repeat("a", 10) + "😀" + long, 16, strings.Repeat("a", 10) + "…"},
		{"cut without room for a mark", "héllo", 2, "h"},
		{"cut of a replacement", "\x00\x00\x00\x00\x00\x00", 16, "\uFFFD\uFFFD\uFFFD\uFFFD…"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := subscriber.SanitizeText(c.in, c.max)
			require.Equal(t, c.want, got)
			require.True(t, subscriber.Storable(got))
			require.Equal(t, got, subscriber.SanitizeText(got, c.max), "idempotent")
		})
	}
}

func TestCheckStorable(t *testing.T) {
	t.Parallel()
	require.NoError(t, subscriber.CheckStorable("data.id", "sub_01 déjà"))
	for _, v := range []string{"\x00", "sub_\xff", strings.Repeat("\x00", 1000)} {
		err := subscriber.CheckStorable("data.id", v)
		require.ErrorIs(t, err, subscriber.ErrUnstorable)
		require.True(t, subscriber.IsPermanent(err))
		require.Contains(t, err.Error(), "data.id")
		require.True(t, subscriber.Storable(err.Error()), "the error itself is storable: %q", err)
		require.Less(t, len(err.Error()), 400)
	}
}

// The sanitiser's contract, for any input: valid UTF-8 out, no NUL, within
// the limit, idempotent, and the input itself when it was storable and
// short enough; what it keeps is the input's own text up to the cut.
func FuzzSanitizeText(f *testing.F) {
	f.Add("plain", 0)
	f.Add("a\x00b\xffc", 8)
	f.Add(strings.Repeat("é", 5000), 8192)
	f.Add("😀😀😀", 5)
	f.Add("\xed\xa0\x80\x00", 1)
	f.Add(string(utf8.RuneError), 3)
	f.Fuzz(func(t *testing.T, s string, max int) {
		max %= 1 << 14
		got := subscriber.SanitizeText(s, max)
		if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 || !subscriber.Storable(got) {
			t.Fatalf("SanitizeText(%q, %d) = %q: not storable", s, max, got)
		}
		if max > 0 && len(got) > max {
			t.Fatalf("SanitizeText(%q, %d) = %q: %d bytes", s, max, got, len(got))
		}
		if again := subscriber.SanitizeText(got, max); again != got {
			t.Fatalf("not idempotent: %q then %q", got, again)
		}
		clean := subscriber.Storable(s) && (max <= 0 || len(s) <= max)
		if clean && got != s {
			t.Fatalf("SanitizeText(%q, %d) = %q: changed a clean string", s, max, got)
		}
		if (got == s) != clean {
			t.Fatalf("SanitizeText(%q, %d) returned its input, which is not storable", s, max)
		}
		// Without a cut, the output is the input with each NUL and each run
		// of invalid bytes replaced.
		if max <= 0 {
			want := strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
			if got != want {
				t.Fatalf("SanitizeText(%q) = %q, want %q", s, got, want)
			}
		} else {
			full := subscriber.SanitizeText(s, 0)
			kept := strings.TrimSuffix(got, "…")
			if !strings.HasPrefix(full, kept) {
				t.Fatalf("SanitizeText(%q, %d) = %q is not a prefix of %q", s, max, got, full)
			}
		}
	})
}
