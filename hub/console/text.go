package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/hookhub/hookhub/hub/internal/hubhttp"
)

// safeText shows bytes as text an operator can read and a browser cannot
// misread: printable UTF-8, newlines and tabs as they are; every other
// byte (NUL, control characters, invalid UTF-8) as \xNN, and a backslash
// before an "x" as \x5c so that no escape is ambiguous. html/template
// escapes the rest.
func safeText(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&sb, `\x%02x`, b[i])
		case r == '\n' || r == '\t' || r == '\r':
			sb.WriteRune(r)
		case r == '\\' && i+1 < len(b) && b[i+1] == 'x':
			sb.WriteString(`\x5c`)
		case !unicode.IsPrint(r) && !unicode.IsSpace(r):
			for _, c := range b[i : i+size] {
				fmt.Fprintf(&sb, `\x%02x`, c)
			}
		default:
			sb.Write(b[i : i+size])
		}
		i += size
	}
	return sb.String()
}

// snippet is s as safeText, cut to at most n bytes on a rune boundary
// (with "…" when it was cut): an endpoint's answer on the event page.
func snippet(s string, n int) string {
	t := safeText([]byte(s))
	if len(t) <= n {
		return t
	}
	i := n
	for i > 0 && !utf8.RuneStart(t[i]) {
		i--
	}
	return t[:i] + "…"
}

// prettyBody indents a JSON body; anything else is shown as safeText.
func prettyBody(b []byte) string {
	if json.Valid(b) {
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, "", "  "); err == nil {
			return safeText(buf.Bytes())
		}
	}
	return safeText(b)
}

// failure is the status and message of err for an error shown inside a
// page (ops errors carry the admin API's statuses).
func failure(cn *Console, c *fiber.Ctx, err error) (int, string) {
	code, msg := hubhttp.ErrorStatus(err)
	if code >= 500 {
		cn.log.Error("console request failed", "path", c.Path(), "err", err)
	}
	hubhttp.SetRetryAfter(c, code, err)
	return code, msg
}
