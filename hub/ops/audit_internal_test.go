package ops

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hookhub/hookhub/hub"
)

// Whatever an operator types, the audit trail's parameters are a JSON
// object Postgres JSONB takes (no NUL escape), within hub.MaxAuditJSON,
// and each text is valid UTF-8 cut at its bound.
func FuzzAuditParams(f *testing.F) {
	f.Add("credits", "paddle.>", 10)
	f.Add("\x00\xff", strings.Repeat("é", 300), 300)
	f.Add(strings.Repeat("x", 9000), "\u2028<script>", 1)
	f.Fuzz(func(t *testing.T, a, b string, n int) {
		n = max(0, min(n, 1000))
		for _, s := range []string{a, b} {
			c := clip(s, n)
			if !utf8.ValidString(c) || len(c) > n+len("…") {
				t.Fatalf("clip(%q, %d) = %q", s, n, c)
			}
		}
		raw := auditJSON(map[string]any{"subscriber": clip(a, maxAuditParam), "subject": clip(b, maxAuditParam), "raw": a + b, "n": n})
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("not a JSON object: %s", raw)
		}
		if len(raw) > hub.MaxAuditJSON || strings.Contains(string(raw), `\u0000`) {
			t.Fatalf("params %d bytes, or a NUL: %s", len(raw), raw)
		}
	})
}
