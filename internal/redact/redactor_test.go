package redact

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

const (
	slackURL   = "https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/a1B2c3D4e5F6g7H8i9J0k1L2"
	discordURL = "https://discord.com/api/webhooks/123456789012345678/AbCdEfGh_IjKlMnOpQrStUvWxYz-0123456789abcdefghijklmnopqrstuvwxyzABCD"
)

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://x.example/in?token=s3cr3t&v=1", "https://x.example/in?token=REDACTED&v=REDACTED"},
		{"https://u:pw@x.example/in", "https://x.example/in"},
		{slackURL, "https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/REDACTED"},
		{discordURL, "https://discord.com/api/webhooks/123456789012345678/REDACTED"},
		{"https://x.example/hooks/billing/v2", "https://x.example/hooks/billing/v2"},
		{"https://x.example/a#frag", "https://x.example/a#REDACTED"},
		{"http://[::1", "(invalid URL)"},
	} {
		require.Equal(t, c.want, URL(c.in), c.in)
	}
}

func TestRedactorText(t *testing.T) {
	const header = "static-team-token-77"
	r := NewRedactor(append([]string{header, "ab"}, URLSecrets(slackURL+"?key=q5ecr3tvalue")...)...)
	for _, c := range []struct {
		name, in string
		hidden   []string
	}{
		{"echoed Authorization", `{"headers":{"authorization":"Token ` + header + `"}}`, []string{header}},
		{"static value anywhere", "X-Team: " + header, []string{header}},
		{"query token outside a URL", `{"args":{"key":"q5ecr3tvalue"}}`, []string{"q5ecr3tvalue"}},
		{"path token outside a URL", "POST /services/T0ABCDEFG/B0ABCDEFG/a1B2c3D4e5F6g7H8i9J0k1L2 404", []string{"a1B2c3D4e5F6g7H8i9J0k1L2"}},
		{"another URL's path token", "see " + discordURL + " now", []string{"AbCdEfGh_IjKlMnOpQrStUvWxYz"}},
		{"standard webhooks signature", "webhook-signature: v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1a,abcdefghijklmnopqrst", []string{"K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN", "abcdefghijklmnopqrst"}},
		{"hex signature", "X-Hub-Signature-256: sha256=0123456789abcdef0123456789abcdef", []string{"0123456789abcdef0123456789abcdef"}},
		{"bearer", "Authorization: Bearer eyJhbGciOi.x.y", []string{"eyJhbGciOi"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := r.Text(c.in)
			for _, h := range c.hidden {
				require.NotContains(t, got, h)
			}
		})
	}
	require.Equal(t, "ab cd", r.Text("ab cd"), "a value shorter than MinSecretLen is not hidden")
	require.Equal(t, "no secret here: evt_1 failed", (*Redactor)(nil).Text("no secret here: evt_1 failed"))
}

func TestRedactorAnswerCutsAfterRedacting(t *testing.T) {
	sec := "zz-static-credential-0042"
	got := NewRedactor(sec).Answer([]byte(strings.Repeat("a", 30)+sec), 40)
	require.NotContains(t, got, sec[:10])
}

func TestTokenLike(t *testing.T) {
	for s, want := range map[string]bool{
		"a1B2c3D4e5F6g7H8i9J0k1L2": true, "123456789012345678": false, "billing": false,
		"subscription-created": false, strings.Repeat("x", 32): true, "v2": false, "a1b2/c3d4e5f6g7h8i9": false,
		"payment-events-2024": false, "123e4567-e89b-12d3-a456-426614174000": true,
	} {
		require.Equal(t, want, TokenLike(s), s)
	}
}

// FuzzRedactor: a Redactor's output is printable and bounded, never shows
// a secret it was given, and URL never panics nor keeps a token-like
// segment.
func FuzzRedactor(f *testing.F) {
	f.Add([]byte("echo "+slackURL), "a1B2c3D4e5F6g7H8i9J0k1L2")
	f.Add([]byte(`{"auth":"Bearer x","sig":"v1,AAAAAAAAAAAAAAAAAAAAAA=="}`), "static-value")
	f.Add([]byte("https://h/p?%zz"), "")
	f.Fuzz(func(t *testing.T, b []byte, secret string) {
		got := NewRedactor(secret).Answer(b, 300)
		if !utf8.ValidString(got) || strings.ContainsFunc(got, unicode.IsControl) || len(got) > 300+len("…") {
			t.Fatalf("not printable or too long: %q", got)
		}
		if len(secret) >= MinSecretLen && !strings.ContainsFunc(secret, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError }) &&
			strings.Contains(got, secret) && !strings.Contains(Mask+URLMask+"***@", secret) {
			t.Fatalf("secret %q shown in %q", secret, got)
		}
		u := URL(string(b))
		for _, seg := range strings.Split(strings.SplitN(strings.SplitN(u, "?", 2)[0], "#", 2)[0], "/") {
			if TokenLike(seg) {
				t.Fatalf("URL(%q) = %q keeps %q", b, u, seg)
			}
		}
	})
}

// BenchmarkRedactorAnswer: the cost a destination's attempt pays to
// redact a 1 KiB echo of its request (12 configured values).
func BenchmarkRedactorAnswer(b *testing.B) {
	var secrets []string
	for i := range 10 {
		secrets = append(secrets, fmt.Sprintf("static-value-%02d-abcdefgh", i))
	}
	r := NewRedactor(append(secrets, URLSecrets(slackURL+"?token=q5ecr3tvalue")...)...)
	body := []byte(`{"headers":{"authorization":"Bearer static-value-03-abcdefgh","webhook-signature":"v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="},"url":"` + slackURL + `?token=q5ecr3tvalue","body":"` + strings.Repeat("x", 700) + `"}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		_ = r.Answer(body, 1021)
	}
}

// BenchmarkRedactorAnswerSmall: the usual answer, short and holding
// nothing to hide.
func BenchmarkRedactorAnswerSmall(b *testing.B) {
	var secrets []string
	for i := range 10 {
		secrets = append(secrets, fmt.Sprintf("static-value-%02d-abcdefgh", i))
	}
	r := NewRedactor(secrets...)
	body := []byte(`{"ok":true,"received":"paddle:evt_01hq3z"}`)
	for b.Loop() {
		_ = r.Answer(body, 1021)
	}
}
