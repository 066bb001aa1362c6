package logging_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/logging"
)

func TestNew(t *testing.T) {
	t.Parallel()
	cases := []struct {
		level, format string
		want, absent  string
	}{
		{"info", "json", `"msg":"shown"`, "hidden"},
		{"INFO", "TEXT", "msg=shown", "hidden"},
		{"debug", "text", "msg=hidden", ""},
		{"bogus", "", `"msg":"shown"`, "hidden"}, // unknown level: info; unknown format: JSON
		{"error", "text", "", "shown"},
	}
	for _, c := range cases {
		var b bytes.Buffer
		l := logging.New(&b, c.level, c.format)
		l.Debug("hidden")
		l.Info("shown")
		if c.want != "" {
			require.Contains(t, b.String(), c.want, "%+v", c)
		}
		if c.absent != "" {
			require.NotContains(t, b.String(), c.absent, "%+v", c)
		}
	}
}

// A log line quoting outside text (a receiver's answer, a header) cannot
// drive the terminal, in either format; a JSON line still decodes to the
// same text.
func TestNewEscapesControls(t *testing.T) {
	t.Parallel()
	evil := "ok\x1b]0;pwned\x07\x1b[2J\r\u009b31m\u202eevil\xff"
	for _, format := range []string{"json", "text"} {
		var b bytes.Buffer
		logging.New(&b, "info", format).Info("delivery failed", "answer", evil, "err", errors.New(evil))
		out := b.String()
		for _, r := range strings.TrimSuffix(out, "\n") {
			require.False(t, unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r), "%s: %U in %q", format, r, out)
		}
		if format == "json" {
			var line map[string]any
			require.NoError(t, json.Unmarshal(b.Bytes(), &line))
			require.Equal(t, strings.ToValidUTF8(evil, "\uFFFD"), line["answer"])
		}
	}
}
