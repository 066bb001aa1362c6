package logging_test

import (
	"bytes"
	"testing"

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
