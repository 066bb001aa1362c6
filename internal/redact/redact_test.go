package redact

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

const key = "sk_test_51Secret0000Key"

func TestText(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"the key anywhere", "Invalid key " + key + " given", "Invalid key [redacted] given"},
		{"the key escaped", "key=sk%2Bx%2Fy", "key=[redacted]"},
		{"bearer", `{"headers":{"Authorization":"Bearer abc.def-123"}}`, `{"headers":{"Authorization":"Bearer [redacted]"}}`},
		{"go header map", "map[Authorization:[Bearer xyz] User-Agent:[x]]", "map[Authorization:[Bearer [redacted]] User-Agent:[x]]"},
		{"basic", "authorization: Basic dXNlcjpwYXNz", "authorization: Basic [redacted]"},
		{"github token scheme", "Authorization: token ghp_0123456789abcdef", "Authorization: token [redacted]"},
		{"token as a word", "the token expired", "the token expired"},
		{"api key field", `{"api_key": "live_123"}`, `{"api_key": "[redacted]"}`},
		{"header field", "X-Api-Key: live_123\n", "X-Api-Key: [redacted]\n"},
		{"query field", "GET /x?access_token=abc&b=1", "GET /x?access_token=[redacted]&b=1"},
		{"url password", "postgres://u:pw@db/x and https://a:b@h", "postgres://u:***@db/x and https://a:***@h"},
		{"nothing", "No such event: 'evt_1'", "No such event: 'evt_1'"},
		{"the key json-escaped", `{"error":"bad key \u0073k_test_51Secret0000K\u0065y"}`, `{"error":"bad key [redacted]"}`},
		{"bearer json-escaped", `{"auth":"Bearer \u0073k_other"}`, `{"auth":"Bearer [redacted]"}`},
		{"escapes kept otherwise", `{"a":"\u003cb\u003e"}`, `{"a":"\u003cb\u003e"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			secrets := []string{key}
			if c.name == "the key escaped" {
				secrets = []string{"sk+x/y"}
			}
			require.Equal(t, c.want, Text(c.in, secrets...))
		})
	}
}

func TestAnswer(t *testing.T) {
	body := []byte("err\x00or\r\nX-Evil: 1\x1b[31m \xff\xfe " + strings.Repeat("é", 10) + " Bearer " + key)
	got := Answer(body, 40, key)
	require.True(t, utf8.ValidString(got))
	require.NotContains(t, got, "\x00")
	require.False(t, strings.ContainsFunc(got, unicode.IsControl), "%q", got)
	require.LessOrEqual(t, len(got), 40+len("…"))
	require.True(t, strings.HasSuffix(got, "…"))
	// A secret cut by the bound is hidden before the cut: no prefix of it
	// shows.
	long := Answer([]byte(strings.Repeat("a", 30)+key), 40, key)
	require.NotContains(t, long, key[:8])
}

func FuzzAnswer(f *testing.F) {
	f.Add([]byte("Bearer "+key), key)
	f.Add([]byte("\x00\xff Authorization: token abcdefghij"), "abc")
	f.Fuzz(func(t *testing.T, b []byte, secret string) {
		got := Answer(b, 300, secret)
		if !utf8.ValidString(got) || strings.ContainsFunc(got, unicode.IsControl) {
			t.Fatalf("not printable: %q", got)
		}
		if len(got) > 300+len("…") {
			t.Fatalf("%d bytes", len(got))
		}
		if len(secret) >= 4 && !strings.ContainsFunc(secret, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError }) && strings.Contains(got, secret) && !strings.Contains(Mask, secret) {
			t.Fatalf("secret %q shown in %q", secret, got)
		}
	})
}

func TestHandler(t *testing.T) {
	var b strings.Builder
	log := slog.New(Handler(slog.NewTextHandler(&b, nil), key)).With("k", "with "+key)
	log.Info("msg "+key, "err", errors.New("Authorization: Bearer abcdef"), "id", key, "n", 3,
		slog.Group("g", "v", []byte(key)), "any", []string{key})
	out := b.String()
	require.NotContains(t, out, key)
	require.NotContains(t, out, "abcdef")
	require.Contains(t, out, "n=3")
	require.Equal(t, 6, strings.Count(out, Mask), out)
}

func TestHideAndWriter(t *testing.T) {
	base := fmt.Errorf("wrapped %w and %w", &fmtWrapError{}, context.Canceled)
	require.Nil(t, Hide(nil, ""))
	require.Same(t, base, Hide(base, base.Error()), "nothing to hide: the error itself")
	h := Hide(base, "hidden")
	require.Equal(t, "hidden", h.Error())
	require.ErrorIs(t, h, context.Canceled)
	var target *fmtWrapError
	require.True(t, errors.As(base, &target))
	require.False(t, errors.As(h, &target), "As must not reach the original's words")

	var b strings.Builder
	w := Writer(&b, "sk_live_secret")
	n, err := fmt.Fprintf(w, "id evt_sk_live_secret, Authorization: Bearer abcdefgh12345678\n")
	require.NoError(t, err)
	require.Equal(t, len("id evt_sk_live_secret, Authorization: Bearer abcdefgh12345678\n"), n)
	require.NotContains(t, b.String(), "sk_live_secret")
	require.NotContains(t, b.String(), "abcdefgh12345678")
}

// fmtWrapError stands for any concrete error type a caller might look for.
type fmtWrapError struct{}

func (*fmtWrapError) Error() string { return "x" }
